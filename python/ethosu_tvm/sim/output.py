"""The output unit: scale the accumulators, add the OFM zero point, clip, apply the activation, narrow to the OFM type.

Order: value * scale >> shift (OFM rounding mode), then
* no activation: + OFM_ZERO_POINT, clamp to ACTIVATION_MIN/MAX and to the clip type (ACTIVATION.clip_range, else
  the OFM type);
* LUT: the same clamp gives the table index, the table entry is the result;
* TANH/SIGMOID (16-bit OFM only): the function of the scaled value, + OFM_ZERO_POINT, then the clamp.
A 32-bit OFM with clip range OFM_PRECISION skips the zero point and the clamp and allows no activation.
"""
from __future__ import annotations

import numpy as np

from ..arch import Accelerator
from . import activation
from .errors import SimulatorError
from .memory import Memory
from .operation import OutputStage
from .quant import apply_scale
from .regfile import RegisterFile


def _fits(values: np.ndarray, dtype: np.dtype) -> bool:
    info = np.iinfo(dtype)
    return values.size == 0 or (int(values.min()) >= info.min and int(values.max()) <= info.max)


def _first_outside(values: np.ndarray, dtype: np.dtype) -> str:
    info = np.iinfo(dtype)
    where = np.argwhere((values < info.min) | (values > info.max))[0]
    return f"value {int(values[tuple(where)])} at (y, x, c) = {tuple(int(i) for i in where)}"


def _clip_range(stage: OutputStage) -> tuple[int, int]:
    info = np.iinfo(stage.clip_type)
    return max(info.min, stage.act_min), min(info.max, stage.act_max)


def check(stage: OutputStage, regs: RegisterFile) -> None:
    """The output stage's rules that do not depend on the values (all `finish` checks but the overflows): what a
    check without arithmetic (`Simulator.check`) keeps of it."""
    function, ofm_dtype = stage.function, stage.ofm_dtype
    if not stage.clip_forced and ofm_dtype.itemsize == 4:
        if function:
            raise regs.error("ACTIVATION", "an activation on a 32-bit OFM needs an 8- or 16-bit clip range")
        return
    low, high = _clip_range(stage)
    if low > high:
        raise regs.error("ACTIVATION_MIN", f"the clip range [{low}, {high}] is empty")
    if function in (activation.TANH, activation.SIGMOID) and ofm_dtype != np.int16:
        raise regs.error("ACTIVATION", "built-in TANH/SIGMOID are modelled for signed 16-bit OFMs")
    if activation.is_lut(function):
        activation.check_table(stage, regs)


def check_reads(stage: OutputStage, regs: RegisterFile, memory: Memory, accelerator: Accelerator) -> None:
    """What `finish` reads besides the values, accessed as it does (`check` passed): the table of a lookup."""
    if activation.is_lut(stage.function):
        activation.table(stage, regs, memory, accelerator)


def finish(values: np.ndarray, stage: OutputStage, scale: tuple | None, regs: RegisterFile, memory: Memory,
           accelerator: Accelerator) -> np.ndarray:
    """OFM elements from int64 pre-scaling values; `scale` = (multiplier, shift), per channel or scalar, or None."""
    check(stage, regs)
    if scale is not None:
        values = apply_scale(values, scale[0], scale[1], stage.rounding)
    function, ofm_dtype = stage.function, stage.ofm_dtype
    if not stage.clip_forced and ofm_dtype.itemsize == 4:
        if not _fits(values, ofm_dtype):
            raise SimulatorError(f"{regs.where()}: the 32-bit OFM overflows: {_first_outside(values, ofm_dtype)}")
        return values.astype(ofm_dtype)
    low, high = _clip_range(stage)
    if function in (activation.TANH, activation.SIGMOID):
        apply = activation.tanh if function == activation.TANH else activation.sigmoid
        values = np.clip(apply(values) + stage.zero_point, low, high)
    else:
        values = np.clip(values + stage.zero_point, low, high)
        if activation.is_lut(function):
            values = activation.lookup(values, stage, regs, memory, accelerator)
    if not _fits(values, ofm_dtype):
        raise SimulatorError(f"{regs.where()}: the result does not fit the OFM type {ofm_dtype}: "
                             f"{_first_outside(values, ofm_dtype)}")
    return values.astype(ofm_dtype)
