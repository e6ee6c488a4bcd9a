"""Real multipliers in TFLite's integer form, and the NPU's form of the same integers.

TFLite's ``QuantizeMultiplier`` turns a real multiplier into a Q31 mantissa and an exponent e (real ≈ q·2^(e−31));
the NPU takes the same mantissa with a right shift of 31 − e (6 bits, so 0..63). Where TFLite's Prepare computes
an effective multiplier in float32 or in double, the functions here do the same, so the integers agree bit for bit.
"""
from __future__ import annotations

import math

import numpy as np

MAX_NPU_SHIFT = 63


def round_half_away(value: float) -> int:
    """std::round: halves round away from zero."""
    magnitude = math.floor(abs(value) + 0.5)
    return int(magnitude if value >= 0 else -magnitude)


def quantize_multiplier(real: float) -> tuple[int, int]:
    """TFLite's QuantizeMultiplier: real ≈ multiplier · 2^(shift − 31), multiplier a Q31 mantissa in [2^30, 2^31).

    A positive shift is a left shift. Multipliers below 2^-31 flush to (0, 0), as TFLite does.
    """
    if real == 0.0:
        return 0, 0
    fraction, shift = math.frexp(real)
    multiplier = round_half_away(fraction * (1 << 31))
    if multiplier == 1 << 31:
        multiplier //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    return multiplier, shift


# TFLite's kernels apply a multiplier's positive shift as an int32 multiply by `1 << shift` first.
MAX_TFLITE_LEFT_SHIFT = 31


def undefined_left_shift(real: float, shift: int | None = None) -> str:
    """Why TFLite's integer kernels have no defined result for the real multiplier `real` (applied with `shift`,
    by default quantize_multiplier's), or "": C leaves an int32 shift of 32 bits or more undefined, so LiteRT's
    result then depends on its compiler and no kernel can be exact with it."""
    if shift is None:
        shift = quantize_multiplier(real)[1]
    if shift <= MAX_TFLITE_LEFT_SHIFT:
        return ""
    return (f"effective output scale {real:.3g} needs a left shift of {shift} bits, which TFLite's int32 arithmetic"
            " leaves undefined")


def add_output_refusal(real: float) -> str:
    """Why TFLite's ADD and SUB kernels refuse the output multiplier `real`, or "": they take it as a multiplier
    below 1 (QuantizeMultiplierSmallerThanOneExp), and LiteRT and TFLite Micro abort at 1 or more."""
    if quantize_multiplier(real)[1] <= 0:
        return ""
    return f"effective output scale {real:.3g}; TFLite's kernel needs one below 1 (it refuses the model)"


def table_multipliers(kind: str, in_scale: float, out_scale: float, alpha: float = 0.0) -> tuple[float, ...]:
    """The real multipliers TFLite's int8 RELU/CLIP ("relu", "clip"), ABS, QUANTIZE ("requantize") and LEAKY_RELU
    requantize with: the scale ratio (in double for QUANTIZE, in float32 for the others, as their Prepare computes
    it), and LEAKY_RELU's input·alpha/output ratio (float32) for negative inputs."""
    if kind == "requantize":
        return (float(np.float64(in_scale) / np.float64(out_scale)),)
    ratio = float(np.float32(in_scale) / np.float32(out_scale))
    if kind == "leaky_relu":
        return ratio, float(np.float32(in_scale) * np.float32(alpha) / np.float32(out_scale))
    return (ratio,)


def mean_multiplier(real: float, count: int) -> tuple[int, int]:
    """The (multiplier, shift) TFLite's quantized MEAN requantizes a centred sum of `count` values with: the
    multiplier of `real` shifted left by floor(log2 count) (at most 32, and no further than a total shift of −31),
    divided by count with truncation."""
    multiplier, shift = quantize_multiplier(real)
    fold = min(count.bit_length() - 1, 32, 31 + shift)
    return (multiplier << fold) // count, shift - fold


