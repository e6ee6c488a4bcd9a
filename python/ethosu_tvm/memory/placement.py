"""First-fit placement: the one placement rule every planning algorithm shares.

Buffers are placed one after another at the lowest aligned offset of the first pool (in the user's order) where
they overlap no already-placed buffer they are live with. Every optimal plan is reachable this way: placing the
buffers of an optimal plan in increasing order of their offsets puts each at or below its optimal offset. The
algorithms therefore only differ in the order they choose.
"""
from __future__ import annotations

from ..arch import round_up
from .buffers import Allocation, BufferInfo, PlanDoesNotFit, PoolInfo


def lowest_offset(size: int, alignment: int, occupied: list[tuple[int, int]]) -> int:
    """The lowest `alignment`-aligned offset where `size` bytes overlap none of the (start, end) ranges given."""
    offset = 0
    for start, end in sorted(occupied):
        if offset + size <= start:
            break
        if end > offset:
            offset = round_up(end, alignment)
    return offset


def allowed_pools(buffer: BufferInfo, pools: list[PoolInfo]) -> list[PoolInfo]:
    allowed = [p for p in pools if not buffer.pools or p.name in buffer.pools]
    if not allowed:
        raise PlanDoesNotFit(f"buffer {buffer.name!r} may only live in {', '.join(buffer.pools)}, "
                             f"but the pools are {', '.join(p.name for p in pools)}")
    return allowed


def first_fit(buffer: BufferInfo, pools: list[PoolInfo], conflicts: dict[str, list[BufferInfo]],
              placed: dict[str, Allocation]) -> Allocation | None:
    """The lowest free offset for `buffer` in the first allowed pool that has room within its size hint."""
    for pool in allowed_pools(buffer, pools):
        occupied = [(a.offset, a.end) for other in conflicts[buffer.name]
                    if (a := placed.get(other.name)) is not None and a.pool == pool.name]
        offset = lowest_offset(buffer.size, buffer.alignment, occupied)
        if pool.size_hint_bytes is None or offset + buffer.size <= pool.size_hint_bytes:
            return Allocation(buffer, pool.name, offset)
    return None


def place(order: list[BufferInfo], pools: list[PoolInfo], conflicts: dict[str, list[BufferInfo]],
          limit: int | None = None) -> list[Allocation] | None:
    """First-fit placement of `order`; None as soon as the summed pool extents exceed `limit` (for pruning).

    Raises BufferDoesNotFit when a buffer fits no allowed pool within its size hint.
    """
    placed: dict[str, Allocation] = {}
    extents = {p.name: 0 for p in pools}
    for buffer in order:
        allocation = first_fit(buffer, pools, conflicts, placed)
        if allocation is None:
            raise BufferDoesNotFit(buffer, allowed_pools(buffer, pools))
        placed[buffer.name] = allocation
        extents[allocation.pool] = max(extents[allocation.pool], allocation.end)
        if limit is not None and sum(extents.values()) > limit:
            return None
    return list(placed.values())


