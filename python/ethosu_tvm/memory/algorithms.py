"""Planning algorithms: each chooses the order in which first-fit places the buffers.

`greedy_by_size` and `greedy_by_conflicts` follow the orders of TVM's former USMP; `hill_climb` improves an order
by seeded random swaps; `exact` searches all orders with branch and bound and can prove a plan optimal.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable

from .buffers import Allocation, BufferInfo, PoolInfo
from .placement import Replacer, conflict_map, first_fit, peak_live_bytes, place


@dataclass(frozen=True)
class Result:
    allocations: list[Allocation]
    proven_optimal: bool = False


def extents(allocations: list[Allocation]) -> dict[str, int]:
    """The highest end address used in each pool."""
    result: dict[str, int] = {}
    for a in allocations:
        result[a.pool] = max(result.get(a.pool, 0), a.end)
    return result


def _cost(allocations: list[Allocation]) -> int:
    """Total bytes over all pools: the sum of each pool's extent."""
    return sum(extents(allocations).values())


def _size_order(buffers: list[BufferInfo]) -> list[BufferInfo]:
    return sorted(buffers, key=lambda b: (-b.size, b.first_use, b.name))


def greedy_by_size(buffers: list[BufferInfo], pools: list[PoolInfo], **_) -> Result:
    """Largest buffers first (ties: earliest, then by name)."""
    return Result(place(_size_order(buffers), pools, conflict_map(buffers)))


def _conflict_order(buffers: list[BufferInfo], conflicts: dict[str, list[BufferInfo]]) -> list[BufferInfo]:
    pressure = {b.name: sum(o.size for o in conflicts[b.name]) for b in buffers}
    return sorted(buffers, key=lambda b: (-pressure[b.name], -b.size, b.name))


def greedy_by_conflicts(buffers: list[BufferInfo], pools: list[PoolInfo], **_) -> Result:
    """Buffers with the most bytes live beside them first (ties: larger, then by name)."""
    conflicts = conflict_map(buffers)
    return Result(place(_conflict_order(buffers, conflicts), pools, conflicts))


def hill_climb(buffers: list[BufferInfo], pools: list[PoolInfo], seed: int = 0, iterations: int | None = None,
               **_) -> Result:
    """Start from the better greedy order and keep random swaps of two positions that do not make the plan larger.

    Deterministic for a given seed. Accepting equal-cost swaps lets the search cross plateaus. By default it
    tries 20 swaps per pair of buffers, at most 4000.
    """
    conflicts = conflict_map(buffers)
    starts = [_size_order(buffers), _conflict_order(buffers, conflicts)]
    order, best = min(((o, place(o, pools, conflicts)) for o in starts), key=lambda item: _cost(item[1]))
    if len(order) < 2:
        return Result(best)
    rng = random.Random(seed)
    replacer = Replacer(order, pools, conflicts)
    for _ in range(iterations if iterations is not None else min(4000, 10 * len(order) ** 2)):
        i, j = rng.sample(range(len(order)), 2)
        replacer.try_swap(i, j, limit=replacer.cost())
    return Result(replacer.allocations())


def exact(buffers: list[BufferInfo], pools: list[PoolInfo], node_budget: int = 200_000, **_) -> Result:
    """Branch and bound over placement orders (first-fit reaches every optimum, see `placement`).

    Starts from the hill-climbing plan, stops early at the live-bytes lower bound, and claims optimality only if
    the search finished within `node_budget` placements.
    """
    conflicts = conflict_map(buffers)
    best = hill_climb(buffers, pools).allocations
    best_cost = _cost(best)
    lower_bound = peak_live_bytes(buffers) if len(pools) == 1 else 0
    nodes = 0

    def search(remaining: list[BufferInfo], placed: dict[str, Allocation], extents: dict[str, int]) -> bool:
        """Depth-first over the next buffer to place; False when the node budget ran out."""
        nonlocal best, best_cost, nodes
        if not remaining:
            best, best_cost = list(placed.values()), sum(extents.values())
            return True
        for index, buffer in enumerate(remaining):
            if best_cost <= lower_bound:
                return True
            nodes += 1
            if nodes > node_budget:
                return False
            allocation = first_fit(buffer, pools, conflicts, placed)
            if allocation is None:
                continue
            grown = dict(extents)
            grown[allocation.pool] = max(grown.get(allocation.pool, 0), allocation.end)
            if sum(grown.values()) >= best_cost:
                continue
            placed[buffer.name] = allocation
            finished = search(remaining[:index] + remaining[index + 1:], placed, grown)
            del placed[buffer.name]
            if not finished:
                return False
        return True

    proven = search(_size_order(buffers), {}, {})  # before reading `best`, which the search improves
    return Result(best, proven_optimal=proven)


ALGORITHMS: dict[str, Callable[..., Result]] = {
    "greedy_by_size": greedy_by_size,
    "greedy_by_conflicts": greedy_by_conflicts,
    "hill_climb": hill_climb,
    "exact": exact,
}
