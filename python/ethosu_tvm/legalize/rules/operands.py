"""What every rule builds its primitives from: operands, requantizations, clamps and the NPU's 4-D shapes."""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
from tvm import relax

from ...qdq.match import Match
from ...qdq.values import Quant, prim_float
from ...quantization import npu_scale_shift, per_channel_scale_shift
from ..ops import BinaryElementwise, Clamp, NpuOp, Operand, Requantize, Tensor

INT8_RANGE = (-128, 127)
DTYPE_RANGES = {"int8": INT8_RANGE, "uint8": (0, 255), "int16": (-(1 << 15), (1 << 15) - 1)}
INT32_CLAMP = Clamp(-(1 << 31), (1 << 31) - 1)
Rule = Callable[[Match, dict, Tensor, str], NpuOp | tuple[NpuOp, ...]]


class LegalizeError(ValueError):
    """A composite the legalizer cannot turn into an NPU primitive (partitioning should have kept it on the host)."""


def npu_shape(shape: tuple[int, ...]) -> tuple[int, int, int, int]:
    """The 4-D NHWC shape the NPU uses for a tensor of rank ≤ 4 (leading 1s)."""
    if len(shape) > 4:
        raise LegalizeError(f"a {len(shape)}-D tensor cannot be an NPU feature map")
    return (1,) * (4 - len(shape)) + tuple(shape)


def operand_of(tensor: Tensor, quant: Quant) -> Operand:
    return Operand(tensor, quant.scalar_zero_point, quant.scalar_scale)


def raw_of(tensor: Tensor) -> Operand:
    """Pools and reshapes work on the raw int8 values: the frontend keeps no quantization around them."""
    return Operand(tensor, 0, 1.0)


def int_clamp(match: Match, dtype: str = "int8") -> Clamp:
    """Bounds of the integer clip the frontend writes for a fused activation, within the range of `dtype` (that
    range when there is none)."""
    low, high = DTYPE_RANGES[dtype]
    clip = match.get("clip")
    if clip is None:
        return Clamp(low, high)
    return Clamp(max(low, round(prim_float(clip.args[1]))), min(high, round(prim_float(clip.args[2]))))


def channel_requant(multipliers: np.ndarray, channels: int, rounding: str) -> Requantize:
    scale, shift = per_channel_scale_shift(np.broadcast_to(multipliers, (channels,)))
    return Requantize(scale, shift, rounding)


def requant_of(scale: int, shift: int, rounding: str = "TFL") -> Requantize:
    """One (scale, right shift) for every channel."""
    return Requantize(np.array([scale], dtype=np.int64), np.array([shift], dtype=np.int64), rounding)


def shifted(shift: int = 0, rounding: str = "TFL") -> Requantize:
    """A division by 2^shift (none by default) with `rounding`."""
    return requant_of(1, shift, rounding)


def single(real: float) -> Requantize:
    """One real multiplier as the NPU's (scale, right shift), for every channel."""
    return requant_of(*npu_scale_shift(real))


def times_multiplier(values: Operand, ofm: Operand, multiplier: int, shift: int, source: str) -> BinaryElementwise:
    """32-bit `values` times a 32-bit `multiplier` (a constant IFM2: the NPU applies only the right `shift` to a
    product of 32-bit operands), rounded as TFLite's MultiplyByQuantizedMultiplier (TFL), + the OFM zero point."""
    constant = Tensor(f"{ofm.tensor.name}_multiplier", (1, 1, 1, 1), "int32")
    return BinaryElementwise(
        operator="MUL", ifm=values, ifm2=Operand(constant, 0, 1.0), ofm=ofm, requant=shifted(shift),
        clamp=Clamp(*DTYPE_RANGES[ofm.tensor.dtype]), source=source,
        ifm2_constant=np.full((1, 1, 1, 1), multiplier, dtype=np.int32))


def tensor_of(expr, tensors: dict) -> Tensor:
    if isinstance(expr, relax.Var) and expr in tensors:
        return tensors[expr]
    raise LegalizeError(f"elementwise operand {type(expr).__name__} is not a feature map (partitioning rejects these)")
