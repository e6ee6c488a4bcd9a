"""Choosing and running a planning algorithm over user-described pools, with a verified result."""
from __future__ import annotations

import dataclasses

from ..arch import round_up
from .algorithms import ALGORITHMS, Result, extents
from .buffers import BufferInfo, MemoryPlan, PoolInfo, PoolsTooSmall
from .placement import BufferDoesNotFit, peak_live_bytes
from .verify import verify_plan

# Below this many buffers the exact search is cheap enough to run by default.
EXACT_MAX_BUFFERS = 10
DEFAULT_POOL = PoolInfo("workspace")


def plan_memory(buffers: list[BufferInfo], pools: list[PoolInfo] | None = None,
                algorithm: str = "auto", verify: bool = True) -> MemoryPlan:
    """Place every buffer at a fixed offset in one of `pools` (filled in the given order).

    `algorithm` is one of ALGORITHMS or "auto": the exact search for small problems, else the smallest of the
    heuristics. Raises PoolsTooSmall (a PlanDoesNotFit: user error) when the pools are too small, naming the pool
    and the need.
    The plan is checked independently (`verify_plan`) unless `verify` is False: a trial that only asks for the
    size and discards the plan.
    """
    pools = list(pools or [DEFAULT_POOL])
    names = [b.name for b in buffers]
    if len(set(names)) != len(names):
        raise ValueError("buffer names must be unique")
    if algorithm != "auto" and algorithm not in ALGORITHMS:
        raise ValueError(f"unknown memory planner {algorithm!r}; choose one of auto, {', '.join(ALGORITHMS)}")
    try:
        name, result = _run(buffers, pools, algorithm)
    except BufferDoesNotFit as err:
        raise PoolsTooSmall(_too_small_message(buffers, pools, err)) from None
    sizes = {p.name: 0 for p in pools}
    for a in result.allocations:
        sizes[a.pool] = max(sizes[a.pool], round_up(a.end))
    lower_bound = peak_live_bytes(buffers) if len(pools) == 1 else 0
    plan = MemoryPlan(tuple(sorted(result.allocations, key=lambda a: (a.pool, a.offset, a.buffer.name))), sizes,
                      name, result.proven_optimal or (bool(buffers) and sum(sizes.values()) <= lower_bound),
                      lower_bound)
    if verify:
        verify_plan(plan, buffers, pools)
    return plan


def _run(buffers, pools, algorithm) -> tuple[str, Result]:
    """The plan of unbounded pools when it stays within every size hint: then a pool at least as large as that plan
    always takes it, whichever heuristic found it; otherwise the bounded pools' plan (spilling into later pools)."""
    unbounded = [dataclasses.replace(p, size_hint_bytes=None) for p in pools]
    name, result = _choose(buffers, unbounded, algorithm)
    used = extents(result.allocations)
    if all(p.size_hint_bytes is None or used.get(p.name, 0) <= p.size_hint_bytes for p in pools):
        return name, result
    return _choose(buffers, pools, algorithm)


def _choose(buffers, pools, algorithm) -> tuple[str, Result]:
    if algorithm != "auto":
        return algorithm, ALGORITHMS[algorithm](buffers, pools)
    if len(buffers) <= EXACT_MAX_BUFFERS:
        return "exact", ALGORITHMS["exact"](buffers, pools)
    # The smallest plan, the earlier heuristic on a tie; a plan at the live-bytes bound cannot be beaten, so the
    # later (slower) heuristics are skipped then, as they could only tie.
    lower_bound = peak_live_bytes(buffers) if len(pools) == 1 else 0
    best = None
    for name in ("greedy_by_size", "greedy_by_conflicts", "hill_climb"):
        result = ALGORITHMS[name](buffers, pools)
        cost = sum(extents(result.allocations).values())
        if best is None or cost < best[0]:
            best = cost, name, result
        if best[0] <= lower_bound:
            break
    return best[1], best[2]


def _too_small_message(buffers, pools, err: BufferDoesNotFit) -> str:
    """Say which pools are too small and how much the model needs without their size limits."""
    unbounded = [PoolInfo(p.name) for p in pools]
    needed = sum(round_up(e) for e in extents(ALGORITHMS["greedy_by_size"](buffers, unbounded).allocations).values())
    given = ", ".join(f"{p.name!r} ({p.size_hint_bytes} bytes)" if p.size_hint_bytes is not None
                      else f"{p.name!r} (unbounded)" for p in err.pools)
    return (f"the model does not fit the workspace pools: buffer {err.buffer.name!r} ({err.buffer.size} bytes) "
            f"fits in none of {given}; the model needs about {needed} bytes in total")
