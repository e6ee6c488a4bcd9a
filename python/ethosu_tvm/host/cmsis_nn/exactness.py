"""Which host specs CMSIS-NN's s8 and s16 kernels compute bit-exactly with TFLite's reference kernels, and why not
the rest.

Conv and depthwise conv requantize as TFLite does (per-channel multipliers and shifts from the project's
arithmetic, double rounding in both); CMSIS-NN documents shifts of -31..30 only. Its padding is the top and left
one, the rest following from the output size: a padding other than TFLite's SAME or VALID form (a fused PAD) stays
on our kernels, as the 1xN path assumes that form. LiteRT's int8 FULLY_CONNECTED rounds once where CMSIS-NN rounds
twice: an FC is taken only when both give the same clamped output for every accumulator its weights, bias and
input range reach (checked exhaustively over the accumulators that do not clamp). The s16 kernels (16x8 specs)
have conditions of their own (exactness_s16). ADD and MUL: `elementwise`.
"""
from __future__ import annotations

import math

import numpy as np

from ...quantization import (fully_connected_multipliers, multiply_by_quantized_multiplier,
                             multiply_by_quantized_multiplier_single_round, quantize_multiplier)
from ..ops.conv import check_shapes
from ..ops.weighted import bias, channel_multipliers
from ..spec import Binary, Conv2D, FullyConnected, Pool2D, UnsupportedHostOp, Weighted
from ..te_kernel import window_output_size
from . import elementwise, exactness_s16
from .calls import SUFFIXES

MAX_SHIFT = 30  # arm_nn_requantize's documented range of shifts is -31..30
MAX_CHECKED_ACCUMULATORS = 1 << 24  # an FC's rounding check beyond this many accumulators is refused (compile time)
_INT32 = 1 << 31


def same_or_valid(size: int, kernel: int, stride: int, dilation: int, output: int) -> tuple[int, int]:
    """TFLite's (before, after) padding of an axis for SAME (or VALID, where none is needed) and this output."""
    total = max((output - 1) * stride + (kernel - 1) * dilation + 1 - size, 0)
    return total // 2, total - total // 2


def _window_refusal(input_shape, output_shape, kernel, stride, dilation, padding) -> str:
    expected = tuple(same_or_valid(input_shape[1 + axis], kernel[axis], stride[axis], dilation[axis],
                                   output_shape[1 + axis]) for axis in (0, 1))
    top, left, bottom, right = padding
    if ((top, bottom), (left, right)) != expected:
        return f"padding {tuple(padding)} is not TFLite's SAME or VALID form"
    return ""


def _dtype_refusal(op) -> str:
    """'' for int8 to int8 (CMSIS-NN's s8 kernels) and int16 to int16 (its s16 kernels)."""
    if op.input.dtype == op.output.dtype and op.input.dtype in SUFFIXES:
        return ""
    return (f"{op.input.dtype} to {op.output.dtype} activations (CMSIS-NN's kernels used take int8 to int8 or int16 "
            f"to int16)")


def _s16_refusal(op) -> str:
    return exactness_s16.REFUSALS[type(op)](op) if op.input.dtype == "int16" else ""


def _multiplier_refusal(op: Weighted, channels: int, float32_product: bool = False) -> str:
    shifts = channel_multipliers(op, channels, float32_product)[1].value
    if shifts.max() > MAX_SHIFT:
        return f"a left shift of {shifts.max()} is beyond CMSIS-NN's {MAX_SHIFT}"
    return ""


def _conv_refusal(op: Conv2D) -> str:
    check_shapes(op)
    kernel = op.weights.shape[1:3]
    return (_dtype_refusal(op) or _multiplier_refusal(op, op.output.shape[3])
            or _window_refusal(op.input.shape, op.output.shape, kernel, op.stride, op.dilation, op.padding)
            or _s16_refusal(op))


