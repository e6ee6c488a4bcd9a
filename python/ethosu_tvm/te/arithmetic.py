"""Integer building blocks of the NPU's output stage, as TIR expressions (int64 throughout).

Semantics (they match TFLite's reference kernels, which is what makes the NPU bit-exact with them):

* TFL rounding, shift ≥ 31: SaturatingRoundingDoublingHighMul — ``(v·scale + 2^30) >> 31`` (this equals TFLite's
  nudge-and-truncate form) — then RoundingDivideByPOT by ``shift − 31`` (ties away from zero).
* TFL rounding, shift < 31, and NATURAL rounding: one rounding, ``(v·scale + 2^(shift−1)) >> shift`` (ties up).
* TRUNCATE: ``v·scale / 2^shift`` rounded towards zero.
"""
from __future__ import annotations

from tvm import te, tirx

INT64 = "int64"


def i64(value):
    """An int64 expression (Python ints become constants)."""
    if isinstance(value, int):
        return tirx.const(value, INT64)
    if isinstance(value, te.TensorSlice):  # a tensor read: make it a PrimExpr first
        value = value.asobject()
    return value if str(value.ty) == INT64 else value.astype(INT64)


def _select(cond, then, otherwise):
    """Python-level choice when the condition is known at build time, else a guarded TIR if_then_else."""
    if isinstance(cond, bool):
        return then if cond else otherwise
    return tirx.if_then_else(cond, then, otherwise)


def bind(value, body):
    """body(v), v a variable that a Let binds to `value` (an int64 expression), so that `body` may use it several
    times without a copy of its tree in each use (te.create_prim_func simplifies every copy). Bind only around a
    whole te.compute body: TVM's simplifier may duplicate a Let nested in a larger expression, and TIR refuses a
    variable defined twice."""
    var = tirx.Var("v", INT64)
    return tirx.Let(var, i64(value), body(var))


def rounding_divide_by_pot(value, exponent):
    """TFLite RoundingDivideByPOT: value / 2^exponent rounded to nearest, ties away from zero."""
    value, exponent = i64(value), i64(exponent)
    one, zero = tirx.const(1, INT64), tirx.const(0, INT64)
    mask = tirx.shift_left(one, exponent) - one
    remainder = tirx.bitwise_and(value, mask)
    threshold = tirx.shift_right(mask, one) + (value < zero).astype(INT64)
    return tirx.shift_right(value, exponent) + (remainder > threshold).astype(INT64)


def _round_half_up_shift(product, shift):
    if isinstance(shift, int) and shift == 0:
        return product
    one = tirx.const(1, INT64)
    rounded = tirx.shift_right(product + tirx.shift_left(one, shift - one), shift)
    return _select(shift > 0 if isinstance(shift, int) else shift > tirx.const(0, INT64), rounded, product)


def requantize(value, scale, shift, rounding: str):
    """value · scale / 2^shift with the NPU rounding mode; scale and shift may be ints or int64 expressions."""
    product = i64(value) * i64(scale)
    shift_expr = i64(shift)
    if rounding == "NATURAL":
        return _round_half_up_shift(product, shift if isinstance(shift, int) else shift_expr)
    if rounding == "TRUNCATE":
        return tirx.truncdiv(product, tirx.shift_left(tirx.const(1, INT64), shift_expr))
    if isinstance(shift, int) and shift < 31:  # a known single rounding (the double one would shift by < 0)
        return _round_half_up_shift(product, shift)
    high_mul = tirx.shift_right(product + tirx.const(1 << 30, INT64), tirx.const(31, INT64))
    double_rounded = rounding_divide_by_pot(high_mul, shift_expr - tirx.const(31, INT64))
    single = _round_half_up_shift(product, shift if isinstance(shift, int) else shift_expr)
    wide = shift >= 31 if isinstance(shift, int) else shift_expr >= tirx.const(31, INT64)
    return _select(wide, double_rounded, single)


def clamp_to(value, low: int, high: int, dtype: str):
    """Clamp an integer expression to [low, high] and cast it to the output dtype."""
    value = i64(value)
    return tirx.max(tirx.min(value, tirx.const(high, INT64)), tirx.const(low, INT64)).astype(dtype)
