"""A bit-exact functional simulator of the Arm Ethos-U55 NPU, with a disassembler and cycle statistics.

`Simulator(accelerator).run(command_stream, regions)` executes a register stream (raw or in a COP1 driver payload)
against numbered memory regions; `run_vela_tflite` executes a Vela-compiled `.tflite` like TFLite Micro would.
"""
from .errors import SimulatorError
from .simulator import Simulator
from .stats import OpStats, SimStats
from .vela_tflite import run_vela_tflite

__all__ = ["OpStats", "SimStats", "Simulator", "SimulatorError", "run_vela_tflite"]
