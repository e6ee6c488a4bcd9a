"""Outputs that may take their inputs' memory (Vela's compiler does the same): an elementwise operation's output
written over one of its inputs, and a concatenation's inputs written into their places in its output.

The NPU computes an elementwise operation OFM block by OFM block, each block reading the IFM elements at its own
positions before writing them, so an output with the same shape and element type as an input may live in that
input's buffer once nothing else reads it: the two tensors then take the memory of one. An input qualifies when
this operation is its only reader in the subgraph (no other operation sees it overwritten) and neither it nor the
output is a subgraph input or output (those live where the application put them).

A concatenation's input may be written by its producer straight into its place in the output when it is
concatenated once, is not a subgraph input or output, and its producer writes its OFM through the feature map's
strides (a softmax and a transpose lay their OFM out themselves). Other primitives may read it too where they read
through the feature map's strides (`_STRIDED_READERS`): they then find it in its place in the output (an unrolled
LSTM's output state at each step, read by the next step and concatenated into the sequence). Whether it is
written in place depends on the buffers the schedule gives the two (`codegen.in_place`; the cascader counts it as
code generation does).
"""
from __future__ import annotations

from collections import Counter, defaultdict

from .ops import BinaryElementwise, Concatenate, Conv2D, DepthwiseConv2D, NpuGraph, Pooling, Softmax, Transpose

# Primitives whose code generation lays out the OFM itself instead of through its feature map's strides: their
# output cannot be written into another tensor's buffer in place.
_OWN_OFM_LAYOUT = (Softmax, Transpose)
# Primitives whose IFMs are read through their feature maps' strides, so that an input may live inside another
# tensor's buffer.
_STRIDED_READERS = (Conv2D, DepthwiseConv2D, Pooling, BinaryElementwise)


def elementwise_reuse(graph: NpuGraph) -> dict[int, str]:
    """Primitive index → the input whose buffer its output may take, for each elementwise primitive with one."""
    reads = Counter(operand.tensor.name for op in graph.ops for operand in op.inputs)
    boundary = {tensor.name for tensor in (*graph.inputs, *graph.outputs)}
    found = {}
    for index, op in enumerate(graph.ops):
        if not isinstance(op, BinaryElementwise) or op.ofm.tensor.name in boundary:
            continue
        for operand in op.inputs:
            tensor = operand.tensor
            if (tensor.shape == op.ofm.tensor.shape and tensor.dtype == op.ofm.tensor.dtype
                    and reads[tensor.name] == 1 and tensor.name not in boundary):
                found[index] = tensor.name
                break
    return found


def concatenation_joins(graph: NpuGraph) -> dict[int, tuple[str, ...]]:
    """Primitive index → the inputs that may be written into their places in its output, for each concatenation
    with any."""
    readers = defaultdict(list)  # one entry per operand that reads the tensor
    for op in graph.ops:
        for operand in op.inputs:
            readers[operand.tensor.name].append(op)
    boundary = {tensor.name for tensor in (*graph.inputs, *graph.outputs)}
    producers = {op.ofm.tensor.name: op for op in graph.ops}

    overwritten = set(elementwise_reuse(graph).values())

    def joinable(name: str) -> bool:
        concatenated = [op for op in readers[name] if isinstance(op, Concatenate)]
        if len(concatenated) != 1 or name in boundary or name not in producers \
                or isinstance(producers[name], _OWN_OFM_LAYOUT):
            return False
        if len(readers[name]) == 1:
            return True
        # Other readers find it in the output's buffer: only where they read through strides, and where that
        # buffer keeps it as long as they may read it (no elementwise output takes it over, and it goes into no
        # further concatenation, whose buffer might).
        output = concatenated[0].ofm.tensor.name
        return (all(op is concatenated[0] or type(op) in _STRIDED_READERS for op in readers[name])
                and output not in overwritten and not any(isinstance(op, Concatenate) for op in readers[output]))

    found = {}
    for index, op in enumerate(graph.ops):
        if not isinstance(op, Concatenate):
            continue
        joins = tuple(operand.tensor.name for operand in op.inputs if joinable(operand.tensor.name))
        if joins:
            found[index] = joins
    return found
