"""Checks of the binary elementwise operators: ADD, SUB, MUL, MINIMUM, MAXIMUM, and PRELU and
SQUARED_DIFFERENCE, which run as several of them.
"""
from __future__ import annotations

import numpy as np

from ...qdq.match import Match
from ...qdq.values import const_value, dtype_of, is_const, quant_of, shape_of
from ...quantization import (
    ELEMENTWISE_INPUT_SHIFT,
    SQUARED_DIFFERENCE_LEFT_SHIFT,
    add_multipliers,
    add_output_refusal,
    mul_multiplier,
    narrowing_mul,
    prelu_multipliers,
    squared_difference_multipliers,
)
from .arithmetic import centred_magnitude, defined_left_shifts, scalar_scales, wrapping_left_shifts
from .generic import SUPPORTED_DTYPES, Tensors, activation, feature_map, first

ELEMENTWISE_DTYPES = ("int8", "int16")  # binary elementwise operators


def _broadcast(lhs: tuple[int, ...], rhs: tuple[int, ...], out: tuple[int, ...]) -> str:
    if out not in (lhs, rhs):
        return f"operand shapes {lhs} and {rhs}; at least one operand's shape must match the OFM's shape {out}"
    size = min(len(lhs), len(rhs))
    for a, b, o in zip(lhs[len(lhs) - size:], rhs[len(rhs) - size:], out[len(out) - size:]):
        if not (a == b or a == 1 or b == 1) or o != max(a, b):
            return (f"operand shapes {lhs} and {rhs}; broadcasting is only allowed for dimensions of size 1, from"
                    " either operand")
    return ""


# Scalars that make the result independent of the IFM (code generation finds the IFM through its reads):
# a MUL by real 0, a MINIMUM with the dtype's minimum, a MAXIMUM with its maximum.
_ABSORBING = {"multiply": lambda value, zero_point, info: value == zero_point,
              "minimum": lambda value, zero_point, info: value == info.min,
              "maximum": lambda value, zero_point, info: value == info.max}


def constant_operand(match: Match) -> str:
    """A one-element constant operand is the NPU's IFM2 scalar (operands reversed when it is the left one), a larger
    one a tensor in the constant region (IFM2, or the IFM when the feature map is the operand that broadcasts)."""
    roles = [role for role in ("lhs", "rhs") if is_const(match[role])]
    if len(roles) == 2:
        return "both operands are constants"
    if not roles:
        return ""
    constant = match[roles[0]]
    if int(np.prod(shape_of(constant))) != 1:
        return ""
    value = int(np.asarray(const_value(constant)).reshape(-1)[0])
    absorbing = _ABSORBING.get(match.kind, lambda *_: False)
    if absorbing(value, quant_of(match[f"{roles[0]}_dq"]).scalar_zero_point, np.iinfo(dtype_of(constant))):
        return f"a constant operand {value} that makes the result independent of the IFM"
    return ""


def _operands(match: Match, dtypes: tuple[str, ...], constants: bool) -> Tensors:
    """Both operands (with `constants`, a constant one is no feature map: the NPU's IFM2 scalar or a tensor in
    the constant region) and the result."""
    for role, what in (("lhs", "IFM"), ("rhs", "IFM2")):
        if not (constants and is_const(match[role])):
            yield feature_map(match[role], what, dtypes=dtypes)
    yield feature_map(match["quantize"], "OFM", dtypes=dtypes)
    for role, what in (("lhs_dq", "IFM"), ("rhs_dq", "IFM2"), ("quantize", "OFM")):
        yield activation(match[role], what)


def binary_tensors(match: Match) -> Tensors:
    """ADD, SUB, MUL, MINIMUM and MAXIMUM: 8- or 16-bit feature maps, or one and a constant."""
    return _operands(match, ELEMENTWISE_DTYPES, constants=True)


def _binary(match: Match, same_quant: bool) -> str:
    """The limits `check_arithmetic` and `check_min_max` share; `same_quant`: inputs quantized as the OFM."""
    lhs_q, rhs_q, ofm_q = quant_of(match["lhs_dq"]), quant_of(match["rhs_dq"]), quant_of(match["quantize"])

    def matching() -> str:
        if same_quant and not all(
            q.scalar_scale == ofm_q.scalar_scale and q.scalar_zero_point == ofm_q.scalar_zero_point
            for q in (lhs_q, rhs_q)
        ):
            return "both input quantization parameters must match the OFM quantization parameters"
        return ""

    def same_type() -> str:
        types = [dtype_of(match[role]) for role in ("lhs", "rhs", "quantize")]
        if len(set(types)) == 1 or (match.kind == "multiply" and types[0] == types[1] and narrowing_mul(*types[1:])):
            return ""
        return f"operand and result types {', '.join(types)}; they must be the same"

    def scales() -> str:
        """The scales legalization gives ADD/SUB (each operand's and the sum's) and MUL must fit the NPU's."""
        s1, s2, so = lhs_q.scalar_scale, rhs_q.scalar_scale, ofm_q.scalar_scale
        ofm_dtype = dtype_of(match["quantize"])
        if match.kind in ("add", "subtract"):
            reals = add_multipliers(s1, s2, so, ELEMENTWISE_INPUT_SHIFT[ofm_dtype])
            return add_output_refusal(reals[2]) or scalar_scales(reals)
        if match.kind == "multiply":
            real = mul_multiplier(s1, s2, so, narrowing_mul(dtype_of(match["lhs"]), ofm_dtype))
            lhs, rhs = (centred_magnitude(dtype_of(match[role]), q.scalar_zero_point)
                        for role, q in (("lhs", lhs_q), ("rhs", rhs_q)))
            return scalar_scales([real]) or wrapping_left_shifts(lhs * rhs, real)
        return ""

    return first(
        same_type,
        lambda: _broadcast(shape_of(match["lhs"]), shape_of(match["rhs"]), shape_of(match["quantize"])),
        matching,
        scales,
    )


