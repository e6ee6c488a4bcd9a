"""The workspace pool as the cascader sees it from one NPU launch, when its limit is the pool's size.

The pool holds more than the launch's scratch: tensors the launch exchanges with host kernels or other launches,
and with I/O in the workspace the inputs and outputs that other steps read or write too, all live across the
launch. `PoolFit` counts those bytes for the cascader's estimates, and measures a compiled launch by planning the
whole workspace with it, the launches still to compile standing in with their smallest proposal's scratch.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from ..arch import round_up
from ..codegen.artifact import IoBinding, NpuArtifact
from ..codegen.cascade import PoolBudget
from ..codegen.memory import FIRST_IO_REGION, SCRATCH_REGION, nbytes
from ..legalize.ops import NpuGraph
from ..memory import PoolInfo, plan_memory
from .program import NpuStep, Program
from .workspace import program_buffers, scratch_names


def stand_in(graph: NpuGraph, in_scratch: frozenset[str], accelerator: str) -> NpuArtifact:
    """An uncompiled launch of `graph`: no stream, a scratch of at least the I/O it will hold (`in_scratch`)."""
    held = [round_up(nbytes(t)) for t in graph.inputs + graph.outputs if t.name in in_scratch]

    def binding(tensor) -> IoBinding:
        region = SCRATCH_REGION if tensor.name in in_scratch else FIRST_IO_REGION
        return IoBinding(tensor.name, region, 0, tensor.shape, tensor.dtype, nbytes(tensor))

    return NpuArtifact(graph.name, graph.function, accelerator, b"", (), b"", sum(held),
                       tuple(map(binding, graph.inputs)), tuple(map(binding, graph.outputs)), ())


@dataclass(frozen=True)
class PoolFit:
    """The NPU's pool (`pools[npu_pool]`, whose size is the cascader's limit) and how to plan the workspace: the
    program of a list of artifacts, the planner, whether the I/O is in the workspace; `stand_ins`, one per NPU
    subgraph in order, for the launches not compiled yet."""

    program: Callable[[list[NpuArtifact]], Program]
    stand_ins: tuple[NpuArtifact, ...]
    pools: tuple[PoolInfo, ...]
    npu_pool: int
    algorithm: str
    io_in_workspace: bool

    def budget(self, compiled: list[NpuArtifact], smallest: list[int]) -> PoolBudget:
        """The pool as the next launch (after the `compiled` ones) sees it, the later ones standing in with the
        scratch of their `smallest` proposal (estimated, by launch)."""
        later = [replace(s, scratch_size=max(s.scratch_size, round_up(size)))
                 for s, size in zip(self.stand_ins[len(compiled) + 1:], smallest[len(compiled) + 1:])]
        current = self.stand_ins[len(compiled)]
        return PoolBudget(self._beside(self.program(compiled + [current] + later), current.function),
                          lambda artifact: self._need(self.program(compiled + [artifact] + later)))

    def _beside(self, program: Program, function: str) -> int:
        """The most bytes the NPU's pool holds beside `function`'s scratch at one step while that scratch lives (from
        the launch, or earlier when it holds model inputs, which the application writes before the first step)."""
        step = next(i for i, s in enumerate(program.steps)
                    if isinstance(s, NpuStep) and s.artifact.function == function)
        own = set(scratch_names(program)[step])
        name = self.pools[self.npu_pool].name
        buffers, _ = program_buffers(program, list(self.pools), self.io_in_workspace)
        scratch = [b for b in buffers if b.name in own]
        steps = range(min([step] + [b.first_use for b in scratch]), max([step] + [b.last_use for b in scratch]) + 1)
        others = [b for b in buffers if b.name not in own and (not b.pools or name in b.pools)]
        return max(sum(round_up(b.size, b.alignment) for b in others if b.first_use <= at <= b.last_use)
                   for at in steps)

    def _need(self, program: Program) -> int:
        """The NPU pool's size in the workspace plan of `program`, planned with that pool unbounded."""
        pools = list(self.pools)
        pools[self.npu_pool] = replace(pools[self.npu_pool], size_hint_bytes=None)
        buffers, _ = program_buffers(program, pools, self.io_in_workspace)
        return plan_memory(buffers, pools, self.algorithm, verify=False).pool_sizes[pools[self.npu_pool].name]
