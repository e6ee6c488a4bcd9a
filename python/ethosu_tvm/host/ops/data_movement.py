"""RESHAPE (and SQUEEZE, EXPAND_DIMS), PAD (and PADV2), CONCATENATION, PACK, strided slices (STRIDED_SLICE, SLICE,
SPLIT, SPLIT_V, UNPACK), TRANSPOSE, BROADCAST_TO and TILE: copies, the runner may alias some of them away.

PAD fills with the zero point (real 0), PADV2 with its constant; CONCATENATION needs its inputs to share the output's
quantization (TFLite's int8/int16 kernels requantize otherwise, which this one does not). PACK, slices and
transposes copy the integers whatever the quantization, as TFLite's kernels do (LiteRT refuses PACK and UNPACK with
another output quantization, TFLite Micro copies).
"""
from __future__ import annotations

import numpy as np
from tvm import te, tirx

from ..spec import (BroadcastTo, Concatenation, Pack, Pad, QuantTensor, Reshape, StridedSlice, Tile, Transpose,
                    UnsupportedHostOp, op_name)
from ..te_kernel import TeKernel, activation, require, require_dtype

_DTYPES = ("int8", "int16")


def _require_same(op, tensors, output) -> None:
    for tensor in tensors:
        require_dtype(op_name(op), tensor, _DTYPES)
        if (tensor.dtype, tensor.scale, tensor.zero_point) != (output.dtype, output.scale, output.zero_point):
            raise UnsupportedHostOp(f"{op_name(op)}: inputs and output must share dtype and quantization")


def define_reshape(op: Reshape) -> TeKernel:
    require_dtype(op_name(op), op.input, (*_DTYPES, "uint8"))
    if (op.output.dtype, op.output.size) != (op.input.dtype, op.input.size):
        raise UnsupportedHostOp(f"reshape: {op.input.dtype}{list(op.input.shape)} cannot become "
                                f"{op.output.dtype}{list(op.output.shape)}")
    x = activation(op.input, "input", (op.input.size,))
    return TeKernel(inputs=(x,), output=te.compute(x.shape, lambda i: x[i], name="output"))


def define_pad(op: Pad) -> TeKernel:
    _require_same(op, [op.input], op.output)
    expected = tuple(d + before + after for d, (before, after) in zip(op.input.shape, op.paddings))
    if len(op.paddings) != len(op.input.shape) or expected != op.output.shape:
        raise UnsupportedHostOp(f"pad: paddings {op.paddings} do not take {op.input.shape} to {op.output.shape}")
    x = activation(op.input, "input")
    fill = tirx.const(op.output.zero_point if op.value is None else op.value, op.output.dtype)

    def output(*index):
        source = [i - before for i, (before, _) in zip(index, op.paddings)]
        inside = tirx.all(*[tirx.all(s >= 0, s < d) for s, d in zip(source, op.input.shape)])
        return tirx.if_then_else(inside, x[tuple(source)], fill)

    return TeKernel(inputs=(x,), output=te.compute(op.output.shape, output, name="output"))


def define_concatenation(op: Concatenation) -> TeKernel:
    _require_same(op, op.inputs, op.output)
    axis = op.axis % len(op.output.shape)
    if sum(t.shape[axis] for t in op.inputs) != op.output.shape[axis]:
        raise UnsupportedHostOp(f"concatenation: inputs do not add up to {op.output.shape} along axis {axis}")
    xs = [activation(t, f"input_{k}") for k, t in enumerate(op.inputs)]
    starts = np.cumsum([0] + [t.shape[axis] for t in op.inputs]).tolist()

    def output(*index):
        value = None
        for x, start, stop in reversed(list(zip(xs, starts, starts[1:]))):
            load = x[index[:axis] + (index[axis] - start,) + index[axis + 1:]]
            value = load if value is None else tirx.if_then_else(index[axis] < stop, load, value)
        return value

    return TeKernel(inputs=tuple(xs), output=te.compute(op.output.shape, output, name="output"))


def define_pack(op: Pack) -> TeKernel:
    """A concatenation of the inputs viewed with the new axis (of extent 1) in place, all in the output's
    quantization: their integers are copied as they are."""
    for tensor in op.inputs:
        require_dtype("pack", tensor, _DTYPES)
        require(tensor.dtype == op.output.dtype, "pack", f"{tensor.dtype} input, {op.output.dtype} output")
    if not 0 <= op.axis < len(op.output.shape):
        raise UnsupportedHostOp(f"pack: axis {op.axis} is out of range for {op.output.shape}")
    out = op.output
    inputs = tuple(QuantTensor(t.shape[:op.axis] + (1,) + t.shape[op.axis:], t.dtype, out.scale, out.zero_point)
                   for t in op.inputs)
    return define_concatenation(Concatenation(inputs, op.output, op.axis))


def _require_copy(op, output: QuantTensor) -> None:
    require_dtype(op_name(op), op.input, _DTYPES)
    require(output.dtype == op.input.dtype, op_name(op), f"{op.input.dtype} input, {output.dtype} output")


def define_strided_slice(op: StridedSlice) -> TeKernel:
    """Written in the slice's own shape (`extent`): the output param is that view of the output tensor."""
    _require_copy(op, op.output)
    shape, extent = op.input.shape, op.extent or op.output.shape
    fits = len(op.begin) == len(op.strides) == len(extent) == len(shape) and all(
        0 <= b < d and 0 <= b + (n - 1) * s < d and s != 0 for b, s, n, d in zip(op.begin, op.strides, extent, shape))
    require(fits and int(np.prod(extent)) == op.output.size, "strided_slice",
            f"begin {op.begin}, strides {op.strides} do not take {op.output.shape} elements from {shape}")
    x = activation(op.input, "input")
    output = te.compute(extent, lambda *i: x[tuple(b + k * s for b, k, s in zip(op.begin, i, op.strides))],
                        name="output")
    return TeKernel(inputs=(x,), output=output)


def define_transpose(op: Transpose) -> TeKernel:
    _require_copy(op, op.output)
    shape = op.input.shape
    require(sorted(op.perm) == list(range(len(shape))) and op.output.shape == tuple(shape[p] for p in op.perm),
            "transpose", f"perm {op.perm} does not take {shape} to {op.output.shape}")
    x = activation(op.input, "input")
    source = [op.perm.index(axis) for axis in range(len(shape))]  # the output axis each input axis moved to
    output = te.compute(op.output.shape, lambda *i: x[tuple(i[k] for k in source)], name="output")
    return TeKernel(inputs=(x,), output=output)


def define_broadcast_to(op: BroadcastTo) -> TeKernel:
    _require_copy(op, op.output)
    shape, out = op.input.shape, op.output.shape
    lead = len(out) - len(shape)
    require(lead >= 0 and all(d in (1, o) for d, o in zip(shape, out[lead:])), "broadcast_to",
            f"{shape} does not broadcast to {out}")
    x = activation(op.input, "input")
    output = te.compute(out, lambda *i: x[tuple(0 if d == 1 else k for d, k in zip(shape, i[lead:]))],
                        name="output")
    return TeKernel(inputs=(x,), output=output)


def define_tile(op: Tile) -> TeKernel:
    _require_copy(op, op.output)
    shape, out = op.input.shape, op.output.shape
    require(len(shape) == len(out) and all(o % d == 0 for d, o in zip(shape, out)), "tile",
            f"{shape} does not tile {out}")
    x = activation(op.input, "input")
    output = te.compute(out, lambda *i: x[tuple(k if d == o else k % d for k, d, o in zip(i, shape, out))],
                        name="output")
    return TeKernel(inputs=(x,), output=output)
