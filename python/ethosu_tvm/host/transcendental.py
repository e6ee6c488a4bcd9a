"""Fixed-point exp, reciprocal and log as TIR helpers, in gemmlowp's and TFLite's exact evaluation order
(softmax, log softmax).

A fixed-point value with I integer bits is an int32 `raw` meaning raw / 2^(31 − I). Products of formats add their
integer bits (the raw product is a rounding doubling high multiply); changing format is a rounding shift.
"""
from __future__ import annotations

import math

from tvm import tirx

from ..quantization import EXP_INPUT_INTEGER_BITS  # exp_on_negative_values takes Q5.26
from .fixed_point import (
    INT32_MAX,
    INT32_MIN,
    clamp,
    const,
    count_leading_zeros,
    fixed_point_constant,
    narrow,
    rounding_divide_by_pot,
    rounding_half_sum,
    saturating_left_shift,
    saturating_rounding_doubling_high_mul as mul,
    saturating_rounding_multiply_by_pot,
    select,
    wide,
)
from .subroutines import Body, scalar_function

LOG_INPUT_INTEGER_BITS = 12  # log_x_at_least_one takes Q12.19 (a sum of exps)
LOG_OUTPUT_INTEGER_BITS = 5  # and gives Q5.26
_LOG_ACCUMULATOR_BITS = LOG_OUTPUT_INTEGER_BITS + 1  # one bit of headroom while the two log terms are summed


def rescale(raw, from_integer_bits: int, to_integer_bits: int):
    """Change a value's format (gemmlowp Rescale): saturating when integer bits are dropped."""
    return saturating_rounding_multiply_by_pot(raw, from_integer_bits - to_integer_bits)


@scalar_function("int32", a="int32")
def exp_on_quarter_interval(body: Body, a):
    """exp(a) for a in [-1/4, 0), Q0.31 in and out: Taylor expansion around -1/8 to the 4th order."""
    exp_minus_eighth = fixed_point_constant(math.exp(-1.0 / 8.0), 0)
    x = body.let("x", a + (1 << 28))  # a + 1/8
    x2 = body.let("x2", mul(x, x))
    x3 = body.let("x3", mul(x2, x))
    x4_over_4 = body.let("x4_over_4", rounding_divide_by_pot(mul(x2, x2), 2))
    polynomial = body.let("polynomial", rounding_divide_by_pot(  # x⁴/24 + x³/6 + x²/2
        mul(x4_over_4 + x3, fixed_point_constant(1.0 / 3.0, 0)) + x2, 1))
    return exp_minus_eighth + mul(exp_minus_eighth, x + polynomial)


@scalar_function("int32", a="int32")
def exp_on_negative_values(body: Body, a):
    """exp(a) for a <= 0 given in Q5.26, result in Q0.31 (exp(0) saturates to INT32_MAX).

    exp(a) = exp(r) · Π exp(-2^k) over the bits k of the multiple of 1/4 that a − r holds, r in [-1/4, 0).
    """
    fractional_bits = 31 - EXP_INPUT_INTEGER_BITS
    quarter = 1 << (fractional_bits - 2)
    r = body.let("a_mod_quarter_minus_quarter", (a & (quarter - 1)) - quarter)
    result = body.let("result", exp_on_quarter_interval(rescale(r, EXP_INPUT_INTEGER_BITS, 0)))
    remainder = body.let("remainder", r - a)
    for k in range(-2, EXP_INPUT_INTEGER_BITS):
        factor = fixed_point_constant(math.exp(-(2.0**k)), 0)
        has_bit = (remainder & (1 << (fractional_bits + k))) != 0
        result = body.let(f"result_{k + 2}", select(has_bit, mul(result, factor), result))
    return select(a == 0, const(INT32_MAX), result)


@scalar_function("int32", a="int32")
def one_over_one_plus_x(body: Body, a):
    """1 / (1 + a) for a in [0, 1) in Q0.31, result in Q0.31: three Newton-Raphson steps in Q2.29."""
    half_denominator = body.let("half_denominator", rounding_half_sum(a, INT32_MAX))
    x = body.let("x", fixed_point_constant(48.0 / 17.0, 2) + mul(half_denominator,
                                                                  fixed_point_constant(-32.0 / 17.0, 2)))
    for step in range(3):
        correction = rescale(mul(x, (1 << 29) - mul(half_denominator, x)), 4, 2)
        x = body.let(f"x_{step + 1}", x + correction)
    return rescale(x, 1, 0)  # x / 2 read in Q1.30, then to Q0.31


@scalar_function("int32", x="int32")
def reciprocal_mantissa(body: Body, x):
    """TFLite GetReciprocal's Q0.31 mantissa 1/(1 + f) of a positive x normalised to (1 + f)·2^k."""
    headroom = body.let("headroom_plus_one", count_leading_zeros(x))
    return one_over_one_plus_x(narrow((wide(x) << wide(headroom)) - (1 << 31)))


def reciprocal_bits_over_unit(x, integer_bits: int):
    """GetReciprocal's num_bits_over_unit: 1/x = reciprocal_mantissa(x) · 2^-bits for x in Q(integer_bits)."""
    return integer_bits - count_leading_zeros(x)


def _saturating(total):
    """An int64 sum or difference clamped to int32."""
    return narrow(clamp(total, const(INT32_MIN, "int64"), const(INT32_MAX, "int64")))


