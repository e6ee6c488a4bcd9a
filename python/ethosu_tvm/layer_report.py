"""The per-layer report (`tvmc compile --dump-per-layer FILE.csv`, and `-v`): one row per TFLite operator.

Each row says what the operator became (the NPU operations of its primitives, or its host kernel) and, for NPU
work, the cost model's figures from the command stream alone (`sim.stats.estimate`): MACs, cycles with their compute
and memory parts, bytes read and written in flash (region 0, the constants) and SRAM (every other region; the NPU's
internal SHRAM is left out), and the cascade the operator ran in. A DMA is counted with the operation after it (it
fetches that operation's weights). The cycle column sums to the summary's NPU figure (`npu_estimate`). Host kernels
have no cost model: their rows give only the bytes of the tensors they read and write.
"""
from __future__ import annotations

import csv
import io
from collections import Counter
from dataclasses import astuple, dataclass, fields

import tvm
from tvm import relax

from .aot.program import HostStep, NpuStep
from .codegen import NpuArtifact
from .host import fuse_host_ops
from .legalize import legalize
from .legalize.ops import Concatenate, Identity
from .qdq.sources import composite_operators
from .sim import Simulator, stats

FLASH_REGION = 0
SHRAM = "shram"


@dataclass(frozen=True)
class LayerRow:
    """One TFLite operator. Counts are 0 where nothing applies; `cascade` is "" outside a cascade."""

    index: int
    operator: str
    target: str  # "NPU" or "host"
    became: str
    macs: int = 0
    cycles: int = 0
    compute_cycles: int = 0
    memory_cycles: int = 0
    flash_read: int = 0
    flash_written: int = 0
    sram_read: int = 0
    sram_written: int = 0
    cascade: str = ""


COLUMNS = tuple(f.name for f in fields(LayerRow))


def _launch_stats(artifact: NpuArtifact) -> stats.SimStats:
    simulator = Simulator(artifact.accelerator, artifact.system)
    return stats.estimate(simulator.commands(artifact.driver_payload), simulator.accelerator, simulator.system)


def npu_operation_stats(artifact: NpuArtifact) -> list[stats.OpStats]:
    """The cost model's statistics of every NPU operation (DMA included) of one launch, in stream order."""
    return _launch_stats(artifact).ops


def npu_estimate(artifacts: list[NpuArtifact]) -> tuple[int, int]:
    """Estimated NPU cycles per inference: the sum of every operation's estimate (no overlap credited), and the
    elapsed time on the streams' timelines (weight DMAs overlapping operations as the waits allow), which is what
    running the model in the simulator reports."""
    launches = [_launch_stats(artifact) for artifact in artifacts]
    return (sum(op.cycles for launch in launches for op in launch.ops),
            sum(launch.elapsed_cycles for launch in launches))


def _composite_bindings(func: relax.Function) -> list[tuple[relax.Var, relax.Function]]:
    """The calls of composite functions in an NPU function (one NPU primitive each), in binding order: the var each
    call is bound to and the composite it calls."""
    composites, calls = {}, []
    for block in func.body.blocks:
        for binding in block.bindings:
            if isinstance(binding.value, relax.Function):
                composites[binding.var] = binding.value
            elif isinstance(binding.value, relax.Call) and binding.value.op in composites:
                calls.append((binding.var, composites[binding.value.op]))
    return calls


def _composite_calls(func: relax.Function) -> list[relax.Function]:
    """The composite functions an NPU function calls, in binding order (one NPU primitive each)."""
    return [composite for _, composite in _composite_bindings(func)]


