"""Outputs that may take their inputs' memory (Vela's compiler does the same): an elementwise operation's output
written over one of its inputs, and a concatenation's inputs written into their places in its output.

The NPU computes an elementwise operation OFM block by OFM block, each block reading the IFM elements at its own
positions before writing them, so an output with the same shape and element type as an input may live in that
input's buffer once nothing else reads it: the two tensors then take the memory of one. An input qualifies when
this operation is its only reader in the subgraph (no other operation sees it overwritten) and neither it nor the
output is a subgraph input or output (those live where the application put them).

A concatenation's input may be written by its producer straight into its place in the output, under the same
conditions, when it is concatenated once and its producer writes its OFM through the feature map's strides (a
softmax and a transpose lay their OFM out themselves). Whether it is, depends on the buffers the schedule gives
the two (`codegen.in_place`; the cascader counts it as code generation does).
"""
from __future__ import annotations

from collections import Counter

from .ops import BinaryElementwise, Concatenate, NpuGraph, Softmax, Transpose

# Primitives whose code generation lays out the OFM itself instead of through its feature map's strides: their
# output cannot be written into another tensor's buffer in place.
_OWN_OFM_LAYOUT = (Softmax, Transpose)


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
    reads = Counter(operand.tensor.name for op in graph.ops for operand in op.inputs)
    boundary = {tensor.name for tensor in (*graph.inputs, *graph.outputs)}
    producers = {op.ofm.tensor.name: op for op in graph.ops}
    found = {}
    for index, op in enumerate(graph.ops):
        if not isinstance(op, Concatenate):
            continue
        joins = tuple(operand.tensor.name for operand in op.inputs
                      if reads[operand.tensor.name] == 1 and operand.tensor.name not in boundary
                      and operand.tensor.name in producers
                      and not isinstance(producers[operand.tensor.name], _OWN_OFM_LAYOUT))
        if joins:
            found[index] = joins
    return found
