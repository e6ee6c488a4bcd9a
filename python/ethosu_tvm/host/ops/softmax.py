"""SOFTMAX int8: TFLite's reference fixed-point algorithm (the one LiteRT's BUILTIN_REF kernel runs).

Per row: max; exp((x − max)·beta·scale) in Q0.31 for inputs within `diff_min` of the max (0 beyond it); the sum
in Q12.19; its reciprocal as a Q0.31 mantissa and a power of two; output = exp · reciprocal rounded to 1/256.
Row maxima and exps are computed once, into the workspace; sums and reciprocals are per-row scalars.
"""
from __future__ import annotations

from tvm import te, tirx

from ...quantization import softmax_input_scaling
from ..fixed_point import (
    const,
    multiply_by_quantized_multiplier,
    rounding_divide_by_pot,
    saturating_rounding_doubling_high_mul,
    select,
)
from ..spec import Softmax, UnsupportedHostOp
from ..te_kernel import TeKernel, activation, attach, require_dtype, saturate, split_reduction_init
from ..transcendental import (
    exp_on_negative_values,
    reciprocal_bits_over_unit,
    reciprocal_mantissa,
    rescale,
)
from . import softmax_int16

SUM_INTEGER_BITS = 12  # the sum of exps accumulates in Q12.19
_OUTPUT_SCALE, _OUTPUT_ZERO_POINT = 1.0 / 256.0, -128


def define(op: Softmax) -> TeKernel:
    require_dtype("softmax", op.input, ("int8", "int16"))
    if op.input.dtype == "int16":
        return softmax_int16.define(op)
    if (op.output.dtype, op.output.scale, op.output.zero_point) != ("int8", _OUTPUT_SCALE, _OUTPUT_ZERO_POINT):
        raise UnsupportedHostOp("softmax: int8 output must have scale 1/256 and zero point -128 (as TFLite requires)")
    depth = op.input.shape[-1]
    rows = op.input.size // depth
    multiplier, left_shift, diff_min = softmax_input_scaling(op.beta, op.input.scale)
    x = activation(op.input, "input", (rows, depth))

    k = te.reduce_axis((0, depth), "k")
    row_max = te.compute((rows,), lambda r: te.max(x[r, k].astype("int32"), axis=k), name="row_max")

    def exp(r, c):
        diff = x[r, c].astype("int32") - row_max[r]
        inside = diff >= diff_min  # beyond diff_min, exp is 0 (and the rescaling could overflow)
        scaled = multiply_by_quantized_multiplier(select(inside, diff, const(0)), multiplier, left_shift)
        return select(inside, exp_on_negative_values(scaled), const(0))

    exps = te.compute((rows, depth), exp, name="exps")
    j = te.reduce_axis((0, depth), "j")
    sums = te.compute((rows,), lambda r: te.sum(rescale(exps[r, j], 0, SUM_INTEGER_BITS), axis=j), name="sum_of_exps")
    mantissa = te.compute((rows,), lambda r: reciprocal_mantissa(sums[r]), name="mantissa")
    # 1/sum = mantissa · 2^-bits_over_unit; the output scale 2^-8 leaves a right shift of bits_over_unit + 23
    shift = te.compute((rows,), lambda r: reciprocal_bits_over_unit(sums[r], SUM_INTEGER_BITS) + 23, name="shift")

    def output(r, c):
        product = saturating_rounding_doubling_high_mul(mantissa[r], exps[r, c])
        # shifts beyond 31 (rows summing past 2^28; LiteRT aborts there) round the product to 0
        quotient = select(shift[r] > 31, const(0), rounding_divide_by_pot(product, tirx.min(shift[r], 31)))
        return saturate(quotient, op.output)

    y = te.compute((rows, depth), output, name="output")

    def schedule(sch):
        for producer in ("shift", "mantissa", "sum_of_exps"):
            attach(sch, producer, "output", 1)
        split_reduction_init(sch, "row_max", 1)
        split_reduction_init(sch, "sum_of_exps", 1)

    return TeKernel(inputs=(x,), output=y, scratch=(row_max, exps), schedule=schedule)
