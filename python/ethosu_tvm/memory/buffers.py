"""The planner's typed interface: buffers with lifetimes, pools, and the plan that places one in the other."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..arch import ALIGNMENT


class MemoryPlanError(RuntimeError):
    """An internal error: a plan violates an invariant (overlap, alignment, pool size)."""


class PlanDoesNotFit(ValueError):
    """The buffers cannot be placed in the pools the user gave (a user-facing error)."""


class PoolsTooSmall(PlanDoesNotFit):
    """The pools the buffers may live in are too small for them (not: no pool is allowed at all)."""


@dataclass(frozen=True)
class BufferInfo:
    """One buffer of the model: `first_use`..`last_use` are inclusive steps of the AOT schedule.

    `pools` names the pools the buffer may live in (empty: any), e.g. because the NPU cannot reach some memory.
    """

    name: str
    size: int
    first_use: int
    last_use: int
    alignment: int = ALIGNMENT
    pools: tuple[str, ...] = ()
    producer: str = ""

    def __post_init__(self):
        if self.size < 1:
            raise ValueError(f"buffer {self.name!r} has size {self.size}; sizes must be positive")
        if self.alignment < 1 or self.alignment & (self.alignment - 1):
            raise ValueError(f"buffer {self.name!r} has alignment {self.alignment}; it must be a power of two")
        if self.first_use > self.last_use:
            raise ValueError(f"buffer {self.name!r} is last used (step {self.last_use}) before its first use "
                             f"(step {self.first_use})")

    def conflicts(self, other: "BufferInfo") -> bool:
        """Whether both buffers are live at some common step."""
        return self.first_use <= other.last_use and other.first_use <= self.last_use


@dataclass(frozen=True)
class PoolInfo:
    """A memory the buffers can be placed in; `size_hint_bytes` (None: unbounded) caps its size.

    `targets` are the targets that can reach the pool (empty: all). Clock, bandwidth, latency and burst describe
    the memory for cost models (as old tvmc's --workspace-pools-* flags did); the planner itself uses the size.
    """

    name: str
    size_hint_bytes: int | None = None
    targets: tuple[str, ...] = ()
    clock_frequency_hz: int | None = None
    read_bandwidth_bytes_per_cycle: float | None = None
    write_bandwidth_bytes_per_cycle: float | None = None
    read_latency_cycles: int | None = None
    write_latency_cycles: int | None = None
    target_burst_bytes: tuple[tuple[str, int], ...] = ()

    def reachable_by(self, targets: set[str]) -> bool:
        """Whether every one of `targets` can access this pool."""
        return not self.targets or targets <= set(self.targets)


@dataclass(frozen=True)
class Allocation:
    buffer: BufferInfo
    pool: str
    offset: int

    @property
    def end(self) -> int:
        return self.offset + self.buffer.size


@dataclass(frozen=True)
class MemoryPlan:
    """Where every buffer lives. `pool_sizes` is each pool's used size, rounded up to 16 bytes."""

    allocations: tuple[Allocation, ...]
    pool_sizes: dict[str, int]
    algorithm: str
    proven_optimal: bool = False
    lower_bound: int = 0
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def total_size(self) -> int:
        return sum(self.pool_sizes.values())

    def allocation(self, name: str) -> Allocation:
        for allocation in self.allocations:
            if allocation.buffer.name == name:
                return allocation
        raise KeyError(name)
