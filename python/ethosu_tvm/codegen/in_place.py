"""Tensors written in place, as Vela's compiler writes them.

Concatenations: an input's producer writes its OFM straight into its slice of the concatenation's output, and the
copy of that input disappears. Elementwise operations: the output lives in the buffer of an input that nothing
else reads (`legalize.reuse`), at the same offset and strides. Identities (reshapes, copies): the input's producer
writes it where the output goes, in the input's own layout (a view), and the identity disappears; views are
always taken, as the cascader counts them (`legalize.reuse.reshape_views`).

An input qualifies when `legalize.reuse.concatenation_joins` allows it (it is concatenated once, other readers
read through strides, an NPU primitive of the subgraph writing its OFM through strides produces it, it is not a
subgraph input or output) and either neither it nor the output lives in a rolling buffer smaller than the tensor
(the slice is the input's whole buffer, at a fixed offset; a ring as large as its tensor, as in a cascade of one
stripe, never wraps) or, inside a cascade, the concatenation is its only reader, both are rings of the same rows
and the concatenation joins them along the width or the depth (row y is ring row y mod R in both, so the input's
producer writes each row where the concatenation would have copied it, in the same stripe). Code generation keeps
each such input in place unless the memory plan grows (`codegen.artifact`). Concatenations have equal input and
output quantizations (see `legalize.ops.Concatenate`), so the producer's arithmetic does not change; only where its
bytes land. An elementwise output qualifies under the same condition on rolling buffers: each stripe then writes
the rows it has read.
"""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, replace

import numpy as np

from ..legalize.ops import Concatenate, Identity, NpuGraph
from ..legalize.reuse import concatenation_joins, elementwise_reuse, readers, reshape_views
from .tir_to_npu import FeatureMapRegion, Stripe


@dataclass(frozen=True)
class Alias:
    """A tensor that lives inside `root`'s buffer, `offset` bytes from its start, laid out with `root`'s strides,
    or in its own layout when it is a `view` (an identity's input written where its output goes)."""

    root: str
    offset: int
    view: bool = False


def _shapes(graph: NpuGraph) -> dict[str, tuple[tuple[int, ...], str]]:
    """(shape, dtype) of every tensor an operation of the subgraph reads or writes."""
    found = {}
    for op in graph.ops:
        for operand in (*op.inputs, op.ofm):
            found[operand.tensor.name] = (operand.tensor.shape, operand.tensor.dtype)
    return found


def _byte_strides(shape: tuple[int, ...], dtype: str) -> tuple[int, ...]:
    element = np.dtype(dtype).itemsize
    return tuple(math.prod(shape[axis + 1:]) * element for axis in range(len(shape)))


# (the buffer's tensor, its axis, where the tensor starts along it): a concatenation's output and where an input
# starts along its axis, an elementwise input the output overwrites (axis and start 0), or the output of an identity
# whose input is written in its place (axis VIEW, start 0)
Place = tuple[str, int, int]
VIEW = -1