def _accumulator_range(op: FullyConnected) -> tuple[int, int]:
    """The lowest and highest accumulator (bias included) any input can give."""
    low, high = (np.array(op.input.limits, dtype=np.int64) - op.input.zero_point)
    weights = op.weights.astype(np.int64)
    offsets = bias(op, weights.shape[0]).value.astype(np.int64)
    lows = offsets + np.minimum(low * weights, high * weights).sum(axis=1)
    highs = offsets + np.maximum(low * weights, high * weights).sum(axis=1)
    return int(lows.min()), int(highs.max())


def _fully_connected_refusal(op: FullyConnected) -> str:
    refusal = _dtype_refusal(op)
    if refusal:
        return refusal
    if len(op.weight_scales) != 1:
        return f"per-channel weights (arm_fully_connected_{SUFFIXES[op.input.dtype]} is per tensor)"
    units, depth = op.weights.shape
    if op.input.size % depth or op.output.size != op.input.size // depth * units:
        raise UnsupportedHostOp(f"fully_connected: weights {op.weights.shape} do not take input {op.input.shape} "
                                f"to output {op.output.shape}")
    refusal = _multiplier_refusal(op, units, float32_product=True)
    return refusal or (_s16_refusal(op) if op.input.dtype == "int16" else _rounding_refusal(op))


def _rounding_refusal(op: FullyConnected) -> str:
    """'' when single and double rounding give the same clamped output for every reachable accumulator. Both are
    monotonic and within one unit of acc · real, so beyond the window checked both clamp alike."""
    real = float(fully_connected_multipliers(op.input.scale, op.weight_scales, op.output.scale)[0])
    if real == 0.0:
        return ""
    low, high = op.clamp or op.output.limits
    first, last = _accumulator_range(op)
    shift = max(quantize_multiplier(real)[1], 0)
    if first * (1 << shift) < -_INT32 or last * (1 << shift) >= _INT32:
        return "its accumulators could overflow the requantization's left shift"
    first = max(first, math.floor((low - op.output.zero_point - 2) / real))
    last = min(last, math.ceil((high - op.output.zero_point + 2) / real))
    if last - first >= MAX_CHECKED_ACCUMULATORS:
        return f"its rounding cannot be checked over {last - first + 1} accumulators"
    accumulators = np.arange(first, last + 1, dtype=np.int64)
    single = multiply_by_quantized_multiplier_single_round(accumulators, real)
    double = multiply_by_quantized_multiplier(accumulators, real)
    differ = np.clip(single, low - op.output.zero_point, high - op.output.zero_point) != \
        np.clip(double, low - op.output.zero_point, high - op.output.zero_point)
    if differ.any():
        return (f"LiteRT rounds once and CMSIS-NN twice: they differ for accumulator "
                f"{int(accumulators[differ.argmax()])}")
    return ""


def _pool_refusal(op: Pool2D) -> str:
    if (op.output.scale, op.output.zero_point) != (op.input.scale, op.input.zero_point):
        return "the output's quantization differs from the input's"
    (batches, height, width, channels), (top, left, bottom, right) = op.input.shape, op.padding
    expected = (batches, window_output_size(height, op.pool[0], op.stride[0], 1, top, bottom),
                window_output_size(width, op.pool[1], op.stride[1], 1, left, right), channels)
    if op.output.shape != expected or op.kind not in ("avg", "max"):
        raise UnsupportedHostOp(f"{op.kind}_pool2d: output {op.output.shape} does not follow from input "
                                f"{op.input.shape} and the window")
    return _dtype_refusal(op) or _window_refusal(op.input.shape, op.output.shape, op.pool, op.stride, (1, 1),
                                                 op.padding) or _s16_refusal(op)


_REFUSALS = {Conv2D: _conv_refusal, FullyConnected: _fully_connected_refusal, Pool2D: _pool_refusal,
             Binary: elementwise.refusal}


def refusal(op) -> str:
    """'' when CMSIS-NN computes `op` exactly as TFLite does, else why not (a phrase for the offload report)."""
    check = _REFUSALS.get(type(op))
    if check is None:
        return "CMSIS-NN has no kernel used for this op"
    try:
        return check(op)
    except UnsupportedHostOp as err:
        return str(err)
