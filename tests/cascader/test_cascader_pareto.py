"""Pareto culling against the brute-force definition, deterministic ties, and thinning."""
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ethosu_tvm.cascader import pareto_frontier, thin

# Small ranges so that equal memory, equal cycles and exact duplicates happen often.
points = st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6), st.text("abc", max_size=2)), max_size=25)


def cost(point):
    return point[0], point[1]


def brute_force(items, tie_key):
    """Non-dominated cost points, each represented by its smallest item by (tie_key, input position)."""
    def dominated(p):
        return any(q[0] <= p[0] and q[1] <= p[1] and cost(q) != cost(p) for q in items)

    best = {}
    for position, item in enumerate(items):
        if dominated(item):
            continue
        rank = (tie_key(item) if tie_key else (), position)
        if cost(item) not in best or rank < best[cost(item)][0]:
            best[cost(item)] = (rank, item)
    return [best[c][1] for c in sorted(best)]


@given(points)
def test_frontier_matches_the_definition(items):
    assert pareto_frontier(items, cost) == brute_force(items, None)
    assert pareto_frontier(items, cost, tie_key=lambda p: p[2]) == brute_force(items, lambda p: p[2])


@given(points, st.randoms(use_true_random=False))
def test_ties_do_not_depend_on_input_order_with_a_tie_key(items, rng):
    shuffled = list(items)
    rng.shuffle(shuffled)
    by_name = lambda p: p[2]  # noqa: E731
    assert pareto_frontier(shuffled, cost, by_name) == pareto_frontier(items, cost, by_name)


@given(points)
def test_frontier_is_sorted_by_memory_with_falling_cycles(items):
    frontier = pareto_frontier(items, cost)
    assert all(a[0] < b[0] and a[1] > b[1] for a, b in zip(frontier, frontier[1:]))


def test_equal_memory_keeps_the_fastest_and_equal_costs_keep_one():
    items = [(4, 10, "slow"), (4, 7, "fast"), (2, 12, "small"), (4, 7, "also fast"), (9, 7, "big")]
    assert pareto_frontier(items, cost) == [(2, 12, "small"), (4, 7, "fast")]
    assert pareto_frontier(items, cost, tie_key=lambda p: p[2]) == [(2, 12, "small"), (4, 7, "also fast")]
    assert pareto_frontier([], cost) == []


def test_thin_keeps_the_ends_and_spreads_evenly():
    items = list(range(10))
    assert thin(items, 4) == [0, 3, 6, 9]
    assert thin(items, 2) == [0, 9]
    assert thin(items, 1) == [0]
    assert thin(items, 10) == items and thin(items, 50) == items
    with pytest.raises(ValueError):
        thin(items, 0)


@given(st.integers(0, 60), st.integers(1, 70))
def test_thin_properties(length, max_items):
    items = list(range(length))
    kept = thin(items, max_items)
    assert len(kept) == min(length, max_items)
    assert kept == sorted(set(kept))  # a subsequence without repeats
    if length and max_items > 1:
        assert kept[0] == 0 and kept[-1] == length - 1
    assert thin(items, max_items) == kept


def test_cull_then_thin_is_deterministic():
    rng = random.Random(7)
    items = [(rng.randrange(100), rng.randrange(100), str(i)) for i in range(300)]
    frontier = pareto_frontier(items, cost, tie_key=lambda p: p[2])
    assert thin(frontier, 5)[0] == frontier[0] and thin(frontier, 5)[-1] == frontier[-1]
    rng.shuffle(items)
    assert thin(pareto_frontier(items, cost, tie_key=lambda p: p[2]), 5) == thin(frontier, 5)


@given(points)
def test_the_tie_key_is_asked_of_tied_frontier_points_alone(items):
    """A proposal's tie key holds every plan's key: it is asked only of items whose cost another item shares and
    that no cheaper item dominates, the same frontier coming out."""
    asked = []

    def tie_key(point):
        asked.append(point)
        return point[2]

    frontier = pareto_frontier(items, cost, tie_key=tie_key)
    assert frontier == brute_force(items, lambda p: p[2])
    tied = {cost(p) for p in frontier if sum(cost(q) == cost(p) for q in items) > 1}
    assert sorted(asked) == sorted(p for p in items if cost(p) in tied)
