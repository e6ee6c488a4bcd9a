"""Concatenations written in place: an input's producer writes its OFM straight into its slice of the
concatenation's output, and the copy of that input disappears (Vela's compiler does the same).

An input qualifies when the concatenation is its only reader, one NPU primitive of the subgraph writes it, neither
it nor the output wraps around a rolling buffer (the slice is the input's whole buffer, at a fixed offset), it is not
a subgraph input or output, and its producer writes its OFM through the feature map's strides (a softmax and a
transpose lay their OFM out themselves). Code generation keeps each such input in place unless the memory plan
grows (`codegen.artifact`). Concatenations have equal input and output quantizations (see
`legalize.ops.Concatenate`), so the producer's arithmetic does not change; only where its bytes land.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace

import numpy as np

from ..legalize.ops import Concatenate, NpuGraph, Softmax, Transpose
from .tir_to_npu import FeatureMapRegion, Stripe

# Primitives whose code generation lays out the OFM itself instead of through its feature map's strides.
_OWN_OFM_LAYOUT = (Softmax, Transpose)


@dataclass(frozen=True)
class Alias:
    """A tensor that lives inside `root`'s buffer, `offset` bytes from its start, laid out with `root`'s strides."""

    root: str
    offset: int


def _shapes(graph: NpuGraph) -> dict[str, tuple[tuple[int, ...], str]]:
    """(shape, dtype) of every tensor an operation of the subgraph reads or writes."""
    found = {}
    for op in graph.ops:
        for operand in (*op.inputs, op.ofm):
            found[operand.tensor.name] = (operand.tensor.shape, operand.tensor.dtype)
    return found


def _byte_strides(shape: tuple[int, ...], dtype: str) -> tuple[int, ...]:
    element = np.dtype(dtype).itemsize
    return tuple(int(np.prod(shape[axis + 1:], dtype=np.int64)) * element for axis in range(len(shape)))


Place = tuple[str, int, int]  # (the concatenation's output, its axis, where the input starts along it)


def candidates(graph: NpuGraph, stripes: list[Stripe]) -> dict[str, Place]:
    """Every concatenation input that may be written in place, and where in the concatenation's output it goes."""
    writers, readers = defaultdict(set), defaultdict(set)
    unwrapped: dict[str, bool] = defaultdict(lambda: True)  # no region of the tensor wraps or is smaller than it
    shapes = _shapes(graph)
    for stripe in stripes:
        writers[stripe.ofm.tensor].add(stripe.op)
        for region in stripe.ifms:
            readers[region.tensor].add(stripe.op)
        for region in (stripe.ofm, *stripe.ifms):
            if region.tensor in shapes:
                unwrapped[region.tensor] &= not any(region.rings) and region.layout == shapes[region.tensor][0]
    boundary = {tensor.name for tensor in (*graph.inputs, *graph.outputs)}
    found: dict[str, Place] = {}
    for index, op in enumerate(graph.ops):
        if not isinstance(op, Concatenate) or not unwrapped[op.ofm.tensor.name]:
            continue
        names = [operand.tensor.name for operand in op.inputs]
        for name, start in zip(names, op.offsets):
            producers = writers[name]
            if (name not in boundary and names.count(name) == 1 and readers[name] == {index} and len(producers) == 1
                    and unwrapped[name] and not isinstance(graph.ops[next(iter(producers))], _OWN_OFM_LAYOUT)):
                found[name] = (op.ofm.tensor.name, op.axis, start)
    return found


def write_in_place(graph: NpuGraph, stripes: list[Stripe], chosen: dict[str, Place]
                   ) -> tuple[list[Stripe], dict[str, Alias]]:
    """The stripes without the copies of the `chosen` inputs, every region of those inputs laid out as the buffer
    they live in; and where each of them lives (nested concatenations resolve to the outermost buffer)."""
    shapes = _shapes(graph)

    def resolve(name: str) -> Alias:
        if name not in chosen:
            return Alias(name, 0)
        outer, axis, start = chosen[name]
        alias = resolve(outer)
        return Alias(alias.root, alias.offset + start * _byte_strides(*shapes[alias.root])[axis])

    aliases = {name: resolve(name) for name in chosen}

    def laid_out(region: FeatureMapRegion) -> FeatureMapRegion:
        alias = aliases.get(region.tensor)
        return region if alias is None else replace(region, layout=shapes[alias.root][0])

    kept = [Stripe(stripe.op, laid_out(stripe.ofm), tuple(laid_out(region) for region in stripe.ifms))
            for stripe in stripes
            if not (isinstance(graph.ops[stripe.op], Concatenate) and stripe.ifms[0].tensor in aliases)]
    return kept, aliases
