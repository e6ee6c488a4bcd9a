"""Helpers for the cascader tests: one-op NPU graphs lowered by ethosu_tvm.te, and brute-force read regions."""
from __future__ import annotations

import numpy as np

from ethosu_tvm.legalize.ops import (
    BinaryElementwise,
    Conv2D,
    DepthwiseConv2D,
    Identity,
    NpuGraph,
    Operand,
    Padding,
    Pooling,
    Requantize,
    Tensor,
)
from ethosu_tvm.te import te_graph

UNIT = Requantize(np.array([1 << 30], dtype=np.int64), np.array([31], dtype=np.int64))


def operand(name: str, shape) -> Operand:
    return Operand(Tensor(name, tuple(shape)), 0, 0.1)


def window_out(size: int, kernel: int, stride: int, dilation: int, before: int, after: int) -> int:
    """Output size of a sliding window (padding before/after)."""
    return (size + before + after - (kernel - 1) * dilation - 1) // stride + 1


def lower(op, inputs):
    """(te output, {input name: te input}) of a single-op NPU graph."""
    graph = NpuGraph("g", tuple(o.tensor for o in inputs), (op.ofm.tensor,), (op,))
    built = te_graph(graph)
    return built.tensors[op.ofm.tensor.name], {o.tensor.name: built.tensors[o.tensor.name] for o in inputs}


def conv(in_shape, kernel, strides=(1, 1), dilation=(1, 1), padding=Padding(), out_channels=None, multiplier=None):
    """A Conv2D (or DepthwiseConv2D when `multiplier` is given) and its TE output and IFM."""
    n, h, w, c = in_shape
    out_h = window_out(h, kernel[0], strides[0], dilation[0], padding.top, padding.bottom)
    out_w = window_out(w, kernel[1], strides[1], dilation[1], padding.left, padding.right)
    depthwise = multiplier is not None
    out_c = c * multiplier if depthwise else out_channels
    weights = np.ones((out_c, *kernel, 1 if depthwise else c), dtype=np.int8)
    cls = DepthwiseConv2D if depthwise else Conv2D
    ifm = operand("ifm", in_shape)
    op = cls(ifm, operand("ofm", (n, out_h, out_w, out_c)), weights, 0, np.zeros(out_c, dtype=np.int64), UNIT,
             tuple(strides), tuple(dilation), padding)
    out, ins = lower(op, [ifm])
    return op, out, ins["ifm"]


def pool(in_shape, pool_type, pool_shape, strides=(1, 1), padding=Padding()):
    n, h, w, c = in_shape
    out_shape = (n, window_out(h, pool_shape[0], strides[0], 1, padding.top, padding.bottom),
                 window_out(w, pool_shape[1], strides[1], 1, padding.left, padding.right), c)
    ifm = operand("ifm", in_shape)
    op = Pooling(pool_type, ifm, operand("ofm", out_shape), tuple(pool_shape), tuple(strides), padding)
    out, ins = lower(op, [ifm])
    return op, out, ins["ifm"]


def binary(operator, lhs_shape, rhs_shape):
    out_shape = tuple(max(a, b) for a, b in zip(lhs_shape, rhs_shape))
    lhs, rhs = operand("lhs", lhs_shape), operand("rhs", rhs_shape)
    requant = None if operator in ("MIN", "MAX") else UNIT
    op = BinaryElementwise(operator, lhs, rhs, operand("ofm", out_shape), requant, UNIT, UNIT)
    out, ins = lower(op, [lhs, rhs])
    return op, out, ins["lhs"], ins["rhs"]


def identity(in_shape, out_shape, lut: bool = False):
    ifm = operand("ifm", in_shape)
    table = np.arange(-128, 128, dtype=np.int8) if lut else None
    op = Identity(ifm, operand("ofm", out_shape), table)
    out, ins = lower(op, [ifm])
    return op, out, ins["ifm"]


def find_tensor(output, suffix: str):
    """The tensor feeding `output` (at any depth) whose op name ends with `suffix`."""
    stack, seen = [output], set()
    while stack:
        tensor = stack.pop()
        if tensor.op.name.endswith(suffix):
            return tensor
        if tensor.op.name not in seen:
            seen.add(tensor.op.name)
            stack.extend(getattr(tensor.op, "input_tensors", ()))
    raise LookupError(f"nothing named *{suffix} feeds {output.op.name}")


def window_region(start: int, size: int, kernel: int, stride: int, dilation: int, before: int) -> tuple[int, int]:
    """(first, size) of the input elements that output elements [start, start+size) read, by enumeration."""
    taps = [y * stride + r * dilation - before for y in range(start, start + size) for r in range(kernel)]
    return min(taps), max(taps) - min(taps) + 1
