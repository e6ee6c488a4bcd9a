"""Where our portable kernel beats CMSIS-NN's call on a CPU class, so the op stays ours ("best of both").

Measured by benchmarks/cmsis_nn_speed.py: instructions of one inference on QEMU `-icount` (CMSIS-NN 99f736a6 at
Arm's -Ofast, ours at -O2) for a representative form of each op (docs/benchmarks.md), int8 and 16x8 apart (its s8
and s16 kernels). Every other (op, extension) pair takes CMSIS-NN's call, which executed fewer instructions there.
"""
from __future__ import annotations

from ...target import DSP, MVE, SCALAR
from ..spec import HostOp, op_name

_M7, _M3 = "cortex-m7 (QEMU mps2-an500)", "cortex-m3 (QEMU mps2-an385)"
_CLASSES = {SCALAR: "scalar", DSP: "DSP", MVE: "MVE"}
# (op_name, extension) -> (ours, CMSIS-NN's) instructions, and the CPU they were measured on.
OURS_FASTER: dict[tuple[str, str], tuple[int, int, str]] = {
    ("avg_pool2d", DSP): (62_040, 84_800, _M7),
    ("max_pool2d", DSP): (59_920, 79_200, _M7),
    ("avg_pool2d", SCALAR): (62_040, 219_640, _M3),
    ("max_pool2d", SCALAR): (59_920, 79_200, _M3),
    ("add", DSP): (502_560, 661_880, _M7),
    ("mul", DSP): (221_480, 295_960, _M7),
    ("add", SCALAR): (502_560, 688_200, _M3),
    ("mul", SCALAR): (221_480, 245_800, _M3),
}
# The same for 16x8 specs (CMSIS-NN's s16 kernels).
OURS_FASTER_S16: dict[tuple[str, str], tuple[int, int, str]] = {
    ("avg_pool2d", DSP): (62_160, 84_280, _M7),
    ("max_pool2d", DSP): (59_920, 85_480, _M7),
    ("avg_pool2d", SCALAR): (62_160, 153_240, _M3),
    ("max_pool2d", SCALAR): (59_920, 85_600, _M3),
    ("depthwise_conv2d", SCALAR): (1_814_320, 2_550_880, _M3),
    ("fully_connected", SCALAR): (84_840, 85_360, _M3),
}


def ours_faster(op: HostOp, extension: str) -> str:
    """Why our kernel runs `op` on `extension` cores ('' when CMSIS-NN's call is faster there)."""
    table = OURS_FASTER_S16 if getattr(getattr(op, "input", None), "dtype", "") == "int16" else OURS_FASTER
    measured = table.get((op_name(op), extension))
    if measured is None:
        return ""
    ours, cmsis, where = measured
    return f"faster on {_CLASSES[extension]} cores: {ours} vs {cmsis} instructions measured on {where}"
