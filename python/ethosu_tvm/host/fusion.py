"""Host fusion: the bindings partitioning leaves in ``main`` become ``host.<kind>`` composite functions.

Pools, pads, reshapes, slices, transposes, packs, nearest-neighbour resizes, ARG_MAX and ARG_MIN run on raw integers
in Relax, without their quantization:
:func:`fuse_host_ops` copies it from the importer's tensor map onto the composite (attribute ``QUANT_ATTR``),
together with the source operator it came from (``SOURCE_ATTR``, for messages).
"""
from __future__ import annotations

import json
from collections.abc import Callable

import tvm
from tvm import relax
from tvm.relax.transform import FuseOpsByPattern, FusionPattern

from ..frontend.attributes import source_ops, tensor_quant
from ..partition.patterns import CODEGEN
from ..qdq.patterns import called_functions, concat_arities
from ..qdq.sources import OperatorRecorder
from .patterns import HOST, QUANT_ATTR, SOURCE_ATTR, host_patterns
from .spec import UnsupportedHostOp

_RAW_KINDS = frozenset({"avg_pool2d", "max_pool2d", "reshape", "pad", "resize_nearest_neighbor", "strided_slice",
                        "transpose", "pack", "broadcast_to", "arg_max", "arg_min"})


def host_functions(mod: tvm.IRModule) -> list[tuple[str, relax.Function]]:
    """The host composite functions main calls, as (global name, function), in call order."""
    return called_functions(mod, "Composite", f"{HOST}.")


def fuse_host_ops(mod: tvm.IRModule) -> tvm.IRModule:
    """Group the bindings a partitioned module keeps in ``main`` into ``host.<kind>`` composite functions.

    NPU functions are left as they are. Raises UnsupportedHostOp naming the first TFLite operator that neither
    the NPU nor a host kernel covers.
    """
    owners = {name: op for op in source_ops(mod) for name in op.bindings}
    recorder = OperatorRecorder({name: op.index for name, op in owners.items()})
    quant = tensor_quant(mod)
    for pattern in host_patterns(concat_arities(mod["main"])):
        # One pattern per pass: fusing renames main's vars, so each pass reads the names its matches still carry.
        names = _original_names(mod["main"])
        fusion = FusionPattern(pattern.name, pattern.pattern, pattern.annotations, recorder.matched,
                               _attrs_getter(pattern.kind, names, owners, quant, recorder))
        mod = FuseOpsByPattern([fusion], bind_constants=True, annotate_codegen=False, entry_functions=["main"])(mod)
    leftovers = []
    for block in mod["main"].body.blocks:
        for binding in block.bindings:
            value = binding.value
            callee = getattr(value, "op", None)
            attrs = mod[callee].attrs if isinstance(callee, tvm.ir.GlobalVar) else None
            covered = attrs is not None and (str(attrs.get("Codegen", "")) == CODEGEN
                                             or str(attrs.get("Composite", "")).startswith(f"{HOST}."))
            if not (covered or isinstance(value, (relax.Tuple, relax.TupleGetItem, relax.Var))):
                leftovers.append(binding)
    if leftovers:
        raise UnsupportedHostOp(_unsupported(leftovers, owners))
    return mod


def _original_names(main: relax.Function) -> dict[relax.Expr, str]:
    """The import-time name of main's params and of its not yet fused bindings, by var and by bound value (a
    fused call's var gets a fresh name that may repeat an imported one, so those are left out)."""
    names: dict[relax.Expr, str] = {param: param.name for param in main.params}
    for block in main.body.blocks:
        for binding in block.bindings:
            value = binding.value
            if not isinstance(getattr(value, "op", None), tvm.ir.GlobalVar):
                names[binding.var] = binding.var.name
                if not isinstance(value, relax.Var):  # an alias must not rename the var it aliases
                    names[value] = binding.var.name
    return names


def _attrs_getter(kind: str, names: dict, owners: dict, quant: dict, recorder: OperatorRecorder
                  ) -> Callable[[dict], dict[str, str]]:
    """Attributes of a new composite: the source operator of its bindings (for messages; the operators it computes,
    for layer reports, from `recorder`) and, for raw-integer kinds, the quantization of any of its tensors (those
    ops keep it from input to output; ARG_MAX's and ARG_MIN's int32 output has none)."""
    def attrs(annotated: dict) -> dict[str, str]:
        found = {role: names[expr] for role, expr in annotated.items() if expr in names}
        own = [name for role, name in found.items() if not _is_operand(role)]  # operands are their producers'
        result = {SOURCE_ATTR: next((_where(owners, n) for n in own if n in owners), ""), **recorder.attrs(annotated)}
        known = [quant[n] for n in found.values() if n in quant]
        if kind in _RAW_KINDS and known:
            result[QUANT_ATTR] = json.dumps(known[0])
        return {key: value for key, value in result.items() if value}

    return attrs


def _is_operand(role: str) -> bool:
    return (role in ("ifm", "lhs", "rhs", "condition", "x", "y", "value", "params", "indices")
            or (role.startswith("input") and role[5:].isdigit()))


def _where(owners: dict, name: str) -> str:
    op = owners.get(name)
    return f"operator #{op.index} {op.op}" if op is not None else f"binding {name}"


def _unsupported(leftovers: list, owners: dict) -> str:
    """Name the first uncovered operator by its own Relax op (rather than the dequantize its import starts with)."""
    where = _where(owners, leftovers[0].var.name)
    ops = [_describe(b.value) for b in leftovers if _where(owners, b.var.name) == where]
    core = next((op for op in ops if op not in ("relax.dequantize", "relax.quantize")), ops[0])
    return f"{where} has no NPU or host kernel ({core})"


def _describe(value: relax.Expr) -> str:
    op = getattr(value, "op", None)
    if isinstance(op, tvm.ir.Op):
        return op.name
    if isinstance(op, tvm.ir.GlobalVar):
        return op.name_hint
    return type(value).__name__
