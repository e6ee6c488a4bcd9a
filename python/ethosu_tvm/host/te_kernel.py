"""A host kernel as TE tensors plus its schedule: the common shape every op definition returns."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
from tvm import s_tir, te

from ..quantization import quantize_multiplier, quantize_multipliers, undefined_left_shift
from . import fixed_point
from .spec import QuantTensor, UnsupportedHostOp


@dataclass(frozen=True, eq=False)
class Constant:
    """A compile-time array the kernel reads through a pointer parameter; index it like its tensor."""

    tensor: te.Tensor
    value: np.ndarray

    def __getitem__(self, indices):
        return self.tensor[indices]


def constant(value: np.ndarray, name: str) -> Constant:
    value = np.ascontiguousarray(value)
    return Constant(te.placeholder(value.shape, str(value.dtype), name=name), value)


@dataclass(frozen=True, eq=False)
class TeKernel:
    """What the C function receives and computes, in C parameter order: inputs, constants, output, scratch.

    `constants` are the compile-time arrays (weights, per-channel multipliers, tables);
    `scratch` tensors are intermediates kept whole in the caller's workspace; `schedule` shapes the loops so that
    every other intermediate shrinks to a few scalars.
    """

    inputs: tuple[te.Tensor, ...]
    output: te.Tensor
    constants: tuple[Constant, ...] = ()
    scratch: tuple[te.Tensor, ...] = ()
    schedule: Callable[[s_tir.Schedule], None] = field(default=lambda sch: None)


def activation(tensor: QuantTensor, name: str, shape: tuple[int, ...] | None = None) -> te.Tensor:
    """The placeholder of an activation, optionally viewed with another shape of the same size."""
    return te.placeholder(shape or tensor.shape, tensor.dtype, name=name)


def saturate(value, tensor: QuantTensor, clamp: tuple[int, int] | None = None):
    """An int32 result plus the tensor's zero point, clamped to `clamp` (default: the dtype's range), cast."""
    low, high = clamp or tensor.limits
    return fixed_point.clamp(value + tensor.zero_point, low, high).astype(tensor.dtype)


def require_dtype(op: str, tensor: QuantTensor, supported: tuple[str, ...]) -> None:
    if tensor.dtype not in supported:
        raise UnsupportedHostOp(f"{op}: {tensor.dtype} tensors are not supported (supported: {', '.join(supported)})")


def require(condition: bool, op: str, problem: str) -> None:
    """Reject an inconsistent op description (shapes that do not fit together) before building anything."""
    if not condition:
        raise UnsupportedHostOp(f"{op}: {problem}")


def tflite_multiplier(op: str, real: float, pair: tuple[int, int] | None = None) -> tuple[int, int]:
    """TFLite's (multiplier, shift) of `real` (or `pair`, derived from it otherwise, as MEAN's), refused where
    TFLite's own int32 arithmetic leaves the result undefined (`quantization.undefined_left_shift`)."""
    multiplier, shift = pair if pair is not None else quantize_multiplier(real)
    problem = undefined_left_shift(real, shift)
    require(not problem, op, problem)
    return multiplier, shift


def tflite_multipliers(op: str, reals) -> tuple[np.ndarray, np.ndarray]:
    """`tflite_multiplier` per channel: int32 multipliers and shifts."""
    reals = np.asarray(reals, dtype=np.float64).reshape(-1)
    multipliers, shifts = quantize_multipliers(reals)
    if shifts.size:
        widest = int(np.argmax(shifts))
        tflite_multiplier(op, float(reals[widest]), (int(multipliers[widest]), int(shifts[widest])))
    return multipliers, shifts


def window_output_size(size: int, kernel: int, stride: int, dilation: int, before: int, after: int) -> int:
    """Output extent of a sliding window (conv, pooling) over a padded axis."""
    return (size + before + after - (kernel - 1) * dilation - 1) // stride + 1


def attach(sch: s_tir.Schedule, producer: str, consumer: str, depth: int) -> None:
    """Compute `producer` inside the first `depth` loops of `consumer` (compute_at), so it shrinks to that tile."""
    sch.compute_at(sch.get_sblock(producer), sch.get_loops(sch.get_sblock(consumer))[depth - 1])


def split_reduction_init(sch: s_tir.Schedule, reduction: str, spatial_loops: int) -> None:
    """Initialise a reduction before its reduction loops (inside the first `spatial_loops` loops) rather than
    testing for the first iteration inside them. Reductions whose loops all have extent 1 need nothing."""
    loops = sch.get_loops(sch.get_sblock(reduction))
    if len(loops) > spatial_loops:
        sch.decompose_reduction(sch.get_sblock(reduction), loops[spatial_loops])
