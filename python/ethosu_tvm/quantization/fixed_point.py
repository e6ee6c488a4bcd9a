"""TFLite's fixed-point integer operations on NumPy int64 arrays, for values computed at compile time.

The NPU runs an int8 → int8 function as a lookup table; the table entries must be what TFLite's integer kernels
compute for each input, so their arithmetic (gemmlowp rounding and saturation included) is reproduced here.
"""
from __future__ import annotations

import math

import numpy as np

from .multipliers import quantize_multiplier, round_half_away


def _srdhm(a, b: int):
    """SaturatingRoundingDoublingHighMul without its one saturating case (a = b = −2^31): the doubled high half,
    ties away from zero (gemmlowp's nudge and truncation equal this floor), for ints or int64 arrays."""
    return (a * b + (1 << 30)) >> 31


def rounding_divide_by_pot(x, exponent: int):
    """gemmlowp RoundingDivideByPOT: x / 2^exponent, ties away from zero, for ints or int64 arrays."""
    mask = (1 << exponent) - 1
    threshold = (mask >> 1) + (x < 0)
    return (x >> exponent) + ((x & mask) > threshold)


def multiply_by_quantized_multiplier(x: np.ndarray, real: float) -> np.ndarray:
    """TFLite MultiplyByQuantizedMultiplier (double rounding) of int64 values by a real multiplier.

    Its left shift is an int32 multiply: for ratios of 2^24 and more it overflows on int8 inputs, undefined in C,
    and LiteRT and TFLite Micro (x86-64) both wrap; so does this, as the host kernel's C does."""
    multiplier, exponent = quantize_multiplier(real)
    shifted = _wrap32(x * (1 << max(exponent, 0)))
    return rounding_divide_by_pot(_srdhm(shifted, multiplier), max(-exponent, 0))


def multiply_by_quantized_multiplier_single_round(x: np.ndarray, real: float) -> np.ndarray:
    """TFLite's single-rounding requantization (LiteRT's int8 FULLY_CONNECTED) of int64 values:
    (x · multiplier + 2^(30 − shift)) >> (31 − shift), exact in int64 for |x| < 2^32."""
    multiplier, exponent = quantize_multiplier(real)
    return (x * multiplier + (1 << (30 - exponent))) >> (31 - exponent)


INT16_VALUES = np.arange(-(1 << 15), 1 << 15, dtype=np.int64)


def leaky_relu_extreme(identity: float, negative: float) -> str | None:
    """Which of "MAX" and "MIN" of int16 LEAKY_RELU's two branches, every x requantized by `identity` and by
    `negative` (each as MultiplyByQuantizedMultiplier, saturated to int16), is TFLite's choice by sign (the first
    for x ≥ 0) on every int16 x; None when neither is. MAX is for alpha ≤ 1 and MIN above, but rounding could put
    the branches out of order for some x where the multipliers are close, so each int16 value is checked."""
    kept, scaled = (_saturate16(multiply_by_quantized_multiplier(INT16_VALUES, real)) for real in (identity, negative))
    expected = np.where(INT16_VALUES >= 0, kept, scaled)
    return next((name for name, pick in (("MAX", np.maximum), ("MIN", np.minimum))
                 if np.array_equal(pick(kept, scaled), expected)), None)


def _int16_multiplier(real: float) -> tuple[int, int]:
    """TFLite QuantizeMultiplier followed by DownScaleInt32ToInt16Multiplier: (Q15 mantissa, exponent)."""
    multiplier, exponent = quantize_multiplier(real)
    if multiplier >= (1 << 31) - 1 - (1 << 15):
        return (1 << 15) - 1, exponent
    return (multiplier + (1 << 15)) >> 16, exponent


def _saturate16(x: np.ndarray) -> np.ndarray:
    return np.clip(x, -(1 << 15), (1 << 15) - 1)


def _srdhm16(a: np.ndarray, b: int) -> np.ndarray:
    """16-bit SaturatingRoundingDoublingHighMul (ties as gemmlowp's nudge gives them: half up)."""
    overflow = (a == b) & (a == -(1 << 15))
    return np.where(overflow, (1 << 15) - 1, (a * b + (1 << 14)) >> 15)


