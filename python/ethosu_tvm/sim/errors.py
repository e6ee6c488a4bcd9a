"""The one exception type the simulator raises for anything it cannot execute exactly."""
from __future__ import annotations


class SimulatorError(Exception):
    """A command stream the hardware model cannot execute: malformed, out of bounds or unsupported.

    Messages name the command index, the register and the value involved, so a failing stream can be fixed
    without a debugger.
    """
