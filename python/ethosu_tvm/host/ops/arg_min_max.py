"""ARG_MAX and ARG_MIN (int8; LiteRT and TFLite Micro have no int16 kernel) over one axis, as TFLite's reference
kernel: the raw integers compare as the real values do, and of equal extremes the first index wins (TFLite replaces
its candidate only on a strict comparison). Two reductions per output element: the extreme value, then the smallest
index holding it.
"""
from __future__ import annotations

from tvm import te, tirx

from ..spec import ArgMinMax
from ..te_kernel import TeKernel, activation, attach, require, require_dtype, split_reduction_init

_EXTREMES = {"arg_max": te.max, "arg_min": te.min}


def define(op: ArgMinMax) -> TeKernel:
    require_dtype(op.kind, op.input, ("int8",))
    require(op.index_dtype in ("int32", "int64"), op.kind, f"{op.index_dtype} indices (supported: int32, int64)")
    rank = len(op.input.shape)
    require(0 <= op.axis < rank and op.output_shape == op.input.shape[:op.axis] + op.input.shape[op.axis + 1:],
            op.kind, f"output {op.output_shape} is not input {op.input.shape} without axis {op.axis}")
    depth = op.input.shape[op.axis]
    x = activation(op.input, "input")
    shape = op.output_shape or (1,)  # TE indexes no rank-0 tensor; a 1-D input gives one index

    def element(i, k):
        return x[tuple(i[:op.axis]) + (k,) + tuple(i[op.axis:])] if op.output_shape else x[k]

    k = te.reduce_axis((0, depth), "k")
    extreme = te.compute(shape, lambda *i: _EXTREMES[op.kind](element(i, k), axis=k), name="extreme")
    j = te.reduce_axis((0, depth), "j")
    y = te.compute(shape, lambda *i: te.min(
        tirx.Select(element(i, j) == extreme(*i), j, depth).astype(op.index_dtype), axis=j), name="output")
    spatial = len(shape)

    def schedule(sch):
        attach(sch, "extreme", "output", spatial)
        split_reduction_init(sch, "extreme", spatial)
        split_reduction_init(sch, "output", spatial)

    return TeKernel(inputs=(x,), output=y, schedule=schedule)
