"""Pareto culling on (memory, cycles), with deterministic ties, and thinning a frontier to a bounded size.

The plan search keeps, per decision, only the options that some SRAM limit could prefer: an option is
dropped if another needs no more memory and no more cycles. Results must not depend on the order options were
generated in (set iteration, hash order), or the chosen schedule would change between runs; hence the tie key.
"""
from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

T = TypeVar("T")


def pareto_frontier(
    items: Iterable[T],
    cost: Callable[[T], tuple[Any, Any]],
    tie_key: Callable[[T], Any] | None = None,
) -> list[T]:
    """The items not dominated on cost(item) = (memory, cycles), sorted by increasing memory.

    An item is dominated when another costs no more on both and less on one. Items with the same cost are
    duplicates on the frontier: one is kept, the smallest by `tie_key`, or without a tie key the first in input
    order (the sort is stable), so the result is reproducible.
    """
    decorated = [(cost(item), item) for item in items]
    order = sorted(range(len(decorated)), key=lambda i: decorated[i][0])
    frontier: list[T] = []
    best_cycles = None
    # Only items of equal cost are told apart by the tie key, so it is asked of those alone (a proposal's key
    # holds every plan's).
    for (_, cycles), group in itertools.groupby(order, key=lambda i: decorated[i][0]):
        first = next(group)
        if best_cycles is not None and cycles >= best_cycles:
            continue
        tied = [first, *group]
        chosen = first if tie_key is None or len(tied) == 1 else min(tied, key=lambda i: tie_key(decorated[i][1]))
        frontier.append(decorated[chosen][1])
        best_cycles = cycles
    return frontier


def thin(items: Sequence[T], max_items: int) -> list[T]:
    """At most `max_items` of `items`, evenly spaced by position, keeping the first and the last
    (just the first when `max_items` is 1).

    On a frontier sorted by memory the two ends are the smallest and the fastest options, which must survive
    thinning; the rest are sampled at rounded positions i·(n − 1)/(max_items − 1), in integer arithmetic.
    """
    if max_items < 1:
        raise ValueError(f"max_items must be at least 1, got {max_items}")
    items = list(items)
    if len(items) <= max_items:
        return items
    if max_items == 1:
        return items[:1]
    span, gaps = len(items) - 1, max_items - 1
    return [items[(i * span + gaps // 2) // gaps] for i in range(max_items)]
