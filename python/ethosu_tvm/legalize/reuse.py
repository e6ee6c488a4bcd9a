"""Elementwise operations that may write their output over one of their inputs (Vela's compiler does the same).

The NPU computes an elementwise operation OFM block by OFM block, each block reading the IFM elements at its own
positions before writing them, so an output with the same shape and element type as an input may live in that
input's buffer once nothing else reads it: the two tensors then take the memory of one. An input qualifies when
this operation is its only reader in the subgraph (no other operation sees it overwritten) and neither it nor the
output is a subgraph input or output (those live where the application put them).
"""
from __future__ import annotations

from collections import Counter

from .ops import BinaryElementwise, NpuGraph


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
