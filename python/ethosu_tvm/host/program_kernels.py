"""The host kernels of a fused module: one C function per non-NPU function that ``main`` calls."""
from __future__ import annotations

import tvm

from ..partition.patterns import CODEGEN
from .implementation import REGISTRY
from .kernel import HostKernel
from .spec import op_name
from .spec_reader import host_spec


def build_host_kernels(mod: tvm.IRModule, target: tvm.target.Target, prefix: str) -> dict[str, HostKernel]:
    """Build every host composite ``main`` calls for `target`, by global function name. Kernels are named
    ``<prefix>_<op>_<n>``, n counting each op in call order, so that one program's kernels link together.
    Each kernel comes from the implementation REGISTRY selects (a kernel library's, else the portable C).
    Raises UnsupportedHostOp for a called function that is neither an NPU function nor a host composite."""
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
            kernels[callee.name_hint] = REGISTRY.build(op, f"{prefix}_{kind}_{counts[kind] - 1}", target)
    return kernels
