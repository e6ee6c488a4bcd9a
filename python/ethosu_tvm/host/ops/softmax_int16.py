"""SOFTMAX int16: TFLite's reference (SoftmaxInt16), built on two interpolated 513-entry lookup tables.

Per row: the max; exp((x − max)·beta·scale) from a table over [-10, 0] (inputs rescaled so that [-65535, 0] spans
it); the sum of exps in Q16.15; 1/sum from a table of 1/(1 + x) over [0, 1] after normalising the sum; output =
exp · reciprocal, shifted back to Q0.15. The tables are built at compile time as TFLite builds them.
"""
from __future__ import annotations

from tvm import te, tirx

from ...quantization import softmax_int16_input_scaling, softmax_int16_tables
from ..fixed_point import clamp, count_leading_zeros, multiply_by_quantized_multiplier, wide
from ..spec import Softmax, UnsupportedHostOp
from ..te_kernel import Constant, TeKernel, activation, attach, constant, split_reduction_init


def _lookup(table: Constant, value):
    """Linear interpolation in a 513-entry table at an int16 `value` (a load: it is read three times)."""
    index = (value >> 7) + 256
    base = table[index].astype("int32")
    slope = table[index + 1].astype("int32") - base  # neighbours differ by far less than 2^15: TFLite's int16 slope
    return base + ((slope * (value & 0x7F) + 64) >> 7)


def define(op: Softmax) -> TeKernel:
    if (op.output.dtype, op.output.scale, op.output.zero_point) != ("int16", 1.0 / 32768.0, 0):
        raise UnsupportedHostOp("softmax: int16 output must have scale 1/32768 and zero point 0 (as TFLite requires)")
    depth = op.input.shape[-1]
    rows = op.input.size // depth
    multiplier, shift = softmax_int16_input_scaling(op.beta, op.input.scale)
    exps_table, reciprocals_table = softmax_int16_tables()
    exp_table, reciprocal_table = constant(exps_table, "exp_table"), constant(reciprocals_table, "reciprocal_table")
    x = activation(op.input, "input", (rows, depth))

    k = te.reduce_axis((0, depth), "k")
    row_max = te.compute((rows,), lambda r: te.max(x[r, k].astype("int32"), axis=k), name="row_max")
    exp_input = te.compute((rows, depth), lambda r, c: clamp(multiply_by_quantized_multiplier(
        x[r, c].astype("int32") - row_max[r], multiplier, shift) + 32767, -32768, 32767), name="exp_input")
    exps = te.compute((rows, depth), lambda r, c: _lookup(exp_table, exp_input[r, c]).astype("int16"), name="exps")
    j = te.reduce_axis((0, depth), "j")
    sums = te.compute((rows,), lambda r: te.sum(exps[r, j].astype("int32"), axis=j), name="sum_of_exps")
    headroom = te.compute((rows,), lambda r: count_leading_zeros(sums[r]), name="headroom_plus_one")
    # sum normalised to [1, 2) in Q1.15, minus 1 and recentred from [0, 65535] to the table's int16 input range
    reciprocal_input = te.compute((rows,), lambda r: clamp(((wide(sums[r]) << wide(headroom[r] - 1)) + (1 << 13)
                                                            >> 14).astype("int32") - (1 << 15) - (1 << 16),
                                                           -32768, 32767), name="reciprocal_input")
    reciprocal = te.compute((rows,), lambda r: _lookup(reciprocal_table, reciprocal_input[r]), name="reciprocal")

    def output(r, c):
        right_shift = 31 - headroom[r]
        product = wide(exps[r, c]) * wide(reciprocal[r]) + (tirx.const(1, "int64") << wide(right_shift - 1))
        return clamp((product >> wide(right_shift)).astype("int32"), 0, 32767).astype("int16")

    y = te.compute((rows, depth), output, name="output")

    def schedule(sch):
        attach(sch, "exp_input", "exps", 2)
        for producer in ("reciprocal", "reciprocal_input", "headroom_plus_one", "sum_of_exps"):
            attach(sch, producer, "output", 1)
        split_reduction_init(sch, "row_max", 1)
        split_reduction_init(sch, "sum_of_exps", 1)

    return TeKernel(inputs=(x,), output=y, constants=(exp_table, reciprocal_table), scratch=(row_max, exps),
                    schedule=schedule)
