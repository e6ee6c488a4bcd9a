"""The offload report: where each operator of the source model runs, and why it stays on the host."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

NPU = "ethos-u"
HOST = "host"


@dataclass(frozen=True)
class OffloadEntry:
    """One source operator: TFLite builtin name (`op`), `target` "ethos-u" or "host", `reason` ("" if offloaded)."""

    index: int
    op: str
    target: str
    reason: str = ""


@dataclass(frozen=True)
class OffloadReport:
    """One entry per operator of the source model, in model order."""

    accelerator: str
    ops: tuple[OffloadEntry, ...]

    def counts(self) -> dict[str, int]:
        """Number of operators per target, e.g. {"ethos-u": 12, "host": 1}."""
        return dict(Counter(entry.target for entry in self.ops))

    def __str__(self) -> str:
        rows = [("#", "operator", "target", "reason")]
        rows += [(str(e.index), e.op, e.target, e.reason) for e in self.ops]
        widths = [max(len(row[i]) for row in rows) for i in range(3)]
        lines = [f"Offload report for {self.accelerator}"]
        for row in rows:
            lines.append("  ".join(cell.ljust(width) for cell, width in zip(row[:3], widths)) + "  " + row[3])
        counts = self.counts()
        lines.append(", ".join(f"{target}: {counts.get(target, 0)}" for target in (NPU, HOST)))
        return "\n".join(line.rstrip() for line in lines)
