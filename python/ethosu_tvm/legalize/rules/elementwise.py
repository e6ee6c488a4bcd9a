"""Rules of the binary elementwise operators, and of PRELU and SQUARED_DIFFERENCE, which run as several of
them."""
from __future__ import annotations

import numpy as np

from ...qdq.match import Match
from ...qdq.values import Quant, const_value, dtype_of, is_const, prim_float, quant_of
from ...quantization import (
    ELEMENTWISE_INPUT_SHIFT,
    add_multipliers,
    mul_multiplier,
    multiply_by_quantized_multiplier,
    narrowing_mul,
    npu_scale_shift,
    prelu_multipliers,
    quantize_value,
    squared_difference_multipliers,
)
from ..lut import INT8_VALUES
from ..ops import BinaryElementwise, Clamp, Identity, NpuOp, Operand, Tensor
from .operands import (
    DTYPE_RANGES,
    INT32_CLAMP,
    INT8_RANGE,
    Rule,
    operand_of,
    raw_of,
    shifted,
    single,
    tensor_of,
    times_multiplier,
)


def _float_clamp(match: Match, ofm: Quant, dtype: str = "int8") -> Clamp:
    """Bounds of a float-domain fused activation (relu, or clip for RELU6/RELU_N1_TO_1), quantized as TFLite does,
    within the range of `dtype`."""
    scale, zero_point = ofm.scalar_scale, ofm.scalar_zero_point
    low, high = DTYPE_RANGES[dtype]
    if match.get("relu") is not None:
        low = max(low, quantize_value(0.0, scale, zero_point))
    elif match.get("float_clip") is not None:
        clip = match["float_clip"]
        low = max(low, quantize_value(prim_float(clip.args[1]), scale, zero_point))
        high = min(high, quantize_value(prim_float(clip.args[2]), scale, zero_point))
    return Clamp(low, high)


def binary(operator: str) -> Rule:
    def rule(match: Match, tensors: dict, ofm: Tensor, source: str) -> NpuOp:
        lhs_q, rhs_q, ofm_q = quant_of(match["lhs_dq"]), quant_of(match["rhs_dq"]), quant_of(match["quantize"])
        s1, s2, so = (np.float64(q.scalar_scale) for q in (lhs_q, rhs_q, ofm_q))
        params: dict = dict(clamp=_float_clamp(match, ofm_q, ofm.dtype))
        if operator in ("ADD", "SUB"):
            input_shift = ELEMENTWISE_INPUT_SHIFT[ofm.dtype]
            lhs, rhs, total = add_multipliers(s1, s2, so, input_shift)
            params.update(ifm_requant=single(lhs), ifm2_requant=single(rhs), requant=single(total),
                          input_shift=input_shift)
        elif operator == "MUL":
            in_double = narrowing_mul(dtype_of(match["lhs"]), ofm.dtype)
            params.update(requant=single(mul_multiplier(s1, s2, so, in_double)))
        if is_const(match["lhs"]) or is_const(match["rhs"]):
            return _with_constant(operator, match, tensors, ofm, source, params)
        return BinaryElementwise(
            operator=operator,
            ifm=operand_of(tensor_of(match["lhs"], tensors), lhs_q),
            ifm2=operand_of(tensor_of(match["rhs"], tensors), rhs_q),
            ofm=operand_of(ofm, ofm_q),
            source=source,
            **params,
        )

    return rule


def _with_constant(operator: str, match: Match, tensors: dict, ofm: Tensor, source: str, params: dict) -> NpuOp:
    """A constant operand as IFM2: one element as the NPU's IFM2 scalar, more as a tensor of the constant region.
    On the left it is IFM2 with reversed operands (each operand keeps its own rescaling)."""
    reversed_operands = is_const(match["lhs"])
    constant, feature_map = ("lhs", "rhs") if reversed_operands else ("rhs", "lhs")
    if reversed_operands and "ifm_requant" in params:
        params = dict(params, ifm_requant=params["ifm2_requant"], ifm2_requant=params["ifm_requant"])
    ifm = tensor_of(match[feature_map], tensors)
    ifm2, constant_params = _constant_ifm2(np.asarray(const_value(match[constant])), ofm)
    return BinaryElementwise(
        operator=operator,
        ifm=operand_of(ifm, quant_of(match[f"{feature_map}_dq"])),
        ifm2=operand_of(ifm2, quant_of(match[f"{constant}_dq"])),
        ofm=operand_of(ofm, quant_of(match["quantize"])),
        source=source,
        reversed_operands=reversed_operands,
        **params,
        **constant_params,
    )


def _constant_ifm2(value: np.ndarray, ofm: Tensor) -> tuple[Tensor, dict]:
    """The IFM2 tensor of a constant operand and the BinaryElementwise fields carrying its values: a one-element
    constant as the IFM2 scalar, a larger one (4-D) as a tensor of the constant region."""
    if value.size == 1:
        scalar = int(value.reshape(-1)[0])
        return Tensor(f"{ofm.name}_scalar", (1, 1, 1, 1), str(value.dtype)), dict(ifm2_scalar=scalar)
    shape = (1,) * (4 - value.ndim) + value.shape
    return Tensor(f"{ofm.name}_ifm2", shape, str(value.dtype)), dict(ifm2_constant=value.reshape(shape))