def _sdhm16(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """16-bit SaturatingDoublingHighMul: the doubled high half, truncated towards zero."""
    overflow = (a == b) & (a == -(1 << 15))
    product = a * b
    return np.where(overflow, (1 << 15) - 1, np.sign(product) * (np.abs(product) >> 15))


def _rounding_divide_by_pot16(x: np.ndarray, exponent: int) -> np.ndarray:
    """gemmlowp RoundingDivideByPOT on int16 values: its mask (2^exponent − 1) is an int16 too, all ones from
    exponent 16 on, and then every value rounds to 1 (x ≥ 0) or −1 (x < 0), as LiteRT and TFLite Micro compute."""
    if exponent < 16:
        return rounding_divide_by_pot(x, exponent)
    return (x >> exponent) + (x > (x < 0) - 1)


def _hard_swish_multipliers(in_scale: float, out_scale: float) -> tuple[tuple[int, int], tuple[int, int]]:
    """HardSwish's 16-bit (multiplier, exponent) pairs of the output and of the 'reluish' ramp (float32 ratios)."""
    hires_scale = np.float32(1.0 / 128.0) * np.float32(in_scale)
    return (_int16_multiplier(float(hires_scale / np.float32(out_scale))),
            _int16_multiplier(float(hires_scale / np.float32(3.0 / 32768.0))))


def hard_swish_refusal(in_scale: float, out_scale: float) -> str:
    """Why TFLite refuses an int8 HARD_SWISH of these scales, or "": its Prepare requires the output multiplier,
    input scale / (128 · output scale), to take no left shift."""
    (_, out_exp), _ = _hard_swish_multipliers(in_scale, out_scale)
    if out_exp <= 0:
        return ""
    return (f"input scale / (128 · output scale) is {in_scale / (128 * out_scale):.3g}; TFLite's kernel needs it "
            "below 1 (it refuses the model)")


def hard_swish_values(centred: np.ndarray, in_scale: float, out_scale: float) -> np.ndarray:
    """TFLite's int8 HardSwish on centred inputs (its 16-bit fixed-point algorithm), before the zero point."""
    (out_mult, out_exp), (relu_mult, relu_exp) = _hard_swish_multipliers(in_scale, out_scale)
    hires = centred * (1 << 7)
    preshift_output = _srdhm16(hires, out_mult)
    reluish = hires
    if relu_exp > 0:
        reluish = _saturate16(reluish << (relu_exp - 1))
    reluish = _srdhm16(reluish, relu_mult)
    if relu_exp > 0:
        reluish = _saturate16(reluish << 1)
    elif relu_exp < 0:
        reluish = _rounding_divide_by_pot16(reluish, -relu_exp)
    reluish = (reluish + (1 << 15)) >> 1
    return _rounding_divide_by_pot16(_sdhm16(reluish, preshift_output), -out_exp)


# Scalar int32 arithmetic of gemmlowp and TFLite, for tables computed one input value at a time.
_INT32_MIN, _INT32_MAX = -(1 << 31), (1 << 31) - 1


def _wrap32(x: int) -> int:
    return (x + (1 << 31)) % (1 << 32) - (1 << 31)


def srdhm(a: int, b: int) -> int:
    """gemmlowp SaturatingRoundingDoublingHighMul of two int32 values."""
    return _INT32_MAX if a == b == _INT32_MIN else _srdhm(a, b)


def _saturating_shift_left(x: int, exponent: int) -> int:
    """gemmlowp SaturatingRoundingMultiplyByPOT for a positive exponent."""
    threshold = (1 << (31 - exponent)) - 1
    return _INT32_MAX if x > threshold else _INT32_MIN if x < -threshold else x << exponent


def _rounding_divide_by_pot32(x: int, exponent: int) -> int:
    """gemmlowp RoundingDivideByPOT of one int32 value. From exponent 32 on C leaves its shift undefined; LiteRT's
    x86-64 build shifts by the exponent's low 5 bits and, its int32 mask being all ones, adds 1 to values ≥ 0."""
    if exponent < 32:
        return rounding_divide_by_pot(x, exponent)
    return (x >> (exponent & 31)) + (x >= 0)


def multiply_by_quantized_multiplier_int(x: int, multiplier: int, shift: int) -> int:
    """TFLite MultiplyByQuantizedMultiplier of one int32 value (shift > 0 shifts left first)."""
    left, right = max(shift, 0), max(-shift, 0)
    return _rounding_divide_by_pot32(srdhm(_wrap32(x * (1 << left)), multiplier), right)


def inv_sqrt_multiplier_exp(value: int) -> tuple[int, int]:
    """TFLite GetInvSqrtQuantizedMultiplierExp(value, kReverseShift): 1/sqrt(value) as a Q31 multiplier and a
    left shift, by five Newton-Raphson steps in gemmlowp's 3-integer-bit fixed point."""
    if value <= 1:
        return _INT32_MAX, 0
    shift = 11
    while value >= 1 << 29:
        value //= 4
        shift += 1
    pairs = ((32 - value.bit_length()) - 1) // 2 - 1  # CountLeadingZeros(value) - 1 bits, in pairs, less one
    shift -= pairs
    value <<= 2 * pairs
    half_input = rounding_divide_by_pot(value >> 1, 1)
    half_three = (1 << 28) + (1 << 27)
    x = 1 << 28  # 1.0 with 3 integer bits
    for _ in range(5):
        x3 = _saturating_shift_left(srdhm(srdhm(x, x), x), 6)
        x = _saturating_shift_left(_wrap32(srdhm(half_three, x) - srdhm(half_input, x3)), 3)
    x = srdhm(x, 1518500250)  # · sqrt(2) / 2
    if shift < 0:
        x, shift = _wrap32(x << -shift), 0
    return x, -shift


EXP_INPUT_INTEGER_BITS = 5  # TFLite's softmax takes exp of a Q5.26 value


def _fixed_constant(value: float, integer_bits: int) -> int:
    """The raw int32 of a real constant in a format with `integer_bits` integer bits (gemmlowp's literals)."""
    return round_half_away(value * (1 << (31 - integer_bits)))


def _exp_on_quarter_interval(a: int) -> int:
    """gemmlowp exp of a Q0.31 value in [−1/4, 0): a 4th-order Taylor expansion around −1/8."""
    exp_minus_eighth = _fixed_constant(math.exp(-1.0 / 8.0), 0)
    x = a + (1 << 28)
    x2 = srdhm(x, x)
    x3 = srdhm(x2, x)
    x4_over_4 = rounding_divide_by_pot(srdhm(x2, x2), 2)
    polynomial = rounding_divide_by_pot(srdhm(x4_over_4 + x3, _fixed_constant(1.0 / 3.0, 0)) + x2, 1)
    return exp_minus_eighth + srdhm(exp_minus_eighth, x + polynomial)


def exp_on_negative_values(a: int) -> int:
    """gemmlowp exp(a) of a Q5.26 value a ≤ 0, in Q0.31: exp of the remainder in [−1/4, 0) times exp(−2^k) for
    each bit k of the multiple of 1/4 beyond it; exp(0) saturates to INT32_MAX."""
    if a == 0:
        return _INT32_MAX
    fractional_bits = 31 - EXP_INPUT_INTEGER_BITS
    quarter = 1 << (fractional_bits - 2)
    r = (a & (quarter - 1)) - quarter
    result = _exp_on_quarter_interval(r << EXP_INPUT_INTEGER_BITS)
    remainder = r - a
    for k in range(-2, EXP_INPUT_INTEGER_BITS):
        if remainder & (1 << (fractional_bits + k)):
            result = srdhm(result, _fixed_constant(math.exp(-(2.0**k)), 0))
    return result


def softmax_input_multiplier(beta: float, input_scale: float) -> float:
    """The real multiplier of TFLite's int8 SOFTMAX: beta · scale in Q5.26 units, in double (capped below 2^31).
    TFLite's kernel requires it to exceed 1 (a left shift) and refuses the model otherwise."""
    return min(beta * input_scale * (1 << (31 - EXP_INPUT_INTEGER_BITS)), (1 << 31) - 1.0)


def softmax_input_scaling(beta: float, input_scale: float) -> tuple[int, int, int]:
    """(multiplier, left shift, diff_min) of TFLite's int8 SOFTMAX (`softmax_input_multiplier`); input differences
    below diff_min give exp 0 (their rescaled value would overflow)."""
    fractional_bits = 31 - EXP_INPUT_INTEGER_BITS
    multiplier, left_shift = quantize_multiplier(softmax_input_multiplier(beta, input_scale))
    max_rescaled = ((1 << EXP_INPUT_INTEGER_BITS) - 1) * (1 << fractional_bits) / (1 << left_shift)
    return multiplier, left_shift, -math.floor(max_rescaled)


SOFTMAX_INT16_EXP_RANGE = 10.0  # int16 SOFTMAX's exp table covers [-10, 0]; exp(-10) is negligible in the sum


def softmax_int16_input_scaling(beta: float, input_scale: float) -> tuple[int, int]:
    """(multiplier, left shift) of TFLite's int16 SOFTMAX: input differences rescaled so that [-65535, 0] spans
    exp's table, from input_scale · beta in float32."""
    scale_beta = float(np.float32(input_scale) * np.float32(beta))
    return quantize_multiplier(scale_beta / (SOFTMAX_INT16_EXP_RANGE / 65535.0))
