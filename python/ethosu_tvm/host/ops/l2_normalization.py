"""L2_NORMALIZATION int8: TFLite's integer kernel (reference_integer_ops::L2Normalization), which LiteRT runs.

Per row of the last axis: the sum of squared centred inputs; its inverse square root as a Q0.31 multiplier and a
right shift (GetInvSqrtQuantizedMultiplierExp); each centred input requantized by that multiplier with 7 more bits
of left shift (the fixed output scale 1/128), clamped to int8. The row sums are per-row scalars.
"""
from __future__ import annotations

from tvm import te

from ..fixed_point import clamp, multiply_by_quantized_multiplier
from ..spec import L2Normalization
from ..te_kernel import TeKernel, activation, attach, require, require_dtype, split_reduction_init
from ..transcendental import inv_sqrt_multiplier, inv_sqrt_shift

_OUTPUT_SHIFT = 7  # the output scale is 2^-7


def define(op: L2Normalization) -> TeKernel:
    require_dtype("l2_normalization", op.input, ("int8",))
    require((op.output.dtype, op.output.scale, op.output.zero_point) == ("int8", 1.0 / 128, 0), "l2_normalization",
            "int8 output must have scale 1/128 and zero point 0 (as TFLite requires)")
    depth = op.input.shape[-1] if op.input.shape else 1
    rows = op.input.size // depth
    require(depth * 255 * 255 < 1 << 31, "l2_normalization", f"{depth} elements per row (the int32 sum of squares "
            "would overflow)")
    x = activation(op.input, "input", (rows, depth))

    def centred(r, c):
        return x[r, c].astype("int32") - op.input.zero_point

    k = te.reduce_axis((0, depth), "k")
    squares = te.compute((rows,), lambda r: te.sum(centred(r, k) * centred(r, k), axis=k), name="sum_of_squares")
    multiplier = te.compute((rows,), lambda r: inv_sqrt_multiplier(squares[r]), name="inv_sqrt_multiplier")
    shift = te.compute((rows,), lambda r: inv_sqrt_shift(squares[r]), name="inv_sqrt_shift")
    y = te.compute((rows, depth), lambda r, c: clamp(multiply_by_quantized_multiplier(
        centred(r, c), multiplier[r], _OUTPUT_SHIFT - shift[r]), -128, 127).astype("int8"), name="output")

    def schedule(sch):
        for producer in ("inv_sqrt_shift", "inv_sqrt_multiplier", "sum_of_squares"):
            attach(sch, producer, "output", 1)
        split_reduction_init(sch, "sum_of_squares", 1)

    return TeKernel(inputs=(x,), output=y, schedule=schedule)
