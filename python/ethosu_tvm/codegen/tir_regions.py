"""Which parts of which buffers a TIR block instance reads and writes, as integer boxes.

Accesses are the buffer loads and stores in a block's body, bounded with tvm.sym over the range of each of the
block's iteration variables. Regions are in *logical* tensor coordinates: a buffer axis that every store indexes as
``floormod(i, R)``, R the axis' extent, is a ring (``Schedule.rolling_buffer`` makes them) and is analysed as ``i``.
Reads are not clipped to the tensor: a convolution's padding shows up as rows before 0 or past the last one.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import tvm.ir.prim.expr as prim
from tvm import ir, s_tir, sym, tirx

from .vela_calls import CodegenError


@dataclass(frozen=True)
class Interval:
    """The integers start, start + 1, ..., stop − 1."""

    start: int
    stop: int

    @property
    def extent(self) -> int:
        return self.stop - self.start

    def hull(self, other: Interval) -> Interval:
        return Interval(min(self.start, other.start), max(self.stop, other.stop))


Box = tuple[Interval, ...]


def hull(a: Box, b: Box) -> Box:
    """The smallest box holding both."""
    return tuple(x.hull(y) for x, y in zip(a, b))


@dataclass(frozen=True, eq=False)
class Access:
    """One load or store: the buffer (a TIR buffer Var) and its index expressions."""

    buffer: ir.expr.Var
    indices: tuple[ir.PrimExpr, ...]


def _loads(expr, found: list[Access]) -> None:
    """Append the loads in `expr` in depth-first order; only the expression kinds the TE definitions produce are
    expected. Walked with a stack of its own: a concatenation of many inputs nests one select per input."""
    pending = [expr]
    while pending:
        expr = pending.pop()
        if isinstance(expr, ir.expr.TensorLoad):
            found.append(Access(expr.source, tuple(expr.indices)))
            children = expr.indices
        elif isinstance(expr, (prim.BinaryOpExpr, prim.CmpExpr, prim.And, prim.Or)):
            children = (expr.a, expr.b)
        elif isinstance(expr, prim.Not):
            children = (expr.a,)
        elif isinstance(expr, prim.Cast):
            children = (expr.value,)
        elif isinstance(expr, prim.Select):
            children = (expr.condition, expr.true_value, expr.false_value)
        elif isinstance(expr, prim.Let):  # the TE definitions bind values used more than once
            children = (expr.value, expr.body)
        elif isinstance(expr, ir.Call):
            children = expr.args
        elif isinstance(expr, (prim.IntImm, prim.FloatImm, prim.Var)):
            children = ()
        else:
            raise CodegenError(f"unexpected {type(expr).__name__} in an NPU primitive's TIR: {expr}")
        pending.extend(reversed(list(children)))


def _stores(block: s_tir.SBlock) -> list[tirx.BufferStore]:
    body = block.body
    statements = body.seq if isinstance(body, tirx.SeqStmt) else [body]
    if not all(isinstance(s, tirx.BufferStore) for s in statements):
        raise CodegenError(f"block {block.name_hint}: expected only buffer stores in its body")
    return list(statements)


def loads(block: s_tir.SBlock) -> list[Access]:
    found: list[Access] = []
    for store in _stores(block):
        _loads(store.value, found)
        for index in store.indices:
            _loads(index, found)
    return found


def stores(block: s_tir.SBlock) -> list[Access]:
    return [Access(store.buffer, tuple(store.indices)) for store in _stores(block)]


def ring_axes(block: s_tir.SBlock, buffer: ir.expr.Var) -> tuple[bool, ...]:
    """Per axis of `buffer`: does `block` (its producer) store it as floormod(i, extent), i.e. as a ring?"""
    accesses = [a for a in stores(block) if a.buffer.same_as(buffer)]
    shape = [int(d) for d in buffer.shape]
    return tuple(all(_ring_index(a.indices[axis], shape[axis]) is not None for a in accesses)
                 for axis in range(len(shape)))


def _ring_index(index, extent: int):
    if isinstance(index, prim.FloorMod) and isinstance(index.b, prim.IntImm) and int(index.b) == extent:
        return index.a
    return None


def logical(access: Access, rings: tuple[bool, ...]) -> tuple[ir.PrimExpr, ...]:
    """The access' indices in tensor coordinates: ring axes lose their wrap-around."""
    indices = []
    for axis, index in enumerate(access.indices):
        if rings[axis]:
            unwrapped = _ring_index(index, int(access.buffer.shape[axis]))
            if unwrapped is None:
                raise CodegenError(f"buffer {access.buffer.name} is a ring on axis {axis}, but {index} does not wrap")
            index = unwrapped
        indices.append(index)
    return tuple(indices)


def bound(indices: Iterable[ir.PrimExpr], domain: Mapping[ir.expr.Var, ir.Range], analyzer: sym.Analyzer) -> Box:
    """The box the indices cover while the variables range over `domain`."""
    region = [ir.Range.from_min_extent(index, 1) for index in indices]
    sets = sym.estimate_region_upper_bound(region, dict(domain), True, analyzer)
    box = []
    for index, interval in zip(region, sets):
        low, high = analyzer.simplify(interval.min_value), analyzer.simplify(interval.max_value)
        if not (isinstance(low, prim.IntImm) and isinstance(high, prim.IntImm)):
            raise CodegenError(f"the range of {index.min} is not constant: [{low}, {high}]")
        box.append(Interval(int(low), int(high) + 1))
    return tuple(box)