def check_arithmetic(match: Match) -> str:
    """ADD, SUB and MUL: 8- or 16-bit feature maps of batch 1 (or one and a constant) of one type (MUL may narrow),
    broadcasting size-1 dimensions, each operand and the result quantized freely within the NPU's scales."""
    return _binary(match, same_quant=False)


def check_min_max(match: Match) -> str:
    """MINIMUM and MAXIMUM: as ADD (`check_arithmetic`), but the NPU compares the raw integers, so both inputs
    must be quantized as the OFM."""
    return _binary(match, same_quant=True)


def prelu_tensors(match: Match) -> Tensors:
    yield feature_map(match["ifm"], "IFM")
    yield feature_map(match["quantize"], "OFM")
    for role, what in (("ifm_dq", "IFM"), ("alpha_dq", "alpha"), ("quantize", "OFM")):
        yield activation(match[role], what)


def check_prelu(match: Match) -> str:
    """PRELU is a table, a MIN with the input zero point, a MUL by alpha (a constant IFM2, broadcast by the NPU)
    and a MAX: int8 feature maps, an int8 alpha of one scale that broadcasts to the input."""
    ifm_q, alpha_q, ofm_q = quant_of(match["ifm_dq"]), quant_of(match["alpha_dq"]), quant_of(match["quantize"])
    shape, alpha_shape = shape_of(match["ifm"]), shape_of(match["alpha"])

    def reals() -> tuple[float, float]:  # the table's, then the MUL's; once the scales are checked
        return prelu_multipliers(ifm_q.scalar_scale, alpha_q.scalar_scale, ofm_q.scalar_scale)

    def slopes() -> int:  # a bound of the products the MUL requantizes: (x − zp) · (alpha − alpha zp)
        centred = np.abs(np.asarray(const_value(match["alpha"]), dtype=np.int64) - alpha_q.scalar_zero_point)
        return centred_magnitude(dtype_of(match["ifm"]), ifm_q.scalar_zero_point) * int(centred.max(initial=0))

    def alpha() -> str:
        if dtype_of(match["alpha"]) != "int8":
            return f"alpha has data type {dtype_of(match['alpha'])}; it must be int8"
        if len(alpha_shape) > len(shape) or any(a not in (1, d) for a, d in zip(alpha_shape[::-1], shape[::-1])):
            return f"alpha of shape {alpha_shape} does not broadcast to the input {shape}"
        return ""

    return first(
        alpha,
        lambda: defined_left_shifts(reals()[:1]),
        lambda: scalar_scales(reals()[1:]),
        lambda: wrapping_left_shifts(slopes(), reals()[1]),
    )


def no_constant_operand(match: Match) -> str:
    if is_const(match["lhs"]) or is_const(match["rhs"]):
        return "a constant operand; the NPU takes two feature maps"
    return ""


def squared_difference_tensors(match: Match) -> Tensors:
    """Two int8 feature maps."""
    return _operands(match, SUPPORTED_DTYPES, constants=False)


def check_squared_difference(match: Match) -> str:
    """Five elementwise operations on 32-bit intermediates; their difference broadcasts as binary operands do."""
    lhs_q, rhs_q, ofm_q = quant_of(match["lhs_dq"]), quant_of(match["rhs_dq"]), quant_of(match["quantize"])

    def scales() -> str:
        reals = squared_difference_multipliers(lhs_q.scalar_scale, rhs_q.scalar_scale, ofm_q.scalar_scale)
        # each operand shifted left by 7 bits and rescaled (rounding by at most 1): a bound of |difference|
        difference = sum(int(centred_magnitude(dtype_of(match[role]), q.scalar_zero_point) * real
                             * (1 << SQUARED_DIFFERENCE_LEFT_SHIFT)) + 1
                         for role, q, real in (("lhs", lhs_q, reals[0]), ("rhs", rhs_q, reals[1])))
        return scalar_scales(reals) or wrapping_left_shifts(difference**2, reals[2])

    return first(
        lambda: _broadcast(shape_of(match["lhs"]), shape_of(match["rhs"]), shape_of(match["quantize"])),
        scales,
    )
