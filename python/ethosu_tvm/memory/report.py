"""Memory plans for people and tools: `src/memory_plan.json` in the MLF and an SVG of buffers over time."""
from __future__ import annotations

import html

from .buffers import MemoryPlan


def plan_to_json(plan: MemoryPlan) -> dict:
    """Per buffer: name, producer op, pool, offset, size, alignment, first and last use step; plus pool sizes."""
    return {
        "algorithm": plan.algorithm,
        "proven_optimal": plan.proven_optimal,
        "pools": [{"name": name, "size_bytes": size} for name, size in plan.pool_sizes.items()],
        "buffers": [{
            "name": a.buffer.name, "producer": a.buffer.producer, "pool": a.pool, "offset": a.offset,
            "size": a.buffer.size, "alignment": a.buffer.alignment, "first_use": a.buffer.first_use,
            "last_use": a.buffer.last_use,
        } for a in plan.allocations],
    }


_COLOURS = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7")


def plan_to_svg(plan: MemoryPlan, width: int = 800, pool_height: int = 300) -> str:
    """One panel per pool: x is the schedule step, y the offset; each buffer is a labelled box."""
    steps = max((a.buffer.last_use for a in plan.allocations), default=0) + 1
    margin, gap = 60, 40
    panels = [name for name in plan.pool_sizes]
    height = len(panels) * (pool_height + gap) + gap
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width + 2 * margin}" height="{height}" '
             f'font-family="sans-serif" font-size="10">']
    for row, pool in enumerate(panels):
        top = gap + row * (pool_height + gap)
        size = max(plan.pool_sizes[pool], 1)
        parts.append(f'<text x="{margin}" y="{top - 8}" font-size="12">pool {html.escape(pool)}: '
                     f'{plan.pool_sizes[pool]} bytes</text>')
        parts.append(f'<rect x="{margin}" y="{top}" width="{width}" height="{pool_height}" fill="none" '
                     f'stroke="#999"/>')
        for index, a in enumerate(x for x in plan.allocations if x.pool == pool):
            x = margin + width * a.buffer.first_use / steps
            w = width * (a.buffer.last_use - a.buffer.first_use + 1) / steps
            y = top + pool_height * a.offset / size
            h = max(pool_height * a.buffer.size / size, 1.0)
            label = html.escape(f"{a.buffer.name} ({a.buffer.size} B @ {a.offset})")
            parts.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" '
                         f'fill="{_COLOURS[index % len(_COLOURS)]}" fill-opacity="0.7" stroke="#333">'
                         f'<title>{label}</title></rect>')
            if h >= 12:
                parts.append(f'<text x="{x + 3:.1f}" y="{y + 11:.1f}">{label}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
