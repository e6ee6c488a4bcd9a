"""A bit-exact functional simulator of the Arm Ethos-U55 and Ethos-U65 NPUs, with a disassembler and cycle
statistics.

`Simulator(accelerator).run(command_stream, regions)` executes a register stream (raw or in a COP1 driver payload)
against numbered memory regions; `run_vela_tflite` executes a Vela-compiled `.tflite` like TFLite Micro would.
`python -m ethosu_tvm.sim {disasm,stats,bench}` is the command line.

Validation status. Checked bit-exactly against LiteRT through Vela 5.2 streams (Regor and the legacy core, all four
U55 sizes; Regor for both U65 sizes, the U65-512's two cores with their own weight and scale streams, in Shared_Sram
and Dedicated_Sram with its fast scratch): CONV/DEPTHWISE (8/16-bit IFM, 32/40-bit accumulators, strides, dilation,
sub-kernels, part-kernel and depth-first weights, NEAREST and TRANSPOSE upscaling, tiles), POOL
MAX/AVERAGE/REDUCE_SUM in global scale mode and MAX/REDUCE_SUM in per-channel mode, with and without padding
(per-channel AVERAGE, which would read a scale stream, is refused), ELEMENTWISE ADD/SUB/MUL/MIN/MAX/ABS/CLZ/SHL/SHR
with broadcast, scalars, reversed operands and all three ADD/SUB scale modes, LUTs with 8-bit and 32-bit entries and
the interpolating 16-bit LUT, built-in 16-bit TANH/SIGMOID, rounding modes TFL and NATURAL, 1-D DMA into regions and
SHRAM. Modelled from the register definitions but never produced by Vela: the LRELU operation, TRUNCATE rounding,
2-D/3-D DMA (checked against hand-assembled streams only).
"""
from .errors import SimulatorError
from .simulator import Simulator
from .stats import OpStats, SimStats
from .vela_tflite import run_vela_tflite

__all__ = ["OpStats", "SimStats", "Simulator", "SimulatorError", "run_vela_tflite"]
