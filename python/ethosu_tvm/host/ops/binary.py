"""Elementwise ADD, SUB, MUL, MINIMUM, MAXIMUM (int8, int16) with NumPy broadcasting: TFLite's reference
arithmetic. Either operand may be a model constant (a kernel constant array, as conv weights are).

ADD/SUB: both inputs are offset, shifted left by 20 bits (int16: 15) and scaled to a common scale 2·max(s1, s2),
added or subtracted, then rescaled to the output (TFLite's Add/Sub preparation, every multiplier double-rounding).
MUL: (x1 − zp1)·(x2 − zp2) requantized by s1·s2/s_out (in float32). MINIMUM/MAXIMUM compare raw values (shared
quantization).
SQUARED_DIFFERENCE (int8): ADD's operand rescaling with a 7-bit shift, the difference squared, rescaled.
DIV: the dividend normalised by its leading sign bits times the divisor's reciprocal (GetReciprocal), requantized by
s1/(s2·s_out) (in float32) with the summed shifts.
"""
from __future__ import annotations

import numpy as np
from tvm import te, tirx

from ...quantization import (
    ELEMENTWISE_INPUT_SHIFT,
    SQUARED_DIFFERENCE_LEFT_SHIFT,
    add_multipliers,
    add_output_refusal,
    mul_multiplier,
    narrowing_mul,
    quantize_multiplier,
    rescaled_operands,
    squared_difference_multipliers,
)
from ..fixed_point import (
    const,
    count_leading_sign_bits,
    multiply_by_quantized_multiplier,
    narrow,
    rounding_divide_by_pot,
    saturating_rounding_doubling_high_mul,
    select,
    wide,
)
from ..transcendental import reciprocal_bits_over_unit, reciprocal_mantissa
from ..spec import Binary, QuantTensor, UnsupportedHostOp, op_name
from ..te_kernel import (
    Constant,
    TeKernel,
    activation,
    constant,
    require,
    require_dtype,
    saturate,
    tflite_multiplier,
)



def broadcast_reader(tensor, shape: tuple[int, ...], out_rank: int):
    """Index `tensor` (of `shape`) with output indices: right-aligned, size-1 dimensions pinned to 0."""
    offset = out_rank - len(shape)
    return lambda *index: tensor[tuple(0 if d == 1 else index[offset + k] for k, d in enumerate(shape))]


def operand(tensor: QuantTensor, values, name: str):
    """A kernel input, or for a model constant the kernel constant of its values; a scalar (shape ()) is viewed as
    shape (1,), which broadcasts the same (TE indexes no rank-0 tensor)."""
    shape = tensor.shape or (1,)
    if values is None:
        return activation(tensor, name, shape), shape
    require(values.shape == tensor.shape and str(values.dtype) == tensor.dtype, name,
            f"constant of {values.dtype} {values.shape} for a {tensor.dtype} {tensor.shape} operand")
    return constant(values.reshape(shape), name), shape


def _requantized(value, multiplier_shift: tuple[int, int]):
    return multiply_by_quantized_multiplier(value, *multiplier_shift)


def _common_scale(op: Binary, a, b, left_shift: int):
    """TFLite's operand rescaling for ADD, SUB and SQUARED_DIFFERENCE: each operand offset, shifted left by
    `left_shift` bits and scaled to units of 2·max(s1, s2); returns the per-index pair."""
    _, lhs_real, rhs_real = rescaled_operands(op.lhs.scale, op.rhs.scale)
    lhs_scale, rhs_scale = quantize_multiplier(lhs_real), quantize_multiplier(rhs_real)

    def operands(*i):
        return (_requantized((a(*i).astype("int32") - op.lhs.zero_point) * (1 << left_shift), lhs_scale),
                _requantized((b(*i).astype("int32") - op.rhs.zero_point) * (1 << left_shift), rhs_scale))

    return operands


def _add_or_sub(op: Binary, a, b):
    """TFLite's quantized ADD/SUB: both operands rescaled to 2·max(s1, s2) / 2^20 units (int16: 2^15), summed,
    rescaled by the multipliers the NPU's legalization uses too (`add_multipliers`)."""
    left_shift = ELEMENTWISE_INPUT_SHIFT[op.output.dtype]
    operands = _common_scale(op, a, b, left_shift)
    real = add_multipliers(op.lhs.scale, op.rhs.scale, op.output.scale, left_shift)[2]
    refusal = add_output_refusal(real)
    require(not refusal, op_name(op), refusal)
    out_scale = tflite_multiplier(op_name(op), real)
    sign = 1 if op.kind == "add" else -1

    def compute(*i):
        lhs, rhs = operands(*i)
        return saturate(_requantized(lhs + sign * rhs, out_scale), op.output, op.clamp)

    return compute


def _mul(op: Binary, a, b):
    """(x1 − zp1)·(x2 − zp2) requantized by LiteRT's float32 multiplier (an int16 · int16 → int8 one by TFLite
    Micro's LSTM's, in double)."""
    real = mul_multiplier(op.lhs.scale, op.rhs.scale, op.output.scale, narrowing_mul(op.lhs.dtype, op.output.dtype))
    scale = tflite_multiplier(op_name(op), real)
    return lambda *i: saturate(_requantized(
        (a(*i).astype("int32") - op.lhs.zero_point) * (b(*i).astype("int32") - op.rhs.zero_point), scale),
        op.output, op.clamp)


