"""One TE graph per NPU subgraph: placeholders for inputs and constants, a te.compute stage chain per primitive."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from tvm import te, tirx

from ..legalize.ops import (
    BinaryElementwise,
    Concatenate,
    Conv2D,
    Identity,
    NpuGraph,
    Pad,
    Pooling,
    Slice,
    Softmax,
    Transpose,
    Upscale,
)
from ..quantization import sigmoid_table
from .primitives import (
    ConvConstants,
    binary_elementwise,
    concatenate,
    convolution,
    identity,
    pad,
    pooling,
    slice_box,
    softmax,
    softmax_int16,
    transpose,
    upscale,
)

# Block annotation carried by every TIR block of a primitive: its index in the NpuGraph's ops.
OP_ANNOTATION = "ethosu.op"


@dataclass(frozen=True, eq=False)
class TeGraph:
    """The TE form of an NpuGraph; the PrimFunc's parameters are inputs, then constants, then outputs.

    `tensors` maps each NpuGraph tensor name to its TE tensor, whose op name is the TIR buffer's name.
    """

    name: str
    inputs: tuple[te.Tensor, ...]
    constants: tuple[tuple[te.Tensor, np.ndarray], ...]
    outputs: tuple[te.Tensor, ...]
    tensors: Mapping[str, te.Tensor]

    def prim_func(self) -> tirx.PrimFunc:
        params = list(self.inputs) + [placeholder for placeholder, _ in self.constants] + list(self.outputs)
        return te.create_prim_func(params).with_attr("global_symbol", self.name)


class _Builder:
    def __init__(self, graph: NpuGraph):
        self.graph = graph
        self.tensors = {t.name: te.placeholder(t.shape, t.dtype, name=_c_name(t.name)) for t in graph.inputs}
        self.inputs = tuple(self.tensors[t.name] for t in graph.inputs)
        self.constants: list[tuple[te.Tensor, np.ndarray]] = []

    def constant(self, name: str, value: np.ndarray) -> te.Tensor:
        placeholder = te.placeholder(value.shape, str(value.dtype), name=name)
        self.constants.append((placeholder, value))
        return placeholder

    def conv_constants(self, op: Conv2D, prefix: str) -> ConvConstants:
        return ConvConstants(
            weights=self.constant(f"{prefix}_weights", op.weights),
            bias=self.constant(f"{prefix}_bias", op.bias.astype(np.int64)),
            scale=self.constant(f"{prefix}_scale", op.requant.scale.astype(np.int64)),
            shift=self.constant(f"{prefix}_shift", op.requant.shift.astype(np.int64)),
        )

    def lower(self, index: int, op) -> te.Tensor:
        name = f"op{index}_{op.op_name.split('.')[1]}"
        ifms = [self.tensors[operand.tensor.name] for operand in op.inputs]
        attrs = {OP_ANNOTATION: index}
        if isinstance(op, Conv2D):
            return convolution(op, ifms[0], self.conv_constants(op, name), name, attrs)
        if isinstance(op, Pooling):
            return pooling(op, ifms[0], name, attrs)
        if isinstance(op, BinaryElementwise):
            rhs = ifms[1] if len(ifms) > 1 else None
            if op.ifm2_constant is not None:
                rhs = self.constant(f"{name}_ifm2", op.ifm2_constant)
            return binary_elementwise(op, ifms[0], rhs, name, attrs)
        if isinstance(op, Identity):
            table = sigmoid_table() if op.function else op.lut
            lut = None if table is None else self.constant(f"{name}_lut", table)
            return identity(op, ifms[0], lut, name, attrs)
        if isinstance(op, Softmax) and op.reciprocal_lut is not None:
            return softmax_int16(op, ifms[0], self.constant(f"{name}_exp_lut", op.exp_lut.view(np.int32)),
                                 self.constant(f"{name}_reciprocal_lut", op.reciprocal_lut.view(np.int32)), name, attrs)
        if isinstance(op, Softmax):
            return softmax(op, ifms[0], self.constant(f"{name}_exp_lut", op.exp_lut), name, attrs)
        if isinstance(op, Concatenate):
            return concatenate(op, ifms, name, attrs)
        if isinstance(op, Pad):
            return pad(op, ifms[0], name, attrs)
        if isinstance(op, Slice):
            return slice_box(op, ifms[0], name, attrs)
        if isinstance(op, Upscale):
            return upscale(op, ifms[0], name, attrs)
        if isinstance(op, Transpose):
            return transpose(op, ifms[0], name, attrs)
        raise TypeError(f"no TE definition for {type(op).__name__}")

    def build(self) -> TeGraph:
        for index, op in enumerate(self.graph.ops):
            self.tensors[op.ofm.tensor.name] = self.lower(index, op)
        outputs = tuple(self.tensors[t.name] for t in self.graph.outputs)
        return TeGraph(self.graph.name, self.inputs, tuple(self.constants), outputs, dict(self.tensors))


def _c_name(name: str) -> str:
    """TFLite tensor names carry ':' and '/'; keep TE/TIR names identifier-like."""
    return "".join(ch if ch.isalnum() else "_" for ch in name)


def te_graph(graph: NpuGraph) -> TeGraph:
    """Build the TE graph of one NPU subgraph."""
    return _Builder(graph).build()
