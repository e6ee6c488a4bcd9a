"""Rules of the unary operators: lookup tables, the NPU's built-in functions, requantizations, casts and
SOFTMAX."""
from __future__ import annotations

import numpy as np

from ...partition.npu_view import softmax_beta
from ...qdq.match import Match
from ...qdq.values import quant_of, table_reals
from ...quantization import (
    leaky_relu_extreme,
    npu_interpolation_lut,
    sigmoid_input_rescale,
    softmax_exp_lut,
    softmax_int16_input_scaling,
    softmax_int16_tables,
)
from ..lut import lookup_table
from ..ops import BinaryElementwise, Clamp, Identity, NpuOp, Operand, Pooling, Softmax, Tensor
from .operands import DTYPE_RANGES, INT32_CLAMP, operand_of, raw_of, requant_of, shifted, single


def table(match: Match, tensors: dict, ofm: Tensor, source: str) -> NpuOp:
    """A unary int8 function as an identity through a lookup table (the table holds all the arithmetic)."""
    return Identity(ifm=raw_of(tensors[match["ifm"]]), ofm=raw_of(ofm), lut=lookup_table(match), source=source)


def requantize(match: Match, tensors: dict, ofm: Tensor, source: str) -> NpuOp:
    """int8 QUANTIZE is a table; int16 and uint8 ones a 1x1 average pool of the centred IFM, scaled by TFLite's
    multiplier of input / output scale (computed in double) with its double rounding (TFL)."""
    if ofm.dtype == tensors[match["ifm"]].dtype == "int8":
        return table(match, tensors, ofm, source)
    ifm_q, ofm_q = quant_of(match["ifm_dq"]), quant_of(match["quantize"])
    return Pooling(
        pooling_type="AVG",
        ifm=operand_of(tensors[match["ifm"]], ifm_q),
        ofm=operand_of(ofm, ofm_q),
        pool_shape=(1, 1),
        clamp=Clamp(*DTYPE_RANGES[ofm.dtype]),
        source=source,
        requant=single(np.float64(ifm_q.scalar_scale) / np.float64(ofm_q.scalar_scale)),
    )


def leaky_relu(match: Match, tensors: dict, ofm: Tensor, source: str) -> NpuOp | tuple[NpuOp, ...]:
    """int8: a table. int16: the input times 1 (an IFM2 scalar) requantized by each branch's multiplier, then the
    MAX or MIN of the two, which partitioning checked is TFLite's choice by sign on every int16 value; as Vela,
    with equal scales the identity branch is the input itself."""
    if ofm.dtype == "int8":
        return table(match, tensors, ofm, source)
    ofm_q = quant_of(match["quantize"])
    ifm = operand_of(tensors[match["ifm"]], quant_of(match["ifm_dq"]))
    identity, negative = table_reals(match)
    clamp = Clamp(*DTYPE_RANGES["int16"])

    def branch(name: str, real: float) -> BinaryElementwise:
        one = Operand(Tensor(f"{ofm.name}_{name}_one", (1, 1, 1, 1), "int16"), 0, 1.0)
        return BinaryElementwise(operator="MUL", ifm=ifm, ifm2=one,
                                 ofm=operand_of(Tensor(f"{ofm.name}_{name}", ofm.shape, "int16"), ofm_q),
                                 requant=single(real), clamp=clamp, source=source, ifm2_scalar=1)

    alpha = branch("alpha", negative)
    if identity == 1.0:
        ops, kept = (alpha,), operand_of(ifm.tensor, ofm_q)
    else:
        kept_op = branch("identity", identity)
        ops, kept = (alpha, kept_op), kept_op.ofm
    return (*ops, BinaryElementwise(operator=leaky_relu_extreme(identity, negative), ifm=kept, ifm2=alpha.ofm,
                                    ofm=operand_of(ofm, ofm_q), clamp=clamp, source=source))


BUILT_IN_FUNCTIONS = {"tanh": "TANH", "logistic": "SIGMOID"}


def sigmoid_family(match: Match, tensors: dict, ofm: Tensor, source: str) -> NpuOp:
    """int8 TANH and LOGISTIC are tables; int16 ones the NPU's built-in functions of the input rescaled as TFLite
    rescales it (one rounding, half up)."""
    if ofm.dtype == "int8":
        return table(match, tensors, ofm, source)
    ifm_q = quant_of(match["ifm_dq"])
    multiplier, shift = sigmoid_input_rescale(ifm_q.scalar_scale)
    return Identity(
        ifm=operand_of(tensors[match["ifm"]], ifm_q),
        ofm=operand_of(ofm, quant_of(match["quantize"])),
        source=source,
        function=BUILT_IN_FUNCTIONS[match.kind],
        input_scale=requant_of(multiplier, shift),
    )


def softmax(match: Match, tensors: dict, ofm: Tensor, source: str) -> NpuOp:
    """int8: the exps as a table over the input differences; the rest of the algorithm is fixed (see ops.Softmax).
    int16: TFLite's two interpolation tables as NPU LUTs and the input differences' rescale."""
    ifm_q = quant_of(match["ifm_dq"])
    ifm, ofm_operand = operand_of(tensors[match["ifm"]], ifm_q), operand_of(ofm, quant_of(match["quantize"]))
    beta = softmax_beta(match)
    if ifm.tensor.dtype != "int16":
        return Softmax(ifm=ifm, ofm=ofm_operand, exp_lut=softmax_exp_lut(beta, ifm_q.scalar_scale), source=source)
    multiplier, left_shift = softmax_int16_input_scaling(beta, ifm_q.scalar_scale)
    exps, reciprocals = softmax_int16_tables()
    return Softmax(ifm=ifm, ofm=ofm_operand, exp_lut=npu_interpolation_lut(exps), source=source,
                   input_rescale=(multiplier, 31 - left_shift), reciprocal_lut=npu_interpolation_lut(reciprocals))


def cast(match: Match, tensors: dict, ofm: Tensor, source: str) -> NpuOp:
    """A widening CAST (partitioning checks): the raw integers times 1 into the wider type."""
    ifm = raw_of(tensors[match["ifm"]])
    one = Operand(Tensor(f"{ofm.name}_one", (1, 1, 1, 1), ifm.tensor.dtype), 0, 1.0)
    clamp = Clamp(*DTYPE_RANGES[ofm.dtype]) if ofm.dtype in DTYPE_RANGES else INT32_CLAMP
    return BinaryElementwise(operator="MUL", ifm=ifm, ifm2=one, ofm=raw_of(ofm), requant=shifted(), clamp=clamp,
                             source=source, ifm2_scalar=1)