def _squared_difference(op: Binary, a, b):
    """TFLite's quantized SQUARED_DIFFERENCE: ADD's operand rescaling with a 7-bit left shift, the difference
    squared (at most 255²·2^14, inside 32 bits), rescaled by (2·max(s1, s2))² / (2^14 · s_out)."""
    operands = _common_scale(op, a, b, SQUARED_DIFFERENCE_LEFT_SHIFT)
    real = squared_difference_multipliers(op.lhs.scale, op.rhs.scale, op.output.scale)[2]
    out_scale = tflite_multiplier(op_name(op), real)

    def compute(*i):
        lhs, rhs = operands(*i)
        return saturate(_requantized((lhs - rhs) * (lhs - rhs), out_scale), op.output, op.clamp)

    return compute


# DIV: the fewest leading sign bits of a dividend (x − zp) and the most bits of a divisor's reciprocal shift
_DIV_MIN_HEADROOM = {"int8": 23, "int16": 15}
_DIV_MAX_RECIPROCAL_BITS = {"int8": 8, "int16": 16}


def _div(op: Binary, a, b):
    """TFLite's quantized DIV (LiteRT's reference_ops::Div): signs moved onto the dividend, the divisor's
    reciprocal as a Q0.31 mantissa and a shift, the dividend shifted left by its headroom and multiplied by it, then
    multiplied by the output multiplier and divided by 2^(headroom + reciprocal shift − output shift), rounding.

    That exponent reaches 32 to 63 for quotients that round to 0, where TFLite's rounding division shifts an int32
    by 32 bits or more (undefined in C). LiteRT's x86-64 build then computes (x >> (exponent − 32)) + (x ≥ 0),
    which this kernel reproduces (a large quotient of the sign of x, or 1 for x = 0, where 0 is the true result).
    Scale ratios that need a left shift or an exponent of 64 and more are refused; a divisor at its zero point has
    no quotient (LiteRT fails the invocation)."""
    f32 = np.float32
    multiplier, shift = quantize_multiplier(float(f32(op.lhs.scale) / (f32(op.rhs.scale) * f32(op.output.scale))))
    dtype = op.output.dtype
    require(_DIV_MAX_RECIPROCAL_BITS[dtype] - 32 <= shift <= _DIV_MIN_HEADROOM[dtype], "div",
            f"a scale ratio s1/(s2·s_out) of {op.lhs.scale / (op.rhs.scale * op.output.scale):g} (TFLite's kernel "
            "would shift left or by 64 bits or more)")

    def compute(*i):
        dividend = a(*i).astype("int32") - op.lhs.zero_point
        divisor = b(*i).astype("int32") - op.rhs.zero_point
        dividend, divisor = select(divisor < 0, -dividend, dividend), select(divisor < 0, -divisor, divisor)
        headroom = count_leading_sign_bits(dividend)
        unscaled = saturating_rounding_doubling_high_mul(narrow(wide(dividend) << wide(headroom)),
                                                         reciprocal_mantissa(divisor))
        exponent = headroom + reciprocal_bits_over_unit(divisor, 31) - shift
        scaled = saturating_rounding_doubling_high_mul(unscaled, multiplier)
        wrapped = (scaled >> tirx.max(exponent - 32, 0)) + select(scaled >= 0, const(1), const(0))
        quotient = select(exponent > 31, wrapped, rounding_divide_by_pot(scaled, tirx.min(exponent, 31)))
        return saturate(quotient, op.output, op.clamp)

    return compute


def _min_or_max(op: Binary, a, b):
    """Of one input with itself, the input (C compilers warn about comparing a value with itself)."""
    if op.one_input:
        return a
    pick = tirx.min if op.kind == "minimum" else tirx.max
    return lambda *i: pick(a(*i), b(*i))


_KINDS = {"add": _add_or_sub, "sub": _add_or_sub, "mul": _mul, "minimum": _min_or_max, "maximum": _min_or_max,
          "squared_difference": _squared_difference, "div": _div}
# TFLite's SQUARED_DIFFERENCE has no int16 kernel
_DTYPES = {"squared_difference": ("int8",)}


def define(op: Binary) -> TeKernel:
    if op.kind not in _KINDS:
        raise UnsupportedHostOp(f"{op.kind}: no host kernel for this elementwise op")
    require_dtype(op.kind, op.output, _DTYPES.get(op.kind, ("int8", "int16")))
    operands = ("int16",) if op.kind == "mul" and narrowing_mul(op.lhs.dtype, op.output.dtype) else \
        (op.output.dtype,)
    require_dtype(op.kind, op.lhs, operands)
    require_dtype(op.kind, op.rhs, operands)
    try:
        broadcast = np.broadcast_shapes(op.lhs.shape, op.rhs.shape)
    except ValueError:
        broadcast = None
    require(broadcast == op.output.shape, op.kind, f"{op.lhs.shape} and {op.rhs.shape} do not broadcast to "
            f"{op.output.shape}")
    require(op.lhs_values is None or op.rhs_values is None, op.kind, "both operands are constants")
    rank = len(op.output.shape)
    require(not op.one_input or (op.lhs == op.rhs and op.lhs_values is None and op.rhs_values is None), op.kind,
            "one input for two operands of different tensors")
    (lhs, lhs_shape), (rhs, rhs_shape) = operand(op.lhs, op.lhs_values, "lhs"), operand(op.rhs, op.rhs_values, "rhs")
    if op.one_input:
        rhs = lhs
    y = te.compute(op.output.shape, _KINDS[op.kind](op, broadcast_reader(lhs, lhs_shape, rank),
                                                    broadcast_reader(rhs, rhs_shape, rank)), name="output")
    inputs = (lhs,) if op.one_input else (lhs, rhs)
    return TeKernel(inputs=tuple(t for t in inputs if not isinstance(t, Constant)), output=y,
                    constants=tuple(t for t in (lhs, rhs) if isinstance(t, Constant)))