class Replacer:
    """First-fit placement of one order and of its variants, re-placing only from the first position that changed.

    First-fit places a buffer by the buffers before it alone, so the unchanged prefix keeps its offsets: `try_swap`
    gives exactly what `place` gives for the swapped order, with about half the work, on integer indices.
    """

    def __init__(self, order: list[BufferInfo], pools: list[PoolInfo], conflicts: dict[str, list[BufferInfo]]):
        index = {b.name: k for k, b in enumerate(order)}
        self.buffers = list(order)
        self.pools = pools
        self.conflicts = [[index[o.name] for o in conflicts[b.name]] for b in order]
        pool_index = {p.name: k for k, p in enumerate(pools)}
        self.allowed = [[pool_index[p.name] for p in allowed_pools(b, pools)] for b in order]
        self.order = list(range(len(order)))
        self.position = list(range(len(order)))
        self.offset = [0] * len(order)
        self.pool = [0] * len(order)
        self.total = [0] * len(order)  # summed pool extents after each position
        self.extents = [[0] * len(pools) for _ in order]  # each pool's extent after each position
        if not self._place_from(0, self.order, self.position, self.offset, self.pool, self.total, self.extents,
                                None):
            raise AssertionError("unlimited placement cannot be pruned")

    def cost(self) -> int:
        return self.total[-1] if self.total else 0

    def allocations(self) -> list[Allocation]:
        """The current placement, in placement order (as `place` returns it)."""
        return [Allocation(self.buffers[b], self.pools[self.pool[b]].name, self.offset[b]) for b in self.order]

    def try_swap(self, i: int, j: int, limit: int) -> bool:
        """Swap positions i and j and keep the result if its summed extents stay within `limit`."""
        first = min(i, j)
        order, position = list(self.order), list(self.position)
        order[i], order[j] = order[j], order[i]
        position[order[i]], position[order[j]] = i, j
        offset, pool, total, extents = list(self.offset), list(self.pool), list(self.total), list(self.extents)
        if not self._place_from(first, order, position, offset, pool, total, extents, limit):
            return False
        self.order, self.position, self.offset, self.pool, self.total, self.extents = \
            order, position, offset, pool, total, extents
        return True

    def _place_from(self, start, order, position, offset, pool, total, extents, limit) -> bool:
        """First-fit of order[start:] into the given arrays; False as soon as the extents exceed `limit`."""
        current = list(extents[start - 1]) if start else [0] * len(self.pools)
        for k in range(start, len(order)):
            b = order[k]
            size, alignment = self.buffers[b].size, self.buffers[b].alignment
            for p in self.allowed[b]:
                found = lowest_offset(size, alignment, [(offset[o], offset[o] + self.buffers[o].size)
                                                         for o in self.conflicts[b]
                                                         if position[o] < k and pool[o] == p])
                hint = self.pools[p].size_hint_bytes
                if hint is None or found + size <= hint:
                    break
            else:
                raise BufferDoesNotFit(self.buffers[b], allowed_pools(self.buffers[b], self.pools))
            offset[b], pool[b] = found, p
            current[p] = max(current[p], found + size)
            total[k] = sum(current)
            extents[k] = list(current)
            if limit is not None and total[k] > limit:
                return False
        return True


class BufferDoesNotFit(PlanDoesNotFit):
    """First-fit found no room for `buffer` in any of `pools` (the planner turns this into the user's message)."""

    def __init__(self, buffer: BufferInfo, pools: list[PoolInfo]):
        super().__init__(f"buffer {buffer.name!r} ({buffer.size} bytes) fits in none of the pools "
                         f"{', '.join(p.name for p in pools)}")
        self.buffer = buffer
        self.pools = pools


def conflict_map(buffers: list[BufferInfo]) -> dict[str, list[BufferInfo]]:
    """For each buffer, the buffers live at the same time as it (sweep over start times)."""
    result: dict[str, list[BufferInfo]] = {b.name: [] for b in buffers}
    ordered = sorted(buffers, key=lambda b: (b.first_use, b.name))
    for i, a in enumerate(ordered):
        for b in ordered[i + 1:]:
            if b.first_use > a.last_use:
                break
            result[a.name].append(b)
            result[b.name].append(a)
    return result


def peak_live_bytes(buffers: list[BufferInfo]) -> int:
    """The largest total size of buffers live at one step: no plan in a single pool can be smaller (a sweep over
    the steps where buffers start and end)."""
    changes: dict[int, int] = {}
    for b in buffers:
        changes[b.first_use] = changes.get(b.first_use, 0) + b.size
        changes[b.last_use + 1] = changes.get(b.last_use + 1, 0) - b.size
    live = peak = 0
    for step in sorted(changes):
        live += changes[step]
        peak = max(peak, live)
    return peak
