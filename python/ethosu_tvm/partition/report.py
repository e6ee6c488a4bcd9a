"""The offload report: where each operator of the source model runs, and why it stays on the host."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

NPU = "ethos-u"
HOST = "host"


@dataclass(frozen=True)
class OffloadEntry:
    """One source operator: TFLite builtin name (`op`), `target` "ethos-u" or "host", `reason` ("" if offloaded).

    With a kernel library in the build, a host operator also says which `library` runs it ("cmsis-nn", or "ours"
    for the project's own C) and why (`library_reason`)."""

    index: int
    op: str
    target: str
    reason: str = ""
    library: str = ""
    library_reason: str = ""

    @property
    def detail(self) -> str:
        """The reason, and the library's choice when there is one."""
        return f"{self.reason}; {self.library}: {self.library_reason}" if self.library else self.reason


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
        rows += [(str(e.index), e.op, e.target, e.detail) for e in self.ops]
        widths = [max(len(row[i]) for row in rows) for i in range(3)]
        lines = [f"Offload report for {self.accelerator}"]
        for row in rows:
            lines.append("  ".join(cell.ljust(width) for cell, width in zip(row[:3], widths)) + "  " + row[3])
        counts = self.counts()
        lines.append(", ".join(f"{target}: {counts.get(target, 0)}" for target in (NPU, HOST)))
        return "\n".join(line.rstrip() for line in lines)
