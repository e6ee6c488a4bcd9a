"""The buffers of a program and their lifetimes, planned into workspace pools with the unified planner.

Step i of the program uses its input tensors, output tensors and its own scratch at time i. Every tensor that is
not a model input or output is a buffer from the step producing it to the last step reading it; NPU scratch
(region 1) and host-kernel scratch are buffers of one step. Everything is 16-byte aligned (the NPU's requirement,
and enough for every host type).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..memory import BufferInfo, MemoryPlan, PoolInfo, plan_memory
from .program import Program

ALIGNMENT = 16


@dataclass(frozen=True)
class Workspace:
    """The plan, and the name of each step's scratch buffer (None when it needs none)."""

    plan: MemoryPlan
    buffers: tuple[BufferInfo, ...]
    scratch: tuple[str | None, ...]
    pools: tuple[PoolInfo, ...]

    def offset(self, buffer: str) -> tuple[str, int]:
        """(pool, byte offset) of a planned buffer."""
        allocation = self.plan.allocation(buffer)
        return allocation.pool, allocation.offset


def scratch_name(program: Program, index: int) -> str:
    return f"{program.steps[index].label}_scratch"


def program_buffers(program: Program) -> tuple[list[BufferInfo], list[str | None]]:
    """Buffer inventory with liveness in step numbers; model I/O lives outside the workspace."""
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    producer: dict[str, str] = {}
    for index, step in enumerate(program.steps):
        for name in step.inputs:
            last[name] = index
        for name in step.outputs:
            first.setdefault(name, index)
            last[name] = max(last.get(name, index), index)
            producer[name] = step.label
    io = program.io_names
    buffers = [BufferInfo(name, program.tensors[name].nbytes, first[name], last[name], ALIGNMENT,
                          producer=producer[name])
               for name in program.tensors if name in first and name not in io]
    scratch: list[str | None] = []
    for index, step in enumerate(program.steps):
        if step.scratch_bytes:
            scratch.append(scratch_name(program, index))
            buffers.append(BufferInfo(scratch[-1], step.scratch_bytes, index, index, ALIGNMENT, producer=step.label))
        else:
            scratch.append(None)
    return buffers, scratch


def plan_workspace(program: Program, pools: list[PoolInfo], algorithm: str = "auto") -> Workspace:
    """Plan every buffer of `program` into `pools` (raises PlanDoesNotFit when they are too small)."""
    buffers, scratch = program_buffers(program)
    plan = plan_memory(buffers, pools, algorithm)
    return Workspace(plan, tuple(buffers), tuple(scratch), tuple(pools))
