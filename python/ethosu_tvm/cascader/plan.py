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
    budgeted tensor alive meanwhile (its inputs, its output, tensors passing over it). `cycles` sums the
    estimated cycles of every operation the plan issues (each part once per stripe it computes rows in).
    """

    parts: tuple[int, ...]
    output_config: StripeConfig
    buffer_mode: BufferMode
    interior: tuple[TensorConfig, ...]  # interior[k] is the output of parts[k]
    memory: int
    cycles: int
    warmup: int = 0  # stripes run before the first one (see search.evaluate_plan)

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
        return self.parts, self.rows, self.buffer_mode.value


@dataclass(frozen=True)
class Proposal:
    """Plans covering every part of a graph in order; `memory` is the largest plan memory, `cycles` the sum."""

    plans: tuple[Plan, ...]
    memory: int
    cycles: int

    def key(self) -> tuple:
        return tuple(plan.key() for plan in self.plans)

    @property
    def cascades(self) -> tuple[Plan, ...]:
        """The plans that change anything: several parts, or one part in stripes."""
        return tuple(p for p in self.plans if p.is_cascade or p.stripes > 1)