def quantize_multipliers(reals) -> tuple[np.ndarray, np.ndarray]:
    """quantize_multiplier over an array: int32 multipliers and shifts (per-channel constants). The same float64
    operations on whole arrays (a network has tens of thousands of channels), and its error on a non-finite one."""
    reals = np.asarray(reals, dtype=np.float64).reshape(-1)
    for real in reals[~np.isfinite(reals)][:1]:
        quantize_multiplier(float(real))
    fractions, shifts = np.frexp(reals)
    magnitudes = np.floor(np.abs(fractions * (1 << 31)) + 0.5)
    multipliers = np.where(fractions >= 0, magnitudes, -magnitudes).astype(np.int64)
    carried = multipliers == 1 << 31
    multipliers, shifts = np.where(carried, multipliers // 2, multipliers), shifts + carried
    flushed = (reals == 0) | (shifts < -31)
    return np.where(flushed, 0, multipliers).astype(np.int32), np.where(flushed, 0, shifts).astype(np.int32)


def npu_scale_shift(real: float) -> tuple[int, int]:
    """The NPU (scale, right shift) pair of a real multiplier (the shift may fall outside 0..63: check it)."""
    mantissa, exponent = quantize_multiplier(real)
    return mantissa, 31 - exponent


def per_channel_scale_shift(reals) -> tuple[np.ndarray, np.ndarray]:
    """:func:`npu_scale_shift` over per-channel multipliers (int64 arrays)."""
    mantissas, exponents = quantize_multipliers(reals)
    return mantissas.astype(np.int64), 31 - exponents.astype(np.int64)


def reduced_multipliers(mantissas):
    """Q31 multipliers rounded to 16 bits, saturating at 0x7FFF, as TFLite's 16x8 kernels (and CMSIS-NN's s16
    ones) reduce them."""
    return np.where(mantissas < 0x7FFF0000, (mantissas + (1 << 15)) >> 16, 0x7FFF)


def reduced_scale_shift(reals) -> tuple[np.ndarray, np.ndarray]:
    """:func:`per_channel_scale_shift` for TFLite's 16x8 conv and depthwise conv, which requantize their int64
    accumulators with the Q31 multiplier rounded to 16 bits (saturating at 0x7FFF) and a right shift of 15 − e,
    rounding once, half up."""
    mantissas, shifts = per_channel_scale_shift(reals)
    return reduced_multipliers(mantissas), shifts - 16


def shifts_in_range(shift) -> bool:
    """Whether every NPU right shift fits the hardware's 6-bit field."""
    return bool(np.all((np.asarray(shift) >= 0) & (np.asarray(shift) <= MAX_NPU_SHIFT)))


def conv_multipliers(ifm_scale: float, weight_scales, ofm_scale: float) -> np.ndarray:
    """Conv/depthwise effective scales: TFLite computes ifm·w/ofm in double per channel."""
    return np.float64(ifm_scale) * np.asarray(weight_scales, dtype=np.float64) / np.float64(ofm_scale)


def fully_connected_multipliers(ifm_scale: float, weight_scales, ofm_scale: float) -> np.ndarray:
    """FC effective scales: TFLite multiplies ifm·w in float32 first (per-tensor path), then divides in double."""
    weight_scales = np.asarray(weight_scales, dtype=np.float32)
    if weight_scales.size > 1:
        return conv_multipliers(ifm_scale, weight_scales, ofm_scale)
    product = np.float64(np.float32(ifm_scale) * weight_scales)
    return product / np.float64(ofm_scale)


SQUARED_DIFFERENCE_LEFT_SHIFT = 7  # int8


def rescaled_operands(lhs_scale: float, rhs_scale: float) -> tuple[float, float, float]:
    """ADD/SUB/SQUARED_DIFFERENCE operand rescaling: 2·max(s1, s2) and each operand's real multiplier to it (TFLite
    computes them in double)."""
    twice_max = 2.0 * max(float(lhs_scale), float(rhs_scale))
    return twice_max, float(lhs_scale) / twice_max, float(rhs_scale) / twice_max


# TFLite's ADD/SUB rescale both operands after shifting them left: by 20 bits for 8-bit inputs, 15 for 16-bit ones.
ELEMENTWISE_INPUT_SHIFT = {"int8": 8 + 12, "int16": 15}


def add_multipliers(lhs_scale: float, rhs_scale: float, out_scale: float, input_shift: int) -> tuple[float, float,
                                                                                                     float]:
    """ADD/SUB's real multipliers: each operand's (after its `input_shift`-bit left shift), then the sum's,
    2·max(s1, s2) / (2^input_shift · s_out)."""
    twice_max, lhs, rhs = rescaled_operands(lhs_scale, rhs_scale)
    return lhs, rhs, twice_max / (2.0**input_shift * float(out_scale))


def squared_difference_multipliers(lhs_scale: float, rhs_scale: float, out_scale: float) -> tuple[float, float, float]:
    """SQUARED_DIFFERENCE's real multipliers: each operand's (after its 7-bit left shift), then the squared
    difference's, (2·max(s1, s2))² / (2^14 · s_out)."""
    twice_max, lhs, rhs = rescaled_operands(lhs_scale, rhs_scale)
    return lhs, rhs, twice_max * twice_max / ((1 << 2 * SQUARED_DIFFERENCE_LEFT_SHIFT) * float(out_scale))


def mul_multiplier(lhs_scale: float, rhs_scale: float, out_scale: float, in_double: bool = False) -> float:
    """MUL's real multiplier s1·s2/s_out: LiteRT computes it in float32, the scales' type (double arithmetic is off
    by 1 LSB on rare products close to a rounding tie); TFLite Micro's integer LSTM in double (`in_double`)."""
    if in_double:
        return float(np.float64(np.float32(lhs_scale)) * np.float32(rhs_scale) / np.float32(out_scale))
    return float(np.float32(lhs_scale) * np.float32(rhs_scale) / np.float32(out_scale))


def widening_fully_connected(input_dtype: str, output_dtype: str) -> bool:
    """An int8 → int16 FULLY_CONNECTED: one of TFLite's integer LSTM's gates (TFLite Micro refuses it alone), so it
    takes that kernel's arithmetic: TFLite Micro's, requantized with the double-rounding multiply."""
    return input_dtype == "int8" and output_dtype == "int16"


def narrowing_mul(lhs_dtype: str, output_dtype: str) -> bool:
    """An int16 · int16 → int8 MUL: TFLite has one only inside its integer LSTM (the output state's update), so it
    takes that kernel's arithmetic: TFLite Micro's, the multiplier in double."""
    return lhs_dtype == "int16" and output_dtype == "int8"


def prelu_multipliers(in_scale: float, alpha_scale: float, out_scale: float) -> tuple[float, float]:
    """PRELU's real multipliers, for x ≥ 0 (input/output) and below (input·alpha/output): TFLite computes them in
    float32 from the tensors' float scales."""
    i, a, o = np.float32(in_scale), np.float32(alpha_scale), np.float32(out_scale)
    return float(i / o), float(i * a / o)


def quantize_value(value: float, scale: float, zero_point: int) -> int:
    """TFLite's activation-range quantisation: zero_point + round(value / scale), the division in float32."""
    return zero_point + round_half_away(float(np.float32(value) / np.float32(scale)))
