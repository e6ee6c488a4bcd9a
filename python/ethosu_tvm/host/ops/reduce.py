"""MEAN, SUM, REDUCE_MAX and REDUCE_MIN (int8, int16) over any axes, as TFLite's integer reference kernels.

MEAN and SUM accumulate the raw values in int32, centre the sum (minus input_zp · count) and requantize it with
the multiplier of input_scale / output_scale (double), MEAN first folding 1/count into that multiplier: shifted
left by floor(log2 count) (at most 32, and no further than a total shift of −31), divided by count with
truncation. REDUCE_MAX and REDUCE_MIN take the raw extreme (TFLite requires the input's quantization).
"""
from __future__ import annotations

import math

from tvm import te

from ...quantization import mean_multiplier
from ..fixed_point import multiply_by_quantized_multiplier
from ..spec import Reduce, UnsupportedHostOp, op_name
from ..te_kernel import (
    TeKernel,
    activation,
    attach,
    require,
    require_dtype,
    saturate,
    split_reduction_init,
    tflite_multiplier,
)

_DTYPES = ("int8", "int16")


def define(op: Reduce) -> TeKernel:
    name = op_name(op)
    require_dtype(name, op.input, _DTYPES)
    require_dtype(name, op.output, (op.input.dtype,))
    rank = len(op.input.shape)
    require(all(0 <= a < rank for a in op.axes), name, f"axes {op.axes} out of range for rank {rank}")
    kept = tuple(d for i, d in enumerate(op.input.shape) if i not in op.axes) or (1,)
    count = math.prod(op.input.shape[a] for a in op.axes)
    require(op.output.size * count == op.input.size, name,
            f"output {op.output.shape} does not follow from input {op.input.shape} reduced over {op.axes}")
    x = activation(op.input, "input")
    axes = [te.reduce_axis((0, op.input.shape[a]), f"r{a}") for a in op.axes]

    def load(*index):
        """The input element at the kept indices `index`, the reduced ones taken from the reduction axes."""
        kept_index, reduced = iter(index if rank > len(op.axes) else ()), iter(axes)
        return x[tuple(next(reduced) if i in op.axes else next(kept_index) for i in range(rank))]

    if op.kind in ("mean", "sum"):
        reduced = te.compute(kept, lambda *i: te.sum(load(*i).astype("int32"), axis=axes), name="reduced")
        real = op.input.scale / op.output.scale
        multiplier, shift = tflite_multiplier(name, real, mean_multiplier(real, count) if op.kind == "mean" else None)
        centre = op.input.zero_point * count

        def finish(total):
            return saturate(multiply_by_quantized_multiplier(total - centre, multiplier, shift), op.output)
    elif op.kind in ("reduce_max", "reduce_min"):
        if (op.input.scale, op.input.zero_point) != (op.output.scale, op.output.zero_point):
            raise UnsupportedHostOp(f"{name}: input and output quantization differ (TFLite requires them equal)")
        reducer = te.max if op.kind == "reduce_max" else te.min
        reduced = te.compute(kept, lambda *i: reducer(load(*i), axis=axes), name="reduced")

        def finish(value):
            return value
    else:
        raise UnsupportedHostOp(f"{name}: unknown reduction")
    y = te.compute(kept, lambda *i: finish(reduced[i]), name="output")

    def schedule(sch):
        attach(sch, "reduced", "output", len(kept))
        split_reduction_init(sch, "reduced", len(kept))

    return TeKernel(inputs=(x,), output=y, schedule=schedule)

