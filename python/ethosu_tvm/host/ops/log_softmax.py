"""LOG_SOFTMAX int8: TFLite's reference fixed-point algorithm (reference_integer_ops::LogSoftmax, which LiteRT's
BUILTIN_REF kernel runs), over the last axis.

Per row: max; exp((x − max)·scale) in Q0.31 for inputs within `diff_min` of the max, summed in Q12.19 (as SOFTMAX
does, beta 1); log of the sum in Q5.26; output = (x − max)·scale − log sum, rounded to 1/16, + 127. Inputs at or
below an adjusted diff_min (where the difference would leave Q5.26) give −128.
"""
from __future__ import annotations

from tvm import te, tirx

from ...quantization import quantize_multiplier, softmax_input_scaling
from ..fixed_point import INT32_MIN, const, multiply_by_quantized_multiplier, rounding_divide_by_pot, select
from ..spec import LogSoftmax, UnsupportedHostOp
from ..te_kernel import TeKernel, activation, attach, require_dtype, saturate, split_reduction_init
from ..transcendental import EXP_INPUT_INTEGER_BITS, exp_on_negative_values, log_x_at_least_one, rescale
from .softmax import SUM_INTEGER_BITS

_OUTPUT_SCALE, _OUTPUT_ZERO_POINT = 16.0 / 256.0, 127
_OUTPUT_INTEGER_BITS = 4  # the output's 1/16 steps: Q5.26 differences rounded by 2^(31 − 5 − 4)


def reverse_scaling(multiplier: int, left_shift: int) -> tuple[int, int]:
    """TFLite's inverse of the input scaling, 2^(31 − left_shift) / multiplier, as (multiplier, shift)."""
    return quantize_multiplier((1 << (31 - left_shift)) / float(multiplier))


def define(op: LogSoftmax) -> TeKernel:
    require_dtype("log_softmax", op.input, ("int8",))
    if (op.output.dtype, op.output.scale, op.output.zero_point) != ("int8", _OUTPUT_SCALE, _OUTPUT_ZERO_POINT):
        raise UnsupportedHostOp("log_softmax: int8 output must have scale 16/256 and zero point 127 (as TFLite "
                                "requires)")
    depth = op.input.shape[-1]
    rows = op.input.size // depth
    multiplier, left_shift, diff_min = softmax_input_scaling(1.0, op.input.scale)
    reverse_multiplier, reverse_shift = reverse_scaling(multiplier, left_shift)
    x = activation(op.input, "input", (rows, depth))

    k = te.reduce_axis((0, depth), "k")
    row_max = te.compute((rows,), lambda r: te.max(x[r, k].astype("int32"), axis=k), name="row_max")

    def diff(r, c):
        return x[r, c].astype("int32") - row_max[r]

    def exp(r, c):
        inside = diff(r, c) >= diff_min
        scaled = multiply_by_quantized_multiplier(select(inside, diff(r, c), const(0)), multiplier, left_shift)
        return select(inside, rescale(exp_on_negative_values(scaled), 0, SUM_INTEGER_BITS), const(0))

    j = te.reduce_axis((0, depth), "j")
    sums = te.compute((rows,), lambda r: te.sum(exp(r, j), axis=j), name="sum_of_exps")
    log_sum = te.compute((rows,), lambda r: log_x_at_least_one(sums[r]), name="log_sum")
    floor = te.compute((rows,), lambda r: tirx.max(const(diff_min - 1), multiply_by_quantized_multiplier(
        log_sum[r] + INT32_MIN, reverse_multiplier, reverse_shift)), name="adjusted_diff_min")

    def output(r, c):
        inside = diff(r, c) > floor[r]
        scaled = multiply_by_quantized_multiplier(select(inside, diff(r, c), const(0)), multiplier, left_shift)
        value = rounding_divide_by_pot(scaled - log_sum[r],
                                       31 - EXP_INPUT_INTEGER_BITS - _OUTPUT_INTEGER_BITS)
        return select(inside, saturate(value, op.output), const(-128, "int8"))

    y = te.compute((rows, depth), output, name="output")

    def schedule(sch):
        for producer in ("adjusted_diff_min", "log_sum", "sum_of_exps", "row_max"):
            attach(sch, producer, "output", 1)
        split_reduction_init(sch, "row_max", 1)
        split_reduction_init(sch, "sum_of_exps", 1)

    return TeKernel(inputs=(x,), output=y, schedule=schedule)