def output_primitives(func: relax.Function) -> list[int | None]:
    """For each output of an NPU function (its result's fields, in order), the position among its composite calls
    of the one computing it (None: not a composite's result)."""
    result = func.body.body
    fields = result.fields if isinstance(result, relax.Tuple) else [result]
    positions = {var: position for position, (var, _) in enumerate(_composite_bindings(func))}
    aliases = {binding.var: binding.value for block in func.body.blocks for binding in block.bindings
               if isinstance(binding.value, relax.Var)}  # e.g. a dataflow block's output `gv = lv`

    def source(var):
        while var in aliases:
            var = aliases[var]
        return var

    return [positions.get(source(field)) for field in fields]


def _traffic(op: stats.OpStats) -> tuple[int, int, int, int]:
    """Bytes read from flash, written to flash, read from SRAM, written to SRAM."""
    def split(counter):
        return (sum(v for k, v in counter.items() if k == FLASH_REGION),
                sum(v for k, v in counter.items() if k not in (FLASH_REGION, SHRAM)))

    (flash_read, sram_read), (flash_written, sram_written) = split(op.bytes_read), split(op.bytes_written)
    return flash_read, flash_written, sram_read, sram_written


def _operations(artifact: NpuArtifact) -> list[tuple[str, list[stats.OpStats]]]:
    """Each stripe's primitive (its `source`) and the statistics of its block operations (a softmax stripe has a
    sequence of them), with the DMAs before them (trailing DMAs go with the last one)."""
    ops = npu_operation_stats(artifact)
    if sum(op.kind != "DMA" for op in ops) != sum(summary.block_operations for summary in artifact.ops):
        raise AssertionError(f"{artifact.name}: the stream's block operations do not match its description")
    owned, pending, described = [], [], iter(artifact.ops)
    summary, left = None, 0
    for op in ops:
        pending.append(op)
        if op.kind != "DMA":
            if left == 0:
                summary = next(described)
                left = summary.block_operations
                owned.append((summary, []))
            owned[-1][1].extend(pending)
            pending = []
            left -= 1
    if pending and owned:
        owned[-1][1].extend(pending)
    return owned


def _cascades(artifact: NpuArtifact) -> dict[int, str]:
    """Primitive index → the cascade it ran in (cascades of several primitives only)."""
    if artifact.cascade is None:
        return {}
    plans = [plan for plan in artifact.cascade.proposal.cascades if len(plan.parts) > 1]
    return {part: f"{artifact.name} cascade {k}: ops {plan.parts[0]}-{plan.parts[-1]} in {plan.stripes} stripes"
            for k, plan in enumerate(plans) for part in plan.parts}


class _Layer:
    """What one TFLite operator became, summed while the steps are read."""

    def __init__(self):
        self.became: Counter = Counter()
        self.totals = [0] * 8  # macs, cycles, compute, memory, flash read/written, SRAM read/written
        self.cascades: list[str] = []

    def add(self, what: str, counts=(0,) * 8, cascade: str = "") -> None:
        self.became[what] += 1
        self.totals = [a + b for a, b in zip(self.totals, counts)]
        if cascade and cascade not in self.cascades:
            self.cascades.append(cascade)

    def row(self, index: int, operator: str, target: str) -> LayerRow:
        became = ", ".join(what + (f" x{count}" if count > 1 else "") for what, count in self.became.items())
        return LayerRow(index, operator, target, became, *self.totals, "; ".join(self.cascades))


_IN_PLACE = {Identity: "no operation: its input is written where its output goes (a view)",
             Concatenate: "no operation: its inputs are written in their places"}
_FOLDED = "no operation: the padding of the convolution that reads it"