@scalar_function("int32", x="int32")
def log_x_at_least_one(body: Body, x):
    """TFLite's log_x_for_x_greater_than_or_equal_to_1 of a Q12.19 value, in Q5.26.

    x = 2^e · m with m normalised into [1/sqrt(2), sqrt(2))/2 two ways (from x and from x/sqrt(2), taking the
    smaller mantissa and the larger exponent, each exponent offset by a quarter): log x = e·log 2 + log of the
    mantissa, the latter a rational approximation around 2^-1/4 whose denominator is inverted by Newton-Raphson.
    The exponent terms carry one extra integer bit until the final rescale.
    """
    sqrt_sqrt_half = fixed_point_constant(math.sqrt(math.sqrt(0.5)), 0)
    sqrt_half = fixed_point_constant(math.sqrt(0.5), 0)
    fourth_root_two = math.sqrt(math.sqrt(2.0))
    quarter = rescale(const(fixed_point_constant(0.25, 0)), 0, _LOG_ACCUMULATOR_BITS)
    exponent_shift = 31 - _LOG_ACCUMULATOR_BITS  # an integer exponent as a Q6 raw value

    headroom_a = body.let("headroom_a", count_leading_zeros(x))
    normalised_a = body.let("normalised_a", saturating_left_shift(x, headroom_a - 1))
    mantissa_a = body.let("mantissa_a", saturating_rounding_multiply_by_pot(mul(normalised_a, sqrt_half), 1))
    exponent_a = body.let("exponent_a", _saturating(
        wide(saturating_left_shift(LOG_INPUT_INTEGER_BITS - headroom_a, exponent_shift)) + wide(quarter)))
    headroom_b = body.let("headroom_b", count_leading_zeros(mul(x, sqrt_half)) - 1)
    mantissa_b = body.let("mantissa_b", saturating_left_shift(x, headroom_b))
    exponent_b = body.let("exponent_b", _saturating(
        wide(saturating_left_shift(LOG_INPUT_INTEGER_BITS - headroom_b, exponent_shift)) - wide(quarter)))
    r = body.let("r", select(mantissa_a < mantissa_b, mantissa_a, mantissa_b))
    exponent = body.let("exponent", select(exponent_a > exponent_b, exponent_a, exponent_b))

    p = body.let("p", rounding_half_sum(r, sqrt_sqrt_half))
    q = body.let("q", (r - sqrt_sqrt_half) * 2)
    q_squared = body.let("q_squared", mul(q, q))
    numerator = body.let("numerator", mul(q, r) + mul(mul(q, q_squared), fixed_point_constant(
        11.0 / 240.0 * fourth_root_two, 0)))
    inner = (fixed_point_constant(2.0 / fourth_root_two - fourth_root_two, 0) + q
             + mul(fixed_point_constant(fourth_root_two / 20.0, 0), q_squared))
    denominator_minus_one = body.let("denominator_minus_one", mul(p, inner) + mul(
        fixed_point_constant(fourth_root_two / 4.0, 0), q))
    reciprocal = body.let("reciprocal", one_over_one_plus_x(denominator_minus_one))
    total = (mul(exponent, fixed_point_constant(math.log(2.0), 0))
             + mul(rescale(numerator, 0, _LOG_ACCUMULATOR_BITS), reciprocal))
    return rescale(total, _LOG_ACCUMULATOR_BITS, LOG_OUTPUT_INTEGER_BITS)


_INV_SQRT_INTEGER_BITS = 3  # GetInvSqrtQuantizedMultiplierExp's Newton-Raphson runs in Q3.28


def _inv_sqrt_normalised(body: Body, x):
    """x (2 ≤ x < 2^31) divided by 4 once if at least 2^29, then shifted left by pairs of bits into [2^27, 2^29):
    the normalised value and the right shift of 1/sqrt(x) it leaves (negative for x below 4)."""
    large = body.let("large", x >= (1 << 29))
    reduced = body.let("reduced", select(large, x >> 2, x))
    pairs = body.let("pairs", ((count_leading_zeros(reduced) - 1) >> 1) - 1)
    return reduced << (pairs * 2), body.let("shift", 11 + select(large, const(1), const(0)) - pairs)


@scalar_function("int32", x="int32")
def inv_sqrt_shift(body: Body, x):
    """The right shift (≥ 0) of TFLite's GetInvSqrtQuantizedMultiplierExp for 0 ≤ x < 2^31 (0 and 1 give 0)."""
    _, shift = _inv_sqrt_normalised(body, x)
    return select(x <= 1, const(0), tirx.max(shift, 0))


@scalar_function("int32", x="int32")
def inv_sqrt_multiplier(body: Body, x):
    """The Q0.31 multiplier of TFLite's GetInvSqrtQuantizedMultiplierExp for 0 ≤ x < 2^31: 1/sqrt of the
    normalised x by five Newton-Raphson steps in Q3.28 from 1, times sqrt(2)/2, shifted left (wrapping) where the
    shift is negative; INT32_MAX for 0 and 1."""
    normalised, shift = _inv_sqrt_normalised(body, x)
    half_input = body.let("half_input", rounding_divide_by_pot(normalised >> 1, 1))
    half_three = fixed_point_constant(1.5, _INV_SQRT_INTEGER_BITS)
    y = const(fixed_point_constant(1.0, _INV_SQRT_INTEGER_BITS))
    for step in range(5):
        cube = rescale(mul(mul(y, y), y), 3 * _INV_SQRT_INTEGER_BITS, _INV_SQRT_INTEGER_BITS)
        y = body.let(f"y_{step + 1}", rescale(narrow(wide(mul(half_three, y)) - wide(mul(half_input, cube))),
                                              2 * _INV_SQRT_INTEGER_BITS, _INV_SQRT_INTEGER_BITS))
    y = body.let("scaled", mul(y, fixed_point_constant(math.sqrt(2.0) / 2.0, 0)))
    shifted = select(shift < 0, narrow(wide(y) << wide(tirx.max(-shift, 0))), y)
    return select(x <= 1, const(INT32_MAX), shifted)