def prelu(match: Match, tensors: dict, ofm: Tensor, source: str) -> tuple[NpuOp, ...]:
    """PRELU as four int8 operations. TFLite: x ≥ zp_in gives (x − zp_in) requantized, below it gives
    (x − zp_in)·(alpha − zp_alpha) requantized; + zp_out. A table gives the first branch and −128 below zp_in;
    MIN(x, zp_in) times alpha gives the second (zp_out from x ≥ zp_in); their MAX is PRELU, as the first branch
    is at least zp_out where it applies."""
    ifm_q, alpha_q, ofm_q = quant_of(match["ifm_dq"]), quant_of(match["alpha_dq"]), quant_of(match["quantize"])
    ifm, zp_in, zp_out = tensors[match["ifm"]], ifm_q.scalar_zero_point, ofm_q.scalar_zero_point
    positive_real, negative_real = prelu_multipliers(ifm_q.scalar_scale, alpha_q.scalar_scale, ofm_q.scalar_scale)
    positive_values = np.clip(multiply_by_quantized_multiplier(INT8_VALUES - zp_in, positive_real) + zp_out,
                              *INT8_RANGE)
    table = np.where(INT8_VALUES >= zp_in, positive_values, INT8_RANGE[0]).astype(np.int8)
    positive, below, negative = (Tensor(f"{ofm.name}_{part}", ofm.shape, "int8")
                                 for part in ("positive", "below", "negative"))
    zero, zero_params = _constant_ifm2(np.array(zp_in, np.int8), below)
    alpha, alpha_params = _constant_ifm2(np.asarray(const_value(match["alpha"])), negative)
    return (
        Identity(ifm=raw_of(ifm), ofm=raw_of(positive), lut=table, source=source),
        BinaryElementwise(operator="MIN", ifm=operand_of(ifm, ifm_q), ifm2=operand_of(zero, ifm_q),
                          ofm=operand_of(below, ifm_q), source=source, **zero_params),
        BinaryElementwise(operator="MUL", ifm=operand_of(below, ifm_q), ifm2=operand_of(alpha, alpha_q),
                          ofm=operand_of(negative, ofm_q), requant=single(negative_real), source=source,
                          **alpha_params),
        BinaryElementwise(operator="MAX", ifm=operand_of(positive, ofm_q), ifm2=operand_of(negative, ofm_q),
                          ofm=operand_of(ofm, ofm_q), source=source),
    )


def squared_difference(match: Match, tensors: dict, ofm: Tensor, source: str) -> tuple[NpuOp, ...]:
    """SQUARED_DIFFERENCE as five operations on 32-bit intermediates, TFLite's arithmetic step by step: each operand
    centred, times 2^7 (an IFM2 scalar 127 of zero point −1) and rescaled (TFL rounding is TFLite's
    MultiplyByQuantizedMultiplier); their difference; its square; that times the output multiplier (a 32-bit constant
    IFM2, see `times_multiplier`) shifted, + zp_out."""
    lhs_q, rhs_q, ofm_q = quant_of(match["lhs_dq"]), quant_of(match["rhs_dq"]), quant_of(match["quantize"])
    lhs_real, rhs_real, out_real = squared_difference_multipliers(lhs_q.scalar_scale, rhs_q.scalar_scale,
                                                                 ofm_q.scalar_scale)
    unit = shifted()

    def int32(name: str, shape) -> Operand:
        return Operand(Tensor(f"{ofm.name}_{name}", shape, "int32"), 0, 1.0)

    def rescaled(role: str, real: float) -> BinaryElementwise:
        ifm = tensor_of(match[role], tensors)
        shift = Operand(Tensor(f"{ofm.name}_{role}_shift", (1, 1, 1, 1), "int8"), -1, 1.0)  # 127 − (−1) = 2^7
        return BinaryElementwise(operator="MUL", ifm=operand_of(ifm, quant_of(match[f"{role}_dq"])), ifm2=shift,
                                 ofm=int32(role, ifm.shape), requant=single(real), clamp=INT32_CLAMP, source=source,
                                 ifm2_scalar=127)

    lhs, rhs = rescaled("lhs", lhs_real), rescaled("rhs", rhs_real)
    difference = BinaryElementwise(operator="SUB", ifm=lhs.ofm, ifm2=rhs.ofm, ofm=int32("difference", ofm.shape),
                                   requant=unit, clamp=INT32_CLAMP, source=source)
    square = BinaryElementwise(operator="MUL", ifm=difference.ofm, ifm2=difference.ofm,
                               ofm=int32("square", ofm.shape), requant=unit, clamp=INT32_CLAMP, source=source)
    output = times_multiplier(square.ofm, operand_of(ofm, ofm_q), *npu_scale_shift(out_real), source)
    return lhs, rhs, difference, square, output
