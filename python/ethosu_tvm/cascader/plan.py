"""Plans (one cascade: consecutive parts run stripe by stripe) and proposals (plans covering a whole graph).

Inside a plan the last part's output is striped by rows (`output_config`); every other part computes, per
stripe, the rows its consumers in the plan need. Tensors that only those consumers read are INTERIOR: they live
in a ring of `rows` rows instead of whole. With RECOMPUTE buffers each stripe recomputes every row it needs (rows
shared with the previous stripe included); with ROLLING buffers it computes only rows no earlier stripe has, at
the price of keeping them. Every other tensor is a BOUNDARY tensor and exists whole.

A rolling cascade starts with `warmup` stripes that lie before the output's first row: the last part computes
nothing in them, its producers fill their rings a few rows at a time. Without them the first stripe would
compute the whole pipeline's lead at once (each 3x3 level adds a row), and the rings would have to hold it.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from .graph import Tensor
from .stripe_config import StripeConfig


class TensorState(Enum):
    BOUNDARY = "boundary"
    INTERIOR = "interior"


class BufferMode(Enum):
    RECOMPUTE = "recompute"
    ROLLING = "rolling"


@dataclass(frozen=True)
class TensorConfig:
    """How a plan keeps a tensor: whole (BOUNDARY), or `rows` rows of it at a time (INTERIOR)."""

    tensor: Tensor
    state: TensorState
    buffer_mode: BufferMode
    rows: int

    @property
    def buffer_size(self) -> int:
        return self.rows * self.tensor.row_bytes


@dataclass(frozen=True)
class Plan:
    """A run of consecutive parts `parts` (indices into the graph) scheduled together.

    `memory` is the estimated peak of the budgeted memory while the plan runs: its interior buffers plus every
    budgeted tensor alive meanwhile (its inputs, its output, tensors passing over it), plus the weight buffers
    live at once (each lives during its operation and the one before, whose compute its transfer overlaps).
    `cycles` sums the estimated cycles of every operation the plan issues (each part once per stripe it
    computes rows in), and of what each weight transfer adds beyond the operation before it. The `entry_*` and
    `exit_*` fields are what joins the plan to its neighbours in a proposal (`Proposal.then`). A plan of no
    operation (`empty`: a view that code generation leaves out) joins its neighbours to each other.
    """

    parts: tuple[int, ...]
    output_config: StripeConfig
    buffer_mode: BufferMode
    interior: tuple[TensorConfig, ...]  # interior[k] is the output of parts[k]
    memory: int
    cycles: int
    warmup: int = 0  # stripes run before the first one (see search.evaluate_plan)
    buffered: tuple[tuple[int, int], ...] = ()  # (part, first output row) of each operation buffering its weights
    entry_buffer: int = 0  # bytes of the first operation's weight buffer, live during the previous plan's last one
    entry_transfer: int = 0  # its transfer, counted in full in `cycles` (no operation before it in the plan)
    exit_memory: int = 0  # budgeted bytes live during the last operation
    exit_cycles: int = 0  # the last operation's cycles that the next plan's first transfer can run in
    empty: bool = False  # no operation (see `search._written_in_place`)

    @property
    def rows(self) -> int:
        """Output rows per stripe."""
        return self.output_config.shape[1]

    @property
    def stripes(self) -> int:
        return self.output_config.num_stripes

    @property
    def is_cascade(self) -> bool:
        return len(self.parts) > 1

    def key(self) -> tuple:
        """Identifies the plan; orders equal-cost plans deterministically."""
        return self.parts, self.rows, self.buffer_mode.value, self.buffered


@dataclass(frozen=True)
class Proposal:
    """Plans covering every part of a graph in order; `memory` is the largest plan memory, `cycles` the sum."""

    plans: tuple[Plan, ...]
    memory: int
    cycles: int

    def key(self) -> tuple:
        return tuple(plan.key() for plan in self.plans)

    def then(self, plan: Plan) -> Proposal:
        """This proposal followed by `plan`: the plan's first weight transfer overlaps this one's last operation,
        and its weight buffer is live during it."""
        last = next((p for p in reversed(self.plans) if not p.empty), None)
        if last is None or plan.empty:
            return Proposal(self.plans + (plan,), max(self.memory, plan.memory), self.cycles + plan.cycles)
        return Proposal(self.plans + (plan,), max(self.memory, plan.memory, last.exit_memory + plan.entry_buffer),
                        self.cycles + plan.cycles - min(plan.entry_transfer, last.exit_cycles))

    @property
    def buffered(self) -> frozenset[tuple[int, int]]:
        """(part, first output row) of every operation that buffers its weights."""
        return frozenset(stripe for plan in self.plans for stripe in plan.buffered)

    @property
    def cascades(self) -> tuple[Plan, ...]:
        """The plans that change anything: several parts, or one part in stripes."""
        return tuple(p for p in self.plans if p.is_cascade or p.stripes > 1)
