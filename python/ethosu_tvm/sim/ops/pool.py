"""NPU_OP_POOL: MAX, AVERAGE and REDUCE_SUM over the kernel window of zero-point-corrected IFM values.

REDUCE_SUM also sums over the IFM depth, into an OFM of depth 1.

Padding does not take part in MAX. AVERAGE divides the window sum by the number of non-padding taps (rounding half
away from zero) when the IFM is padded; unpadded it passes the sum on, and OFM_SCALE carries the 1/N. With global
scaling (OFM_PRECISION scale_mode = GLOBAL) the result is then scaled by OFM_SCALE. In per-channel mode MAX and
REDUCE_SUM apply no scale; AVERAGE there would read a scale record per OFM channel: a stream too short for them is
refused (as an independent interpreter refuses the streams of Vela's API for padded average pools), and one long
enough is not modelled.
"""
from __future__ import annotations

import numpy as np

from ...arch import Accelerator
from .. import output
from ..featuremap import read
from ..memory import Memory
from ..operation import BlockOperation
from ..regfile import RegisterFile
from ..scales import RECORD_BYTES
from .window import padded_input, taps

_PADDING = np.iinfo(np.int64).min


def _window_reduce(window: np.ndarray, op: BlockOperation, combine) -> np.ndarray:
    result = None
    for _, _, view in taps(window, op):
        result = view.copy() if result is None else combine(result, view)
    return result


def _divide_round_away(total: np.ndarray, count: np.ndarray) -> np.ndarray:
    magnitude = (2 * np.abs(total) + count) // (2 * count)
    return np.where(total < 0, -magnitude, magnitude)


def _check_average_scaling(op: BlockOperation, regs: RegisterFile) -> None:
    if op.output.global_scale:
        return
    needed = op.ofm.depth * RECORD_BYTES
    length = regs.raw("SCALE_LENGTH")
    if length < needed:
        raise regs.error("SCALE_LENGTH", f"per-channel AVERAGE pooling reads a scale stream: {length} < {needed} "
                                         f"bytes for {op.ofm.depth} channels")
    raise regs.error("OFM_PRECISION", "AVERAGE pooling with a per-channel scale stream is not modelled")


def _check(op: BlockOperation, regs: RegisterFile) -> None:
    if op.ifm.bits == 32 and op.mode != "REDUCE_SUM":
        raise regs.error("IFM_PRECISION", f"{op.mode} pooling needs an 8- or 16-bit IFM")
    if op.mode == "AVERAGE":
        _check_average_scaling(op, regs)


def _max(ifm: np.ndarray, op: BlockOperation, regs: RegisterFile) -> np.ndarray:
    """MAX over each window of the IFM's values, refused when a window lies entirely in the padding (which
    depends on the shapes alone)."""
    result = _window_reduce(padded_input(ifm, op, fill=_PADDING), op, np.maximum)
    if np.any(result == _PADDING):
        raise regs.error("IFM_PAD_TOP", "a MAX pooling window lies entirely in the padding")
    return result


def check(op: BlockOperation, regs: RegisterFile, memory: Memory, accelerator: Accelerator) -> None:
    """`execute`'s checks in its order without its arithmetic (the MAX windows on one channel of zeros)."""
    _check(op, regs)
    read(memory, op.ifm)
    if op.mode == "MAX":
        _max(np.zeros(op.ifm.shape[:2] + (1,), np.int64), op, regs)
    output.check(op.output, regs)


def execute(op: BlockOperation, regs: RegisterFile, memory: Memory, accelerator: Accelerator) -> np.ndarray:
    _check(op, regs)
    ifm = read(memory, op.ifm).astype(np.int64) - op.ifm.zero_point
    stage = op.output
    if op.mode == "MAX":
        result = _max(ifm, op, regs)
    else:
        result = _window_reduce(padded_input(ifm, op), op, np.add)
        if op.mode == "REDUCE_SUM":
            result = result.sum(axis=2, keepdims=True)
        if op.mode == "AVERAGE" and op.padding.any:
            valid = padded_input(np.ones(ifm.shape[:2] + (1,), np.int64), op)
            result = _divide_round_away(result, _window_reduce(valid, op, np.add))
    scale = (stage.scale, stage.shift) if stage.global_scale else None
    return output.finish(result, stage, scale, regs, memory, accelerator)
