"""The host kernels of a fused module: one C function per non-NPU function that ``main`` calls."""
from __future__ import annotations

import tvm

from ..partition.patterns import CODEGEN
from .implementation import REGISTRY
from .kernel import HostKernel
from .patterns import SOURCE_ATTR
from .spec import QuantTensor, Reshape, UnsupportedHostOp, op_name
from .spec_reader import host_spec


def build_host_kernels(mod: tvm.IRModule, target: tvm.target.Target, prefix: str) -> dict[str, HostKernel]:
    """Build every host composite ``main`` calls for `target`, by global function name. Kernels are named
    ``<prefix>_<op>_<n>``, n counting each op in call order, so that one program's kernels link together.
    Each kernel comes from the implementation REGISTRY selects (a kernel library's, else the portable C).
    Raises UnsupportedHostOp for a called function that is neither an NPU function nor a host composite, or that
    no kernel computes, naming the TFLite operator."""
    kernels: dict[str, HostKernel] = {}
    counts: dict[str, int] = {}
    for block in mod["main"].body.blocks:
        for binding in block.bindings:
            callee = getattr(binding.value, "op", None)
            if not isinstance(callee, tvm.ir.GlobalVar) or callee.name_hint in kernels:
                continue
            func = mod[callee]
            if (func.attrs or {}).get("Codegen") == CODEGEN:
                continue
            op = host_spec(func)
            kind = op_name(op)
            counts[kind] = counts.get(kind, 0) + 1
            try:
                kernels[callee.name_hint] = REGISTRY.build(op, f"{prefix}_{kind}_{counts[kind] - 1}", target)
            except UnsupportedHostOp as err:
                raise UnsupportedHostOp(_naming_the_operator(str(err), kind, func)) from None
    return kernels


def _naming_the_operator(message: str, kind: str, func) -> str:
    """A kernel's refusal ("<kind>: <problem>") with the TFLite operator the function computes in place of the
    kernel kind, where fusion recorded it: a model has many MULs."""
    where = (func.attrs or {}).get(SOURCE_ATTR)
    if not where:
        return message
    return f"{where}: {message.removeprefix(f'{kind}: ')}"


def build_copy_kernel(nbytes: int, target: tvm.target.Target, name: str) -> HostKernel:
    """A kernel copying `nbytes` bytes: a model output that repeats a model input or another output needs a buffer
    of its own, which TFLite fills as it passes the tensor on (the copy is a reshape of bytes, whatever the type)."""
    tensor = QuantTensor((nbytes,), "int8", 1.0, 0)
    return REGISTRY.build(Reshape(tensor, tensor), name, target)
