"""The `tvmc` process (also `python -m ethosu_tvm`): the command with Python's collector paused around its imports
(:mod:`ethosu_tvm.collector`), and its exit."""
from __future__ import annotations

import os
import sys

from . import collector


def command() -> None:
    """`cli.main` with the collector paused until the command's imports are done, then an immediate exit with its
    status. Finalizing an interpreter that has TVM loaded takes 0.1-0.3 s, about as long as Vela's whole compile
    of a small model, and once `main` returns nothing is left to clean up: its files are written, the progress
    display has stopped, and the simulator's weight decoder process ends when its request pipe closes."""
    collector.pause()
    from .cli import main

    status = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
