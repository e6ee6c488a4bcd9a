"""The cascader's choice, applied: a proposal becomes the TIR schedule that code generation compiles.

Per cascade: the last primitive's output rows are split into stripes (a STRIPE_ANNOTATION loop), the other
primitives are computed at that loop (`compute_at`: each stripe computes the rows its consumers read), and every
interior tensor's producer is annotated with its ring size and, for ROLLING buffers, as rolling.

The cascader's memory figure is an estimate (the sum of live buffers); the scratch the memory planner then
finds can be larger (alignment, fragmentation). So the chosen proposal is compiled and measured, and when it
exceeds the SRAM limit the next fastest one is tried, a bounded number of times. When the limit is the workspace
pool's size (`PoolBudget`), what the pool holds beside the launch's scratch is counted too, and a proposal is
measured by planning the whole workspace with it.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from ..arch.system import FAST_SCRATCH_POOL, FAST_SCRATCH_REGION, System
from ..cascader import BufferMode, CascaderOptions, Proposal, WeightBuffer, search
from ..cascader.ethosu import cascader_graph
from ..legalize.ops import NpuGraph
from ..target import EthosuTarget
from ..te import te_graph
from .artifact import CascadeReport, NpuArtifact, compile_npu_graph
from .schedule import (
    RING_ANNOTATION,
    ROLLING_ANNOTATION,
    STRIPE_ANNOTATION,
    WARMUP_ANNOTATION,
    ScheduleFn,
    compute_primitive_at,
    execution_order,
    primitive_blocks,
)
from .stripe_cost import stripe_buffering, stripe_cost
from .vela_calls import CodegenError

# Proposals compiled at most per NPU subgraph while looking for one whose real scratch fits the SRAM limit.
MAX_ATTEMPTS = 6


class CascaderError(CodegenError):
    """No schedule the cascader found fits the SRAM limit."""


@dataclass(frozen=True)
class PoolBudget:
    """The workspace pool a launch's scratch shares: `beside` bytes of it hold, during the launch, what is not in
    its scratch (tensors it exchanges with other steps, I/O that others read or write too); `need` gives the pool
    size the whole workspace plan takes with a compiled launch."""

    beside: int
    need: Callable[[NpuArtifact], int]


def cascade_schedule(proposal: Proposal) -> ScheduleFn:
    """The TIR schedule that runs each of the proposal's cascades stripe by stripe."""

    def schedule(sch) -> None:
        for plan in proposal.cascades:
            last = plan.parts[-1]
            outer, _ = sch.split(sch.get_loops(primitive_blocks(sch, last)[-1])[1], [None, plan.rows])
            sch.annotate(outer, STRIPE_ANNOTATION, 1)
            if plan.warmup:
                sch.annotate(outer, WARMUP_ANNOTATION, plan.warmup)
            for index in reversed(plan.parts):  # the last one's internal blocks (padding, accumulator) too
                compute_primitive_at(sch, index, outer)
            for producer, config in zip(plan.parts, plan.interior):  # interior[k] is parts[k]'s output
                block = primitive_blocks(sch, producer)[-1]
                sch.annotate(block, RING_ANNOTATION, config.rows)
                if config.buffer_mode is BufferMode.ROLLING:
                    sch.annotate(block, ROLLING_ANNOTATION, 1)

    return schedule


def cascade_proposals(graph: NpuGraph, target: EthosuTarget, options: CascaderOptions = CascaderOptions(),
                      io_in_scratch: frozenset[str] = frozenset(),
                      progress: Callable[[str], None] | None = None) -> list[Proposal]:
    """The cascader's Pareto frontier of proposals for `graph` (by increasing memory), costed for `target`;
    `progress` receives ``cascader search N/M (graph)`` as the search goes over the graph's M parts. The memory
    budgeted is the one holding the cascader's buffers: under Dedicated_Sram the fast scratch, which the I/O in
    scratch (in the workspace, DRAM) is not part of."""
    accelerator, system = target.npu_accelerator, target.system
    budgeted = frozenset() if system.cache_region == FAST_SCRATCH_REGION else io_in_scratch

    def buffer(op, out, ins) -> WeightBuffer | None:
        cost = stripe_buffering(op, out, ins, accelerator, system)
        return None if cost is None else WeightBuffer(cost.nbytes, cost.dma, cost.buffered)

    order = execution_order(te_graph(graph))
    cascader = cascader_graph(graph, lambda op, out, ins: stripe_cost(op, out, ins, accelerator, system).cycles,
                              budgeted, buffer, order,
                              lambda op, out, ins: stripe_cost(op, out, ins, accelerator, system).overlap)
    parts = None if progress is None else lambda n, m: progress(f"cascader search {n}/{m} ({graph.name})")
    return [_primitives(proposal, order) for proposal in search(cascader, options, parts)]


def _primitives(proposal: Proposal, order: tuple[int, ...]) -> Proposal:
    """The proposal with its parts named by primitive index (the cascader's parts run in execution order)."""
    plans = tuple(dataclasses.replace(plan, parts=tuple(order[part] for part in plan.parts),
                                      buffered=tuple((order[part], row) for part, row in plan.buffered))
                  for plan in proposal.plans)
    return dataclasses.replace(proposal, plans=plans)


