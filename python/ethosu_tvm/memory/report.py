"""Memory plans for people and tools: `src/memory_plan.json` in the MLF and an SVG of buffers over time."""
from __future__ import annotations

import html
import struct
import zlib
from dataclasses import dataclass

import numpy as np

from .buffers import Allocation, MemoryPlan


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


@dataclass(frozen=True)
class _Box:
    x: float
    y: float
    w: float
    h: float
    colour: str
    allocation: Allocation


@dataclass(frozen=True)
class _Panel:
    pool: str
    top: int
    boxes: tuple[_Box, ...]


def _layout(plan: MemoryPlan, width: int, pool_height: int, margin: int, gap: int) -> list[_Panel]:
    """One panel per pool: x is the schedule step, y the offset; one box per buffer."""
    steps = max((a.buffer.last_use for a in plan.allocations), default=0) + 1
    panels = []
    for row, pool in enumerate(plan.pool_sizes):
        top = gap + row * (pool_height + gap)
        size = max(plan.pool_sizes[pool], 1)
        boxes = tuple(_Box(margin + width * a.buffer.first_use / steps, top + pool_height * a.offset / size,
                           width * (a.buffer.last_use - a.buffer.first_use + 1) / steps,
                           max(pool_height * a.buffer.size / size, 1.0), _COLOURS[index % len(_COLOURS)], a)
                      for index, a in enumerate(x for x in plan.allocations if x.pool == pool))
        panels.append(_Panel(pool, top, boxes))
    return panels


def plan_to_svg(plan: MemoryPlan, width: int = 800, pool_height: int = 300) -> str:
    """Buffers as labelled boxes over time (x, schedule step) and offset (y), one panel per pool."""
    margin, gap = 60, 40
    height = len(plan.pool_sizes) * (pool_height + gap) + gap
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width + 2 * margin}" height="{height}" '
             f'font-family="sans-serif" font-size="10">']
    for panel in _layout(plan, width, pool_height, margin, gap):
        parts.append(f'<text x="{margin}" y="{panel.top - 8}" font-size="12">pool {html.escape(panel.pool)}: '
                     f'{plan.pool_sizes[panel.pool]} bytes</text>')
        parts.append(f'<rect x="{margin}" y="{panel.top}" width="{width}" height="{pool_height}" fill="none" '
                     f'stroke="#999"/>')
        for box in panel.boxes:
            a = box.allocation
            label = html.escape(f"{a.buffer.name} ({a.buffer.size} B @ {a.offset})")
            parts.append(f'<rect x="{box.x:.1f}" y="{box.y:.1f}" width="{box.w:.1f}" height="{box.h:.1f}" '
                         f'fill="{box.colour}" fill-opacity="0.7" stroke="#333"><title>{label}</title></rect>')
            if box.h >= 12:
                parts.append(f'<text x="{box.x + 3:.1f}" y="{box.y + 11:.1f}">{label}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def plan_to_png(plan: MemoryPlan, width: int = 800, pool_height: int = 300) -> bytes:
    """The same drawing as plan_to_svg without text, as an RGB PNG (labels are in the SVG and the JSON)."""
    margin, gap = 60, 40
    height = len(plan.pool_sizes) * (pool_height + gap) + gap
    image = np.full((height, width + 2 * margin, 3), 255, dtype=np.uint8)

    def fill(x0, y0, x1, y1, colour):
        image[max(int(y0), 0):max(int(round(y1)), int(y0) + 1), max(int(x0), 0):max(int(round(x1)), int(x0) + 1)] = \
            colour

    def outline(x0, y0, x1, y1, colour):
        for xa, ya, xb, yb in ((x0, y0, x1, y0 + 1), (x0, y1 - 1, x1, y1), (x0, y0, x0 + 1, y1), (x1 - 1, y0, x1, y1)):
            fill(xa, ya, xb, yb, colour)

    for panel in _layout(plan, width, pool_height, margin, gap):
        outline(margin, panel.top, margin + width, panel.top + pool_height, (153, 153, 153))
        for box in panel.boxes:
            rgb = np.array([int(box.colour[i:i + 2], 16) for i in (1, 3, 5)])
            fill(box.x, box.y, box.x + box.w, box.y + box.h, (0.7 * rgb + 0.3 * 255).astype(np.uint8))
            outline(box.x, box.y, box.x + box.w, box.y + box.h, (51, 51, 51))
    return _png(image)


def _png(image: np.ndarray) -> bytes:
    """An 8-bit RGB PNG (filter 0 on every row)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    height, width, _ = image.shape
    rows = b"".join(b"\x00" + image[row].tobytes() for row in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b"")
