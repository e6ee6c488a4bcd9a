"""gemmlowp/TFLite fixed-point integer primitives as TIR helpers (int32 results).

TFLite's integer reference kernels are written in these primitives; each helper mirrors one documented operation
bit for bit, including its rounding and saturation, so kernels built from them match TFLite exactly. The helpers
avoid C undefined behaviour (shifts of 32+ bits, left shifts of negative values) where TFLite's own code has it.
"""
from __future__ import annotations

from tvm import tirx
from tvm.ir import Expr

from ..quantization import round_half_away
from .subroutines import Body, scalar_function

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1


def const(value: int, dtype: str = "int32") -> Expr:
    return tirx.const(value, dtype)


def wide(x) -> Expr:
    """x as int64."""
    return const(x, "int64") if isinstance(x, int) else x.astype("int64")


def narrow(x) -> Expr:
    return x.astype("int32")


def select(condition, true_value, false_value) -> Expr:
    return tirx.Select(condition, true_value, false_value)


def clamp(x, low, high) -> Expr:
    return tirx.max(tirx.min(x, high), low)


def _power_of_two(exponent) -> Expr:
    """2^exponent as int64, for exponent 0..62."""
    return const(1, "int64") << wide(exponent)


@scalar_function("int32", a="int32", b="int32")
def saturating_rounding_doubling_high_mul(body: Body, a, b):
    """High 32 bits of 2·a·b, rounded to nearest with ties upward, saturating the one overflow case."""
    product = body.let("product", wide(a) * wide(b))
    nudge = select(product >= 0, const(1 << 30, "int64"), const(1 - (1 << 30), "int64"))
    high = narrow(tirx.truncdiv(product + nudge, const(1 << 31, "int64")))
    return select(tirx.all(a == INT32_MIN, b == INT32_MIN), const(INT32_MAX), high)


@scalar_function("int32", x="int32", exponent="int32")
def rounding_divide_by_pot(body: Body, x, exponent):
    """x / 2^exponent rounded to nearest, ties away from zero (exponent 0..31)."""
    mask = body.let("mask", narrow(_power_of_two(exponent) - 1))
    threshold = body.let("threshold", (mask >> 1) + select(x < 0, const(1), const(0)))
    return (x >> exponent) + select((x & mask) > threshold, const(1), const(0))


@scalar_function("int32", x="int32", exponent="int32")
def saturating_left_shift(body: Body, x, exponent):
    """x · 2^exponent (exponent 1..31), saturating to the int32 range."""
    threshold = body.let("threshold", const(INT32_MAX) >> exponent)
    shifted = narrow(wide(x) * _power_of_two(exponent))
    return select(x > threshold, const(INT32_MAX), select(x < -threshold, const(INT32_MIN), shifted))


def saturating_rounding_multiply_by_pot(x, exponent: int) -> Expr:
    """x · 2^exponent: a saturating left shift for exponent > 0, a rounding right shift otherwise."""
    return saturating_left_shift(x, exponent) if exponent > 0 else rounding_divide_by_pot(x, -exponent)


@scalar_function("int32", x="int32", multiplier="int32", shift="int32")
def multiply_by_quantized_multiplier(body: Body, x, multiplier, shift):
    """TFLite's double-rounding requantization x · multiplier · 2^(shift − 31): a rounding high multiply after
    any left shift, then a rounding right shift. The left shift wraps to 32 bits as LiteRT's int32 multiply does
    when it overflows (undefined in C, so done here in 64 bits and narrowed, which C defines)."""
    left = body.let("left_shift", tirx.max(shift, 0))
    scaled = saturating_rounding_doubling_high_mul(narrow(wide(x) * _power_of_two(left)), multiplier)
    return rounding_divide_by_pot(scaled, tirx.max(-shift, 0))


@scalar_function("int32", x="int64", multiplier="int32", shift="int32")
def multiply_by_quantized_multiplier_single_round(body: Body, x, multiplier, shift):
    """TFLite's single-rounding requantization: (x · multiplier + 2^(30 − shift)) >> (31 − shift) in int64
    (exact for |x| < 2^32, as TFLite's)."""
    total = body.let("total_shift", 31 - shift)
    return narrow((wide(x) * wide(multiplier) + _power_of_two(total - 1)) >> wide(total))


@scalar_function("int32", x="int64", multiplier="int32", shift="int32")
def multiply_by_quantized_multiplier_wide(body: Body, x, multiplier, shift):
    """TFLite's requantization of an int64 accumulator (16x8 kernels): the multiplier reduced to 16 bits, rounded
    up, then one rounding shift: (x · m16 + 2^(14 − shift)) >> (15 − shift)."""
    reduced = body.let("reduced_multiplier", select(
        multiplier < 0x7FFF0000, (multiplier + (1 << 15)) >> 16, const(0x7FFF)))
    total = body.let("total_shift", 15 - shift)
    return narrow((x * wide(reduced) + _power_of_two(total - 1)) >> wide(total))


@scalar_function("int32", a="int32", b="int32")
def rounding_half_sum(body: Body, a, b):
    """(a + b) / 2 rounded away from zero, without overflow."""
    total = body.let("sum", wide(a) + wide(b))
    return narrow(tirx.truncdiv(total + select(total >= 0, const(1, "int64"), const(-1, "int64")),
                                const(2, "int64")))


@scalar_function("int32", x="int32")
def count_leading_zeros(body: Body, x):
    """Leading zero bits of a positive int32 (a binary search for the top bit: no compiler builtin needed)."""
    top_bit = const(0)
    for width in (16, 8, 4, 2):
        above = body.let(f"above_{width}", x >= (1 << width))
        x = body.let(f"x_{width}", select(above, x >> width, x))
        top_bit = body.let(f"top_{width}", select(above, top_bit + width, top_bit))
    return 31 - select(x >= 2, top_bit + 1, top_bit)


@scalar_function("int32", x="int32")
def count_leading_sign_bits(body: Body, x):
    """The bits below the sign bit that repeat it (TFLite's CountLeadingSignBits; 31 for 0 and −1)."""
    magnitude = body.let("magnitude", x ^ (x >> 31))
    return select(magnitude == 0, const(31), count_leading_zeros(magnitude) - 1)


def fixed_point_constant(value: float, integer_bits: int) -> int:
    """Raw int32 of a real constant in a fixed-point format with `integer_bits` integer bits."""
    return round_half_away(value * (1 << (31 - integer_bits)))