def _attempt_order(proposals: list[Proposal], sram_limit: int | None) -> list[int]:
    """Indices of the proposals to compile, at most MAX_ATTEMPTS: those estimated within the SRAM limit, fastest
    first, and finally the smallest one (alone without a limit)."""
    smallest = min(range(len(proposals)), key=lambda i: (proposals[i].memory, proposals[i].cycles))
    if sram_limit is None:
        return [smallest]
    fitting = sorted((i for i in range(len(proposals)) if proposals[i].memory <= sram_limit and i != smallest),
                     key=lambda i: (proposals[i].cycles, proposals[i].memory))
    return fitting[:MAX_ATTEMPTS - 1] + [smallest]


def compile_cascaded(graph: NpuGraph, target: EthosuTarget, proposals: list[Proposal], sram_limit: int | None,
                     io_in_scratch: frozenset[str] = frozenset(), force_proposal: int | None = None,
                     log: Callable[[str], None] | None = None,
                     progress: Callable[[str], None] | None = None, pool: PoolBudget | None = None) -> NpuArtifact:
    """Compile `graph` with the fastest of its cascading `proposals` (`cascade_proposals`) whose scratch fits
    `sram_limit` bytes (no limit: the smallest schedule), or with `pool`, whose workspace plan fits a pool of
    `sram_limit` bytes. Under Dedicated_Sram the limit is on the fast scratch, which holds what the proposals'
    estimates count, the intermediates with the rolling and weight buffers (never spilt to DRAM: the estimates cost
    them in SRAM), and nothing else while the launch runs. `force_proposal` picks a frontier index instead; `log`
    receives every proposal, `progress` code generation's stage."""
    report = progress or (lambda stage: None)
    if log is not None:
        for index, proposal in enumerate(proposals):
            log(f"{graph.name} proposal {index}: {describe_proposal(proposal)}")
    if force_proposal is not None and not 0 <= force_proposal < len(proposals):
        raise CascaderError(f"{graph.name}: proposal {force_proposal} does not exist; the "
                            f"cascader found {len(proposals)} (0 to {len(proposals) - 1})")
    room = sram_limit if pool is None or sram_limit is None else sram_limit - pool.beside
    fast = target.system.cache_region == FAST_SCRATCH_REGION
    order = [force_proposal] if force_proposal is not None else _attempt_order(proposals, room)
    smallest = None
    for attempt, index in enumerate(order, 1):
        report(f"code generation: {graph.name}, proposal {index} (attempt {attempt} of at most {len(order)})")
        artifact = compile_npu_graph(graph, target, cascade_schedule(proposals[index]), io_in_scratch,
                                     room, proposals[index].buffered, spill=False)
        size = artifact.fast_scratch_size if fast else artifact.scratch_size
        need = size if pool is None else pool.need(artifact)
        smallest = need if smallest is None else min(smallest, need)
        if sram_limit is None or need <= sram_limit or force_proposal is not None:
            report = CascadeReport(proposals[index], index, len(proposals), sram_limit, size)
            return dataclasses.replace(artifact, cascade=report)
    if pool is not None:
        raise CascaderError(f"{graph.name}: no schedule fits the NPU's workspace pool of {sram_limit} bytes; the "
                            f"smallest pool one fits is {smallest} bytes")
    raise CascaderError(f"{graph.name}: no schedule fits the cascader's SRAM limit of {sram_limit} "
                        f"bytes; the smallest one found needs {smallest} bytes of {scratch_name(target.system)}")


def scratch_name(system: System) -> str:
    """What the cascader's SRAM limit bounds: the NPU scratch, or under Dedicated_Sram the fast scratch pool."""
    return FAST_SCRATCH_POOL if system.cache_region == FAST_SCRATCH_REGION else "NPU scratch"


def describe_proposal(proposal: Proposal) -> str:
    """One line: estimated memory and cycles, and each cascade's operators, stripes and buffers."""
    cascades = "; ".join(
        f"ops {plan.parts[0]}-{plan.parts[-1]} in {plan.stripes} stripes of {plan.rows} rows"
        + (f", {plan.buffer_mode.value} buffers" if plan.interior else "")
        for plan in proposal.cascades) or "no cascades"
    return f"~{proposal.memory} bytes, ~{proposal.cycles} cycles: {cascades}"


@dataclass(frozen=True)
class CascaderSettings:
    """One build's use of the cascader, applied to every NPU subgraph (see `compile_cascaded`).

    `options` is how the generic cascader core searches (`cascader.CascaderOptions`); the rest is how a build
    chooses among the proposals it finds: the fastest whose NPU scratch fits `sram_limit` bytes (None: the
    smallest), or the frontier index `force_proposal`; `log` receives every proposal.
    """

    options: CascaderOptions = CascaderOptions()
    sram_limit: int | None = None
    force_proposal: int | None = None
    log: Callable[[str], None] | None = None
