"""Code generation for every NPU subgraph of a model, and which of their inputs and outputs live in NPU scratch."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import tvm

from ..legalize.ops import NpuGraph
from ..partition.patterns import CODEGEN
from ..target import EthosuTarget
from .artifact import NpuArtifact, compile_npu_graph
from .cascade import CascaderSettings, PoolBudget, cascade_proposals, compile_cascaded
from .memory import FIRST_IO_REGION, MAX_REGIONS


@dataclass(frozen=True)
class ScratchIo:
    """The parameters (by index) and results (by position) of one NPU function that live in its scratch."""

    inputs: frozenset[int] = frozenset()
    outputs: frozenset[int] = frozenset()

    def names(self, graph: NpuGraph) -> frozenset[str]:
        return frozenset([graph.inputs[i].name for i in self.inputs] + [graph.outputs[i].name for i in self.outputs])


def io_in_scratch(mod: tvm.IRModule, io_in_workspace: bool, states: int = 0) -> dict[str, ScratchIo]:
    """Which inputs and outputs of each NPU call live in its scratch, by function (main's last `states` parameters
    are the states before the run, static buffers of the runner).

    With I/O in the workspace: the model inputs that one NPU call alone reads, and the model outputs that one NPU
    call produces and nothing else reads; they then share memory with its intermediates (inputs once read, outputs
    until they are written). And where a call has more inputs and outputs than the NPU's base-address table has
    regions for (an LSTM's input, states and output): tensors of the program between steps, outputs first, then
    states before the run, as many as it takes (the workspace plan holds them inside the call's scratch; the
    runner copies a state there before the launch)."""
    main = mod["main"]
    uses: dict = {}
    calls = []
    fields: dict[tuple, tvm.relax.Var] = {}  # (NPU call's var, position) -> the var bound to that output
    tuples = {}
    for block in main.body.blocks:
        for binding in block.bindings:
            value = binding.value
            if isinstance(value, tvm.relax.Tuple):
                tuples[binding.var] = value
            if isinstance(value, tvm.relax.TupleGetItem):
                fields[(value.tuple_value, value.index)] = binding.var
            args = value.args if isinstance(value, tvm.relax.Call) else getattr(value, "fields", [value])
            for arg in args:
                uses[arg] = uses.get(arg, 0) + 1
            if isinstance(value, tvm.relax.Call) and isinstance(value.op, tvm.ir.GlobalVar):
                attrs = mod[value.op].attrs or {}
                if attrs.get("Codegen") == CODEGEN:
                    calls.append((binding.var, value))
    result = tuples.get(main.body.body, main.body.body)
    ordered = list(getattr(result, "fields", [result]))
    results, model_outputs = set(ordered), set(ordered[:len(ordered) - states])
    for output in ordered:
        uses[output] = uses.get(output, 0) + 1
    params = set(main.params[:len(main.params) - states])
    chosen = {}
    for var, call in calls:
        count = len(var.ty.fields) if isinstance(var.ty, tvm.relax.TupleType) else 1
        outputs = [fields.get((var, j)) for j in range(count)] if count > 1 else [var]
        scratch = ScratchIo()
        if io_in_workspace:
            scratch = ScratchIo(frozenset(i for i, arg in enumerate(call.args) if arg in params and uses[arg] == 1),
                                frozenset({0}) if var in results and uses[var] == 1 and count == 1 else frozenset())
        excess = len(call.args) + count - len(scratch.inputs) - len(scratch.outputs) - (MAX_REGIONS - FIRST_IO_REGION)
        movable_outputs = [j for j, out in enumerate(outputs) if j not in scratch.outputs and out is not None
                           and out not in model_outputs][:max(excess, 0)]
        excess -= len(movable_outputs)
        # inputs between steps first, then states before the run (the runner copies those in before the launch)
        movable_inputs = sorted((i for i, arg in enumerate(call.args) if i not in scratch.inputs and arg not in params),
                                key=lambda i: call.args[i] in main.params)[:max(excess, 0)]
        chosen[call.op.name_hint] = ScratchIo(scratch.inputs | frozenset(movable_inputs),
                                              scratch.outputs | frozenset(movable_outputs))
    return chosen


def compile_npu_graphs(graphs: list[NpuGraph], target: EthosuTarget, scratch_io: dict[str, ScratchIo] | None = None,
                       cascader: CascaderSettings | None = None,
                       progress: Callable[[str], None] | None = None,
                       sram_limit: int | None = None,
                       pool: Callable[[list[NpuArtifact], list[int]], PoolBudget] | None = None) -> list[NpuArtifact]:
    """Compile each legalized NPU subgraph, in order. `scratch_io` (from :func:`io_in_scratch`, by function) says
    which of a subgraph's inputs and outputs to place in its scratch (see compile_npu_graph); with `cascader`, each
    subgraph is scheduled by the cascader (see compile_cascaded), otherwise one operation per primitive, with weight
    buffers only where the scratch stays within `sram_limit` bytes. When the cascader's limit is the workspace
    pool's size, `pool` gives the pool as the next subgraph sees it from those compiled so far and each subgraph's
    smallest estimated scratch (the later ones are counted at that, so that an earlier one leaves them room).
    `progress` receives the stage: which subgraph, and the cascader's search."""
    report = progress or (lambda stage: None)
    in_scratch = [(scratch_io or {}).get(graph.function, ScratchIo()).names(graph) for graph in graphs]
    artifacts: list[NpuArtifact] = []
    if cascader is None:
        for graph, names in zip(graphs, in_scratch):
            report(f"code generation: {graph.name} ({len(graph.ops)} NPU primitives)")
            artifacts.append(compile_npu_graph(graph, target, io_in_scratch=names, sram_limit=sram_limit))
        return artifacts
    frontiers = [cascade_proposals(graph, target, cascader.options, names, progress)
                 for graph, names in zip(graphs, in_scratch)]
    smallest = [min(proposal.memory for proposal in proposals) for proposals in frontiers]
    for graph, names, proposals in zip(graphs, in_scratch, frontiers):
        artifacts.append(compile_cascaded(graph, target, proposals, cascader.sram_limit, names,
                                          cascader.force_proposal, cascader.log, progress,
                                          None if pool is None else pool(artifacts, smallest)))
    return artifacts
