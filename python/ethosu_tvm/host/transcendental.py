"""Fixed-point exp and reciprocal as TIR helpers, in gemmlowp's exact evaluation order (TFLite softmax).

A fixed-point value with I integer bits is an int32 `raw` meaning raw / 2^(31 − I). Products of formats add their
integer bits (the raw product is a rounding doubling high multiply); changing format is a rounding shift.
"""
from __future__ import annotations

import math

from .fixed_point import (
    INT32_MAX,
    const,
    count_leading_zeros,
    fixed_point_constant,
    narrow,
    rounding_divide_by_pot,
    rounding_half_sum,
    saturating_rounding_doubling_high_mul as mul,
    saturating_rounding_multiply_by_pot,
    select,
    wide,
)
from .subroutines import Body, scalar_function

EXP_INPUT_INTEGER_BITS = 5  # exp_on_negative_values takes Q5.26


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
