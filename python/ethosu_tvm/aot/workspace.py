"""The buffers of a program and their lifetimes, planned into workspace pools with the unified planner.

Step i of the program uses its input tensors, output tensors and its own scratch at time i. Every tensor that is
not a model input or output is a buffer from the step producing it to the last step reading it; NPU scratch
(region 1) and every scratch buffer a host kernel declares are buffers of one step, so the scratch of different
steps shares memory. With `io_in_workspace` the model's inputs (live from the start to their last reader) and
outputs (from their producer to the end) are buffers too. A state's value before the run lives in the runner's
static buffer; its value after the run is a buffer until the end, when the runner copies it there. Everything is
16-byte aligned (the NPU's requirement, and enough for every host type), or more where a kernel's scratch asks for
it. A buffer may only go to pools that all the targets touching it can reach (the NPU for NPU steps, the CPU for
host kernels and for the application's I/O).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..arch import ALIGNMENT
from ..arch.system import FAST_SCRATCH_POOL, FAST_SCRATCH_REGION, SCRATCH_REGION
from ..memory import BufferInfo, MemoryPlan, PlanDoesNotFit, PoolInfo, plan_memory
from .program import HostStep, NpuStep, Program, c_identifier

HOST_TARGET = HostStep.target  # the application, which writes inputs and reads outputs, runs on the CPU


@dataclass(frozen=True)
class Workspace:
    """The plan, the buffers it placed, each step's scratch buffer names (in its `scratch` order), the pools."""

    plan: MemoryPlan
    buffers: tuple[BufferInfo, ...]
    scratch: tuple[tuple[str, ...], ...]
    pools: tuple[PoolInfo, ...]
    io_in_workspace: bool = False
    aliases: tuple[tuple[str, str, int], ...] = ()  # (tensor, buffer holding it, offset in that buffer)

    def offset(self, buffer: str) -> tuple[str, int]:
        """(pool, byte offset) of a planned buffer, or of a tensor held inside one (an NPU step's scratch)."""
        inner = 0
        for tensor, holder, offset in self.aliases:
            if tensor == buffer:
                buffer, inner = holder, offset
                break
        allocation = self.plan.allocation(buffer)
        return allocation.pool, allocation.offset + inner


def scratch_names(program: Program) -> list[tuple[str, ...]]:
    """Each step's scratch buffers as buffer names, `<step label>_<scratch name>`, suffixed where that is taken
    (a kernel that several steps call)."""
    taken = set(program.tensors)
    return [tuple(c_identifier(f"{step.label}_{buffer.name}", taken) for buffer in step.scratch)
            for step in program.steps]


class _Inventory:
    """Collects each buffer's lifetime, producer and the targets that touch it."""

    def __init__(self, program: Program):
        self.first: dict[str, int] = {}
        self.last: dict[str, int] = {}
        self.producer: dict[str, str] = {}
        self.targets: dict[str, set[str]] = {}
        for index, step in enumerate(program.steps):
            for name in step.inputs:
                self.use(name, index, step.target)
            for name in step.outputs:
                self.use(name, index, step.target)
                self.producer[name] = step.label

    def use(self, name: str, index: int, target: str) -> None:
        self.first[name] = min(self.first.get(name, index), index)
        self.last[name] = max(self.last.get(name, index), index)
        self.targets.setdefault(name, set()).add(target)


def _allowed(name: str, targets: set[str], pools: list[PoolInfo], fast: bool = False) -> tuple[str, ...]:
    """The pools `name` may go to: those all its `targets` reach; the fast scratch pool holds only the NPU's fast
    scratch (`fast`), which goes nowhere else."""
    allowed = tuple(p.name for p in pools if p.reachable_by(targets) and (p.name == FAST_SCRATCH_POOL) == fast)
    if not allowed:
        raise PlanDoesNotFit(f"buffer {name!r} is used by {' and '.join(sorted(targets))}, but no workspace pool is "
                             f"reachable by {'both' if len(targets) > 1 else 'it'}; check --workspace-pools-targets")
    return allowed


def scratch_aliases(program: Program) -> list[tuple[str, str, int]]:
    """Tensors an NPU step keeps inside its scratch region (its compiled I/O bindings say so): (tensor, scratch
    buffer, offset)."""
    aliases = []
    for step, names in zip(program.steps, scratch_names(program)):
        if isinstance(step, NpuStep):
            bindings = step.artifact.inputs + step.artifact.outputs
            aliases += [(tensor, names[step.scratch_regions.index(SCRATCH_REGION)], binding.offset)
                        for binding, tensor in zip(bindings, step.inputs + step.outputs)
                        if binding.region == SCRATCH_REGION]
    return aliases


def program_buffers(program: Program, pools: list[PoolInfo], io_in_workspace: bool = False,
                    aliases: list[tuple[str, str, int]] | None = None) -> tuple[list[BufferInfo],
                                                                                list[tuple[str, ...]]]:
    """Buffer inventory with liveness in step numbers, and each step's scratch buffer names. A tensor held in an
    NPU step's scratch (`aliases`, default scratch_aliases(program)) is no buffer of its own: it stretches the
    scratch's lifetime instead."""
    inventory = _Inventory(program)
    last_step = len(program.steps) - 1
    for io in program.inputs:  # the application writes inputs before the first step
        inventory.use(io.tensor.name, 0, HOST_TARGET)
    for io in program.outputs:  # ... and reads outputs after the last
        inventory.use(io.tensor.name, last_step, HOST_TARGET)
    for state in program.states:  # the runner copies the new states into its static ones after the last step
        inventory.use(state.after.name, last_step, HOST_TARGET)
    aliases = scratch_aliases(program) if aliases is None else aliases
    excluded = ((set() if io_in_workspace else program.io_names) | {tensor for tensor, _, _ in aliases}
                | {state.before.name for state in program.states})
    buffers = [BufferInfo(name, program.tensors[name].nbytes, inventory.first[name], inventory.last[name], ALIGNMENT,
                          _allowed(name, inventory.targets[name], pools), inventory.producer.get(name, "input"))
               for name in program.tensors if name in inventory.first and name not in excluded]
    scratch = scratch_names(program)
    for index, step in enumerate(program.steps):
        regions = step.scratch_regions if isinstance(step, NpuStep) else ()
        for position, (buffer, name) in enumerate(zip(step.scratch, scratch[index])):
            fast = position < len(regions) and regions[position] == FAST_SCRATCH_REGION
            held = [tensor for tensor, holder, _ in aliases if holder == name]
            first = min([index] + [inventory.first[t] for t in held])
            last = max([index] + [inventory.last[t] for t in held])
            targets = set().union({step.target}, *(inventory.targets[t] for t in held))
            buffers.append(BufferInfo(name, buffer.nbytes, first, last, max(buffer.alignment, ALIGNMENT),
                                      _allowed(name, targets, pools, fast), step.label))
    return buffers, scratch


def plan_workspace(program: Program, pools: list[PoolInfo], algorithm: str = "auto",
                   io_in_workspace: bool = False) -> Workspace:
    """Plan every buffer of `program` into `pools`, filled in the given order (raises PlanDoesNotFit when they are
    too small)."""
    aliases = scratch_aliases(program)
    buffers, scratch = program_buffers(program, pools, io_in_workspace, aliases)
    plan = plan_memory(buffers, pools, algorithm)
    return Workspace(plan, tuple(buffers), tuple(scratch), tuple(pools), io_in_workspace, tuple(aliases))