def _npu_step(layers: dict[int, _Layer], step: NpuStep, graph, claims: list[set[int]]) -> None:
    """Add one launch's operations to the layers of the operators its primitives came from (`claims`: one set per
    composite; a composite legalizes to one primitive or more, all with its `source`, or to none, folded)."""
    sources = [op.source for op in graph.ops]
    composites = list(graph.composites)
    cascades = _cascades(step.artifact)
    issued = {sources.index(summary.source) for summary in step.artifact.ops}
    for composite in (c for c in composites if c not in sources):  # a PAD folded into a convolution
        layers.setdefault(min(claims[composites.index(composite)]), _Layer()).add(_FOLDED)
    for primitive, op in enumerate(graph.ops):  # written in place: no operation of its own
        if primitive not in issued and isinstance(op, (Identity, Concatenate)):
            layers.setdefault(min(claims[composites.index(op.source)]), _Layer()).add(
                _IN_PLACE[type(op)], cascade=cascades.get(primitive, ""))
    for summary, operations in _operations(step.artifact):
        primitive = sources.index(summary.source)
        layer = layers.setdefault(min(claims[composites.index(summary.source)]), _Layer())  # fused: the first's
        for op in operations:
            name = "DMA" if op.kind == "DMA" else summary.npu_operation
            counts = (op.macs, op.cycles, op.compute_cycles, op.memory_cycles, *_traffic(op))
            layer.add(f"{step.artifact.name} {name}", counts, cascades.get(primitive, ""))


def operator_claims(module, fused: tvm.IRModule | None = None) -> list[list[set[int]]]:
    """For each step of a `CompiledModel`'s program, the TFLite operators (indices) it computes: one set per
    composite of an NPU launch, one set for a host kernel call (as fusion recorded them)."""
    fused = fuse_host_ops(module.partitioned) if fused is None else fused
    callees = [fused[b.value.op] for block in fused["main"].body.blocks for b in block.bindings
               if isinstance(b.value, relax.Call) and isinstance(b.value.op, tvm.ir.GlobalVar)]
    if len(callees) != len(module.program.steps):
        raise AssertionError("the program's steps do not match main's calls")
    return [[composite_operators(c) for c in _composite_calls(callee)] if isinstance(step, NpuStep)
            else [composite_operators(callee)] for step, callee in zip(module.program.steps, callees)]


def layer_rows(module) -> list[LayerRow]:
    """One row per operator of the offload report (model order) of a `CompiledModel`."""
    fused = fuse_host_ops(module.partitioned)
    graphs = {graph.function: graph for graph in legalize(fused)}
    layers: dict[int, _Layer] = {}
    for step, claims in zip(module.program.steps, operator_claims(module, fused)):
        if isinstance(step, NpuStep):
            _npu_step(layers, step, graphs[step.artifact.function], claims)
        else:
            read = sum(module.program.tensors[name].nbytes for name in step.inputs)
            written = module.program.tensors[step.output].nbytes
            layers.setdefault(min(claims[0]), _Layer()).add(step.kernel.name, (0, 0, 0, 0, 0, 0, read, written))
    rows = []
    for entry in module.offload.ops:
        target = "NPU" if entry.target == "ethos-u" else "host"
        layer = layers.get(entry.index)
        rows.append(layer.row(entry.index, entry.op, target) if layer is not None
                    else LayerRow(entry.index, entry.op, target, _nothing(entry)))
    return rows


def _nothing(entry) -> str:
    """What an operator that no step computes became."""
    return entry.reason if entry.target == "host" and entry.reason.startswith("folded") else "fused into another"


def to_csv(rows: list[LayerRow]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    writer.writerows(astuple(row) for row in rows)
    return out.getvalue()


def to_table(rows: list[LayerRow]) -> str:
    """The rows as aligned text, with a total line (the cycles the summary reports)."""
    cells = [COLUMNS] + [tuple(str(v) for v in astuple(row)) for row in rows]
    total = ("", "total", "", "") + tuple(str(sum(getattr(r, c) for r in rows)) for c in COLUMNS[4:12]) + ("",)
    cells.append(total)
    widths = [max(len(row[i]) for row in cells) for i in range(len(COLUMNS))]
    numeric = set(range(4, 12)) | {0}
    return "\n".join("  ".join(cell.rjust(w) if i in numeric else cell.ljust(w)
                               for i, (cell, w) in enumerate(zip(row, widths))).rstrip() for row in cells)
