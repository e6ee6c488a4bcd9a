"""An NPU subgraph as a cascader graph: one part per primitive.

Each part's propagators are derived from the primitive's TE definition (`derive_propagator`), with the per-operator
definition as the fallback where the reads are not affine (a table lookup); its stripe cost is the callable the
caller hands in (code generation's `codegen.stripe_cost`).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ...legalize.ops import (
    BinaryElementwise,
    Concatenate,
    Conv2D,
    DepthwiseConv2D,
    Identity,
    NpuGraph,
    Operand,
    Pad,
    Pooling,
    Slice,
    Softmax,
    Transpose,
    TransposeConv2D,
    Upscale,
)
from ...legalize.reuse import concatenation_joins, elementwise_reuse, readers, reshape_views
from ...te import te_graph
from ..derive import (
    binary_elementwise_propagator,
    concatenation_propagator,
    conv2d_propagator,
    depthwise_conv2d_propagator,
    identity_propagator,
    pooling_propagator,
    propagator_for,
    slice_propagator,
    whole_tensor_propagator,
)
from ..graph import CascaderGraph, Part, Tensor, WeightBuffer
from ..propagator import Propagator

# (primitive, output stripe shape, input stripe shapes) → estimated cycles
PrimitiveCost = Callable[[object, tuple[int, ...], tuple[tuple[int, ...], ...]], int]
# (primitive, output stripe shape, input stripe shapes) → the stripe's weight buffer option, or None
PrimitiveBuffer = Callable[[object, tuple[int, ...], tuple[tuple[int, ...], ...]], WeightBuffer | None]


def definition(op, operand: Operand) -> Propagator:
    """The per-operator propagator of `op` for one of its inputs."""
    in_shape, out_shape = operand.tensor.shape, op.ofm.tensor.shape
    if isinstance(op, (Transpose, TransposeConv2D, Upscale)) or isinstance(op, Pooling) and op.upscale:
        return whole_tensor_propagator(in_shape, len(out_shape))
    if isinstance(op, DepthwiseConv2D):
        return depthwise_conv2d_propagator(op.kernel, op.strides, op.dilation, (op.padding.top, op.padding.left),
                                           out_shape[3] // in_shape[3])
    if isinstance(op, Conv2D):
        return conv2d_propagator(op.kernel, in_shape[3], op.strides, op.dilation, (op.padding.top, op.padding.left))
    if isinstance(op, Softmax) or isinstance(op, Pooling) and op.pooling_type == "REDUCE_SUM":
        # every output row reads its whole input row (the depth axis)
        return Propagator.affine([[int(i == j and i < 3) for j in range(4)] for i in range(4)],
                                 [0, 0, 0, in_shape[3]], [0, 0, 0, 0])
    if isinstance(op, Pooling):
        return pooling_propagator(op.pool_shape, op.strides, (op.padding.top, op.padding.left))
    if isinstance(op, BinaryElementwise):
        return binary_elementwise_propagator(in_shape, out_shape)
    if isinstance(op, Identity):
        return identity_propagator(in_shape, out_shape)
    if isinstance(op, Concatenate):
        return concatenation_propagator(in_shape, op.axis)
    if isinstance(op, Slice):
        return slice_propagator(op.begin)
    if isinstance(op, Pad):
        return slice_propagator(tuple(-before for before in op.before))
    raise TypeError(f"no propagator for {type(op).__name__}")


def _tensor(tensor) -> Tensor:
    return Tensor(tensor.name, tuple(tensor.shape), np.dtype(tensor.dtype).itemsize)


def cascader_graph(graph: NpuGraph, cost: PrimitiveCost, in_scratch: frozenset[str] = frozenset(),
                   buffer: PrimitiveBuffer | None = None, order: Sequence[int] | None = None,
                   overlap: PrimitiveCost | None = None) -> CascaderGraph:
    """The parts of `graph`: one per primitive, in the execution order `order` (primitive indices; None: the
    graph's list). The budgeted memory (the NPU's scratch) holds every intermediate feature map and the graph
    inputs/outputs named in `in_scratch`; `buffer` gives the weight buffer options of a primitive's stripes (None:
    no part has any) and `overlap` the cycles of a stripe a weight transfer can run in (None: all)."""
    built = te_graph(graph)
    reused, joins, views = elementwise_reuse(graph), concatenation_joins(graph), reshape_views(graph)
    reads = readers(graph)
    parts = []
    for index in (range(len(graph.ops)) if order is None else order):
        op = graph.ops[index]
        output = built.tensors[op.ofm.tensor.name]
        reshape = isinstance(op, Identity) and op.ifm.tensor.shape != op.ofm.tensor.shape
        # Computed whole from whole inputs, so they end a cascade: an upscale or upscaled convolution or pool (its
        # rows halve, which stripes do not model yet), a transpose (its rows are the IFM's columns) and a
        # concatenation along rows (a stripe's rows come from one input or two).
        whole = (reshape or isinstance(op, (Transpose, TransposeConv2D, Upscale))
                 or (isinstance(op, Pooling) and op.upscale) or (isinstance(op, Concatenate) and op.axis == 1))
        # A concatenation reads each input whole along its axis, not at the offset its TE definition shows.
        defined = whole or isinstance(op, Concatenate)
        propagators = tuple(definition(op, o) if defined else
                            propagator_for(output, built.tensors[o.tensor.name], definition(op, o))
                            for o in op.inputs)
        parts.append(Part(
            name=f"{op.op_name} ({op.source})" if op.source else op.op_name,
            inputs=tuple(_tensor(o.tensor) for o in op.inputs),
            output=_tensor(op.ofm.tensor),
            propagators=propagators,
            cost=lambda out_shape, in_shapes, op=op: cost(op, out_shape, in_shapes),
            stripable=not whole,
            buffer=None if buffer is None else lambda out_shape, in_shapes, op=op: buffer(op, out_shape, in_shapes),
            overlap=None if overlap is None else lambda out_shape, in_shapes, op=op: overlap(op, out_shape, in_shapes),
            # A view's output takes its input's buffer, as an elementwise output does, where nothing else reads it.
            reuses=reused.get(index, views[index] if index in views and len(reads[views[index]]) == 1 else None),
            joins=joins.get(index, ()),
            view=index in views,
        ))
    io = {t.name for t in graph.inputs + graph.outputs}
    scratch = frozenset({p.output.name for p in parts if p.output.name not in io} | set(in_scratch))
    return CascaderGraph(tuple(parts), tuple(_tensor(t) for t in graph.inputs),
                         tuple(_tensor(t) for t in graph.outputs), scratch)