def candidates(graph: NpuGraph, stripes: list[Stripe]) -> dict[str, Place]:
    """Every tensor that may be written in place, and where it goes: concatenation inputs into the output, then
    elementwise outputs into the input they overwrite (unless they are such a concatenation input)."""
    # A tensor placed inside another is addressed in that one's layout: each of its regions must be laid out as the
    # tensor itself (`unwrapped`; a ring as large as its tensor, as in a one-stripe cascade, never wraps). The
    # tensor it goes into only needs a whole buffer (`whole`: no ring smaller than it; a reshape reads it as it is).
    unwrapped: dict[str, bool] = defaultdict(lambda: True)
    whole: dict[str, bool] = defaultdict(lambda: True)
    layouts: dict[str, set] = defaultdict(set)
    shapes = _shapes(graph)
    views = reshape_views(graph)
    # As `unwrapped`, without the identities' reads of their inputs (a reshape reads it in its own shape), which go
    # when the input is written in the identity's output's place.
    unwrapped_elsewhere: dict[str, bool] = defaultdict(lambda: True)
    for stripe in stripes:
        for region in (stripe.ofm, *stripe.ifms):
            if region.tensor in shapes:
                shape = shapes[region.tensor][0]
                unwrapped[region.tensor] &= region.layout == shape
                whole[region.tensor] &= math.prod(region.layout) >= math.prod(shape)
                layouts[region.tensor].add(region.layout)
                if region is stripe.ofm or stripe.op not in views:
                    unwrapped_elsewhere[region.tensor] &= region.layout == shape

    def ring_rows(name: str) -> int | None:
        """The rows of the ring every region of `name` is laid out in (None: not one ring of rows)."""
        if len(layouts[name]) != 1:
            return None
        (layout,), shape = layouts[name], shapes[name][0]
        same_else = layout[0] == shape[0] and layout[2:] == shape[2:]
        return layout[1] if same_else and layout[1] < shape[1] else None

    reads = readers(graph)
    found: dict[str, Place] = {}
    for index, joins in concatenation_joins(graph).items():
        op = graph.ops[index]
        output = op.ofm.tensor.name
        # Into a whole buffer, or, when the output is a ring of rows (inside a cascade) joined along the width or
        # the depth, from a ring of as many rows: row y of both is ring row y mod R, so the input's rows land
        # where the concatenation would have copied them, in the same stripe (an input other primitives read too
        # only into a whole buffer: their stripes may read rows the ring has dropped).
        rows = ring_rows(output) if op.axis in (2, 3) else None
        if not whole[output] and rows is None:
            continue
        for operand, start in zip(op.inputs, op.offsets):
            name = operand.tensor.name
            if name in joins and (unwrapped[name] if whole[output]
                                  else ring_rows(name) == rows and len(reads[name]) == 1):
                found[name] = (output, op.axis, start)
    for index, name in elementwise_reuse(graph).items():
        output = graph.ops[index].ofm.tensor.name
        if output not in found and unwrapped[output] and whole[name]:
            found[output] = (name, 0, 0)
    # Identity inputs written in their outputs' places in their own layout, where both are laid out whole.
    for index, name in views.items():
        output = graph.ops[index].ofm.tensor.name
        if unwrapped_elsewhere[name] and unwrapped[output] and whole[output]:
            found[name] = (output, VIEW, 0)
    return found


def write_in_place(graph: NpuGraph, stripes: list[Stripe], chosen: dict[str, Place]
                   ) -> tuple[list[Stripe], dict[str, Alias]]:
    """The stripes without the copies of the `chosen` concatenation inputs, every region of a chosen tensor laid
    out as the buffer it lives in; and where each of them lives (nested places resolve to the outermost buffer)."""
    shapes = _shapes(graph)
    # The layout each buffer is written in (a ring's rows; else its own shape, even where reshapes read it).
    storage = {stripe.ofm.tensor: stripe.ofm.layout for stripe in stripes}

    def layout_of(root: str) -> tuple[int, ...]:
        return storage.get(root, shapes[root][0])

    def resolve(name: str) -> Alias:
        if name not in chosen:
            return Alias(name, 0)
        outer, axis, start = chosen[name]
        alias = resolve(outer)
        if axis == VIEW:
            return Alias(alias.root, alias.offset, view=True)
        strides = _byte_strides(layout_of(alias.root), shapes[alias.root][1])
        return Alias(alias.root, alias.offset + start * strides[axis])

    aliases = {name: resolve(name) for name in chosen}

    def laid_out(region: FeatureMapRegion) -> FeatureMapRegion:
        alias = aliases.get(region.tensor)
        return region if alias is None or alias.view else replace(region, layout=layout_of(alias.root))

    def copied(stripe: Stripe) -> bool:
        """A concatenation's copy of an input written in place, or an identity whose input is written in place of
        its output."""
        op = graph.ops[stripe.op]
        if isinstance(op, Concatenate):
            return stripe.ifms[0].tensor in aliases
        return isinstance(op, Identity) and chosen.get(op.ifm.tensor.name) == (op.ofm.tensor.name, VIEW, 0)

    def relaid(stripe: Stripe) -> Stripe:
        if stripe.ofm.tensor not in aliases and not any(region.tensor in aliases for region in stripe.ifms):
            return stripe
        return Stripe(stripe.op, laid_out(stripe.ofm), tuple(laid_out(region) for region in stripe.ifms))

    kept = [relaid(stripe) for stripe in stripes if not copied(stripe)]
    return kept, aliases
