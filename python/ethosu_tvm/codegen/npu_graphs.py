"""Code generation for every NPU subgraph of a model, and which of their inputs and outputs live in NPU scratch."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import tvm

from ..legalize.ops import NpuGraph
from ..partition.patterns import CODEGEN
from ..target import EthosuTarget
from .artifact import NpuArtifact, compile_npu_graph
from .cascade import CascaderSettings, compile_cascaded
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
                       sram_limit: int | None = None) -> list[NpuArtifact]:
    """Compile each legalized NPU subgraph, in order. `scratch_io` (from :func:`io_in_scratch`, by function) says
    which of a subgraph's inputs and outputs to place in its scratch (see compile_npu_graph); with `cascader`, each
    subgraph is scheduled by the cascader (see compile_cascaded), otherwise one operation per primitive, with weight
    buffers only where the scratch stays within `sram_limit` bytes.
    `progress` receives the stage: which subgraph, and the cascader's search."""
    report = progress or (lambda stage: None)
    artifacts = []
    for graph in graphs:
        in_scratch = (scratch_io or {}).get(graph.function, ScratchIo()).names(graph)
        if cascader is None:
            report(f"code generation: {graph.name} ({len(graph.ops)} NPU primitives)")
            artifacts.append(compile_npu_graph(graph, target, io_in_scratch=in_scratch, sram_limit=sram_limit))
        else:
            artifacts.append(compile_cascaded(graph, target, cascader.options, cascader.sram_limit, in_scratch,
                                              cascader.force_proposal, cascader.log, progress))
    return artifacts
