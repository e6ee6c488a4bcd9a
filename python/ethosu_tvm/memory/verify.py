"""An independent check of a finished plan, run after every compile: a violation is an internal error."""
from __future__ import annotations

from .buffers import BufferInfo, MemoryPlan, MemoryPlanError, PoolInfo


def verify_plan(plan: MemoryPlan, buffers: list[BufferInfo], pools: list[PoolInfo]) -> None:
    """Every buffer placed once, in an allowed pool, aligned, within the pool's hint and reported size, and no
    two buffers live at the same time overlapping in the same pool. Checked over the pairs live together, without
    the planner's code.
    """
    problems: list[str] = []
    by_name = {a.buffer.name: a for a in plan.allocations}
    if len(by_name) != len(plan.allocations):
        problems.append("a buffer is placed more than once")
    missing = sorted({b.name for b in buffers} - set(by_name))
    if missing:
        problems.append(f"buffers not placed: {', '.join(missing)}")
    hints = {p.name: p.size_hint_bytes for p in pools}
    for a in plan.allocations:
        b = a.buffer
        if a.pool not in hints:
            problems.append(f"{b.name} is in unknown pool {a.pool!r}")
            continue
        if b.pools and a.pool not in b.pools:
            problems.append(f"{b.name} is in pool {a.pool!r}, outside its allowed pools {b.pools}")
        if a.offset < 0 or a.offset % b.alignment:
            problems.append(f"{b.name} at offset {a.offset} breaks its {b.alignment}-byte alignment")
        if hints[a.pool] is not None and a.end > hints[a.pool]:
            problems.append(f"{b.name} ends at {a.end}, beyond pool {a.pool!r}'s {hints[a.pool]} bytes")
        if a.end > plan.pool_sizes.get(a.pool, 0):
            problems.append(f"{b.name} ends at {a.end}, beyond the reported size of pool {a.pool!r}")
    # Pairs live together, found by a sweep over first uses: each buffer against those still live when it starts.
    live: list = []
    for b in sorted(plan.allocations, key=lambda a: (a.buffer.first_use, a.buffer.name)):
        live = [a for a in live if a.buffer.last_use >= b.buffer.first_use]
        for a in live:
            if a.pool == b.pool and a.offset < b.end and b.offset < a.end:
                problems.append(f"{a.buffer.name} [{a.offset}, {a.end}) and {b.buffer.name} [{b.offset}, {b.end}) "
                                f"overlap in pool {a.pool!r} while both are live")
        live.append(b)
    if problems:
        raise MemoryPlanError("invalid memory plan: " + "; ".join(problems))
