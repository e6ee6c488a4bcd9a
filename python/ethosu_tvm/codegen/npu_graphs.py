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


@dataclass(frozen=True)
class ScratchIo:
    """The parameters (by index) and results (by position) of one NPU function that live in its scratch."""

    inputs: frozenset[int] = frozenset()
    outputs: frozenset[int] = frozenset()

    def names(self, graph: NpuGraph) -> frozenset[str]:
        return frozenset([graph.inputs[i].name for i in self.inputs] + [graph.outputs[i].name for i in self.outputs])


def io_in_scratch(mod: tvm.IRModule) -> dict[str, ScratchIo]:
    """For I/O in the workspace: the model inputs that one NPU call alone reads, and the model outputs that one NPU
    call produces and nothing else reads, by function. The NPU then keeps them in its scratch, where they share
    memory with its intermediates (inputs once read, outputs until they are written)."""
    main = mod["main"]
    uses: dict = {}
    calls = []
    for block in main.body.blocks:
        for binding in block.bindings:
            value = binding.value
            args = value.args if isinstance(value, tvm.relax.Call) else getattr(value, "fields", [value])
            for arg in args:
                uses[arg] = uses.get(arg, 0) + 1
            if isinstance(value, tvm.relax.Call) and isinstance(value.op, tvm.ir.GlobalVar):
                attrs = mod[value.op].attrs or {}
                if attrs.get("Codegen") == CODEGEN:
                    calls.append((binding.var, value))
    result = main.body.body
    results = set(getattr(result, "fields", [result]))
    for output in results:
        uses[output] = uses.get(output, 0) + 1
    params = set(main.params)
    return {call.op.name_hint: ScratchIo(
                frozenset(i for i, arg in enumerate(call.args) if arg in params and uses[arg] == 1),
                frozenset({0}) if var in results and uses[var] == 1 and isinstance(var.ty, tvm.relax.TensorType)
                else frozenset())
            for var, call in calls}


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
