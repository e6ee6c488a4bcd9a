"""AVERAGE_POOL_2D and MAX_POOL_2D (int8, int16): TFLite's reference pooling over the window clipped to the input.

Average: the sum of the raw values inside the input divided by their count, rounded half away from zero
(TFLite: (sum ± count/2) / count with C division); max: the largest raw value. Both then clamp to the
activation range; the output keeps the input's quantization.
"""
from __future__ import annotations

from tvm import te, tirx

from ..fixed_point import clamp, select
from ..spec import Pool2D, UnsupportedHostOp, op_name
from ..te_kernel import (
    TeKernel,
    activation,
    attach,
    require,
    require_dtype,
    split_reduction_init,
    window_output_size,
)


def define(op: Pool2D) -> TeKernel:
    name = op_name(op)
    require_dtype(name, op.input, ("int8", "int16"))
    require_dtype(name, op.output, (op.input.dtype,))
    if op.kind not in ("avg", "max"):
        raise UnsupportedHostOp(f"{name}: unknown pooling kind {op.kind!r}")
    batches, height, width, channels = op.input.shape
    (pool_h, pool_w), (stride_h, stride_w), (top, left, bottom, right) = op.pool, op.stride, op.padding
    out_h = window_output_size(height, pool_h, stride_h, 1, top, bottom)
    out_w = window_output_size(width, pool_w, stride_w, 1, left, right)
    require(op.output.shape == (batches, out_h, out_w, channels), name,
            f"output {op.output.shape} does not follow from input {op.input.shape} and the window")
    low, high = op.clamp or op.input.limits
    x = activation(op.input, "input")
    ky = te.reduce_axis((0, pool_h), "ky")
    kx = te.reduce_axis((0, pool_w), "kx")

    def window(b, y, x_, c, outside):
        iy, ix = y * stride_h - top + ky, x_ * stride_w - left + kx
        inside = tirx.all(iy >= 0, iy < height, ix >= 0, ix < width)
        return tirx.if_then_else(inside, x[b, iy, ix, c].astype("int32"), outside)

    def count(y, x_):
        """Window elements inside the input."""
        oy, ox = y * stride_h - top, x_ * stride_w - left
        rows = tirx.min(pool_h, height - oy) - tirx.max(0, -oy)
        return rows * (tirx.min(pool_w, width - ox) - tirx.max(0, -ox))

    if op.kind == "avg":
        pooled = te.compute(op.output.shape, lambda b, y, x_, c: te.sum(window(b, y, x_, c, 0), axis=[ky, kx]),
                            name="pooled")

        def finish(b, y, x_, c):
            total, n = pooled[b, y, x_, c], count(y, x_)
            return tirx.truncdiv(select(total > 0, total + n // 2, total - n // 2), n)
    else:
        pooled = te.compute(op.output.shape, lambda b, y, x_, c: te.max(window(b, y, x_, c, low), axis=[ky, kx]),
                            name="pooled")

        def finish(b, y, x_, c):
            return pooled[b, y, x_, c]

    y = te.compute(op.output.shape, lambda *i: clamp(finish(*i), low, high).astype(op.output.dtype), name="output")

    def schedule(sch):
        attach(sch, "pooled", "output", 4)
        split_reduction_init(sch, "pooled", 4)

    return TeKernel(inputs=(x,), output=y, schedule=schedule)
