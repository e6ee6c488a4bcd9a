"""FuseOpsByPattern + MergeCompositeFunctions with the NPU patterns, and the offload report of the result."""
from __future__ import annotations

from dataclasses import dataclass, field

import tvm
from tvm import relax
from tvm.relax.transform import FuseOpsByPattern, FusionPattern, MergeCompositeFunctions

from ..frontend.attributes import source_ops
from ..target import EthosuTarget, parse_ethosu_target
from ..qdq.match import match_from_context
from ..qdq.patterns import CompositePattern, concat_arities, required_ops
from ..qdq.sources import OperatorRecorder
from .constraints import check
from .patterns import npu_patterns
from .report import HOST, NPU, OffloadEntry, OffloadReport


@dataclass
class _CheckLog:
    """What the checks saw: bindings of accepted matches, and the first rejection reason per binding name."""

    accepted: set[str] = field(default_factory=set)
    rejected: dict[str, str] = field(default_factory=dict)


# Operators whose import ends in a reshape of a strided slice (shrunk or new axes): the host kernel of the slice
# writes the reshaped tensor too, so the NPU leaves that reshape alone.
_SLICED_OPS = frozenset({"STRIDED_SLICE", "UNPACK"})
# The reason given for an operator no model output depends on (the importer removes it).
UNUSED = "no model output depends on its result: not compiled"
# Patterns that stand for one operator only: an astype is a CAST's, not what a rejected pattern leaves behind.
_OWNED_PATTERNS = {"cast": "CAST"}


def _fusion_pattern(pattern: CompositePattern, log: _CheckLog, owners: dict[str, str],
                    recorder: OperatorRecorder) -> FusionPattern:
    """Wrap the pattern's constraint check so that its verdict is remembered for every binding it covered, and
    the operators of what it accepts recorded on the composite."""

    def run(ctx) -> bool:
        names = [var.name for var in ctx.matched_bindings.keys()]
        sliced = next((owners[n] for n in names if owners.get(n) in _SLICED_OPS), None)
        owner = _OWNED_PATTERNS.get(pattern.kind)
        foreign = next((owners[n] for n in names if owner is not None and owners.get(n, owner) != owner), None)
        if pattern.kind == "reshape" and sliced is not None:
            reason = f"no NPU pattern for {sliced}"
        elif foreign is not None:
            reason = f"no NPU pattern for {foreign}"
        else:
            reason = check(match_from_context(pattern, ctx))
        if reason:
            for name in names:
                log.rejected.setdefault(name, reason)
        else:
            log.accepted.update(names)
            recorder.matched(ctx)
        return not reason

    return FusionPattern(pattern.name, pattern.pattern, pattern.annotations, run, recorder.attrs)


def _operators(mod: tvm.IRModule) -> frozenset[str]:
    """The names of the operators the module calls (patterns needing others cannot match: FuseOpsByPattern is not
    given them)."""
    found: set[str] = set()

    def visit(expr) -> None:
        if isinstance(expr, relax.Call) and isinstance(expr.op, tvm.ir.Op):
            found.add(expr.op.name)

    for function in mod.functions.values():
        if isinstance(function, relax.Function):
            relax.analysis.post_order_visit(function, visit)
    return frozenset(found)


def _report(mod: tvm.IRModule, log: _CheckLog, accelerator: str) -> OffloadReport:
    entries = []
    for op in source_ops(mod):
        if op.bindings and all(name in log.accepted for name in op.bindings):
            entries.append(OffloadEntry(op.index, op.op, NPU))
            continue
        reason = next((log.rejected[n] for n in op.bindings if n in log.rejected), "")
        if op.unused:
            reason = UNUSED
        elif not op.bindings:
            reason = "folded into constants by the frontend"
        elif not reason:
            reason = f"no NPU pattern for {op.op}"
        entries.append(OffloadEntry(op.index, op.op, HOST, reason))
    return OffloadReport(accelerator, tuple(entries))


def partition_for_ethosu(mod: tvm.IRModule, accelerator: str | EthosuTarget = "ethos-u55-256",
                         split_launches: bool = False):
    """Partition a QDQ Relax module (from :func:`ethosu_tvm.frontend.importer.from_tflite`) for the NPU.

    Returns ``(partitioned IRModule, OffloadReport)``. The U55 constraints are the same for every MAC
    configuration; the accelerator is recorded in the report and as the module attribute ``ethosu.accelerator``.
    With `split_launches` (debug builds), each composite (one TFLite operator) gets a ``Codegen="ethos-u"``
    function of its own instead of being merged with its neighbours: one NPU launch per operator, so that each
    operator's output reaches memory whole and a layer dump can read it.
    """
    target = accelerator if isinstance(accelerator, EthosuTarget) else parse_ethosu_target(accelerator)
    log = _CheckLog()
    owners = {name: op.op for op in source_ops(mod) for name in op.bindings}
    recorder = OperatorRecorder({name: op.index for op in source_ops(mod) for name in op.bindings})
    present = _operators(mod)
    patterns = [_fusion_pattern(p, log, owners, recorder) for p in npu_patterns(concat_arities(mod["main"]))
                if required_ops(p.pattern) <= present]
    fused = FuseOpsByPattern(patterns, bind_constants=True, annotate_codegen=split_launches)(mod)
    merged = fused if split_launches else MergeCompositeFunctions()(fused)
    merged = merged.with_attr("ethosu.accelerator", target.accelerator)
    return merged, _report(mod, log, target.accelerator)


def host_only_report(mod: tvm.IRModule) -> OffloadReport:
    """The report of a build without an NPU target: every operator runs on the host."""
    return OffloadReport("none", tuple(OffloadEntry(op.index, op.op, HOST, UNUSED if op.unused else "no ethos-u target")
                                       for op in source_ops(mod)))
