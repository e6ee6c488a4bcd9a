"""Outputs that may take their inputs' memory (Vela's compiler does the same): an elementwise operation's output
written over one of its inputs, a concatenation's inputs written into their places in its output, and an
identity's input written where its output goes (`reshape_views`).

The NPU computes an elementwise operation OFM block by OFM block, each block reading the IFM elements at its own
positions before writing them, so an output with the same shape and element type as an input may live in that
input's buffer once nothing else reads it: the two tensors then take the memory of one. An input qualifies when
this operation is its only reader in the subgraph (no other operation sees it overwritten) and neither it nor the
output is a subgraph input or output (those live where the application put them).

A concatenation's input may be written by its producer straight into its place in the output when it is
concatenated once, is not a subgraph input or output, and its producer writes its OFM through the feature map's
strides (a softmax and a transpose lay their OFM out themselves). Other primitives may read it too where they read
through the feature map's strides (`_STRIDED_READERS`): they then find it in its place in the output (a U-Net's
skip connection, read by a convolution and concatenated with its result). Whether it is written in place depends
on the buffers the schedule gives the two (`codegen.in_place`; the cascader counts it as code generation does).
"""
from __future__ import annotations

from collections import defaultdict

from .ops import (BinaryElementwise, Concatenate, Conv2D, DepthwiseConv2D, Identity, NpuGraph, Pooling, Softmax,
                  Transpose)

# Primitives whose code generation lays out the OFM itself instead of through its feature map's strides: their
# output cannot be written into another tensor's buffer in place.
_OWN_OFM_LAYOUT = (Softmax, Transpose)
# Primitives whose IFMs are read through their feature maps' strides, so that an input may live inside another
# tensor's buffer.
_STRIDED_READERS = (Conv2D, DepthwiseConv2D, Pooling, BinaryElementwise)


def readers(graph: NpuGraph) -> dict[str, list]:
    """Tensor name → the primitives that read it, once per operand (an operation reading it twice is there twice)."""
    found = defaultdict(list)
    for op in graph.ops:
        for operand in op.inputs:
            found[operand.tensor.name].append(op)
    return found


def elementwise_reuse(graph: NpuGraph) -> dict[int, str]:
    """Primitive index → the input whose buffer its output may take, for each elementwise primitive with one."""
    reads = readers(graph)
    boundary = {tensor.name for tensor in (*graph.inputs, *graph.outputs)}
    found = {}
    for index, op in enumerate(graph.ops):
        if not isinstance(op, BinaryElementwise) or op.ofm.tensor.name in boundary:
            continue
        for operand in op.inputs:
            tensor = operand.tensor
            if (tensor.shape == op.ofm.tensor.shape and tensor.dtype == op.ofm.tensor.dtype
                    and len(reads[tensor.name]) == 1 and tensor.name not in boundary):
                found[index] = tensor.name
                break
    return found


def concatenation_joins(graph: NpuGraph) -> dict[int, tuple[str, ...]]:
    """Primitive index → the inputs that may be written into their places in its output, for each concatenation
    with any."""
    reads = readers(graph)
    boundary = {tensor.name for tensor in (*graph.inputs, *graph.outputs)}
    producers = {op.ofm.tensor.name: op for op in graph.ops}

    overwritten = set(elementwise_reuse(graph).values())
    kept = _kept_whole(graph, reads, overwritten)

    def joinable(name: str) -> bool:
        concatenated = [op for op in reads[name] if isinstance(op, Concatenate)]
        if len(concatenated) != 1 or name in boundary or name not in producers \
                or isinstance(producers[name], _OWN_OFM_LAYOUT):
            return False
        if len(reads[name]) == 1:
            return True
        # Other readers find it in the output's buffer: only where they read through strides, and where that
        # buffer keeps it as long as they may read it.
        return (all(op is concatenated[0] or type(op) in _STRIDED_READERS for op in reads[name])
                and concatenated[0].ofm.tensor.name in kept)

    found = {}
    for index, op in enumerate(graph.ops):
        if not isinstance(op, Concatenate):
            continue
        joins = tuple(operand.tensor.name for operand in op.inputs if joinable(operand.tensor.name))
        if joins:
            found[index] = joins
    return found


def _kept_whole(graph: NpuGraph, reads: dict, overwritten: set[str]) -> set[str]:
    """Tensors whose buffer holds their bytes until the buffer's end: no elementwise output takes it over, and
    they go into no concatenation (whose buffer might be taken over, or go into another)."""
    return {op.ofm.tensor.name for op in graph.ops
            if op.ofm.tensor.name not in overwritten
            and not any(isinstance(reader, Concatenate) for reader in reads[op.ofm.tensor.name])}


def contiguous(shape: tuple[int, ...], layout: tuple[int, ...]) -> bool:
    """Whether a box of `shape` in a buffer laid out as `layout` (offset along one axis) is one run of bytes in its
    own row-major order: ones before some axis, the buffer's whole extents after it."""
    first = next((k for k, extent in enumerate(shape) if extent > 1), len(shape) - 1)
    return all(shape[k] == layout[k] for k in range(first + 1, len(shape)))


def reshape_views(graph: NpuGraph) -> dict[int, str]:
    """Identity primitive index → its input, for each identity that only moves bytes (a reshape, or a copy: no
    table, no function) whose input may be written straight into its output's buffer in its own layout (the same
    bytes in the same order, so the identity's operation goes; Vela's compiler makes such reshapes views too).

    The input is written by a primitive of the subgraph, is no subgraph input or output, is read by no other
    identity, and takes no other place (it is no concatenation input that may be written in place, no elementwise
    output that may take its input's buffer, no concatenation output with inputs written into it). Where the
    output may be written into a concatenation's output, its place there is one run of bytes, and that output goes
    into no further one. When other primitives read the input too, they find it in the output's buffer, which must
    keep it: the output is no elementwise output's buffer, and a concatenation output it goes into keeps its bytes
    (`_kept_whole`)."""
    reads = readers(graph)
    boundary = {tensor.name for tensor in (*graph.inputs, *graph.outputs)}
    producers = {op.ofm.tensor.name for op in graph.ops}
    reuse = elementwise_reuse(graph)
    overwritten = set(reuse.values())
    kept = _kept_whole(graph, reads, overwritten)
    joins = concatenation_joins(graph)
    placed = ({graph.ops[index].ofm.tensor.name for index in reuse}  # elementwise outputs over an input
              | {name for names in joins.values() for name in names}  # concatenation inputs into the output
              | {graph.ops[index].ofm.tensor.name for index in joins})  # concatenation outputs holding inputs
    join_of = {name: graph.ops[index] for index, names in joins.items() for name in names}
    found = {}
    for index, op in enumerate(graph.ops):
        if not isinstance(op, Identity) or op.lut is not None or op.function or op.input_scale is not None:
            continue
        name, output = op.ifm.tensor.name, op.ofm.tensor.name
        if (name in boundary or name not in producers or name in placed
                or op.ifm.tensor.dtype != op.ofm.tensor.dtype
                or sum(isinstance(reader, Identity) for reader in reads[name]) > 1):  # one place per input
            continue
        if output in join_of and (join_of[output].ofm.tensor.name in join_of
                                  or not contiguous(op.ofm.tensor.shape, join_of[output].ofm.tensor.shape)):
            continue
        if len(reads[name]) > 1:
            concatenations = [reader for reader in reads[output] if isinstance(reader, Concatenate)]
            if output in overwritten or not all(c.ofm.tensor.name in kept for c in concatenations):
                continue
        found[index] = name
    return found
