"""Which TFLite operators a composite function computes, recorded when it is fused (attribute ``OPERATORS_ATTR``).

It cannot be read back from binding names afterwards: fusion renames a composite's last binding, so a one-binding
composite (a PAD, a RESHAPE, one of SPLIT's slices) keeps none of its imported names. NPU partitioning and host
fusion both record it, so that the per-layer report and layer dumps attribute every step to its operator.
"""
from __future__ import annotations

import json

import tvm
from tvm import relax

OPERATORS_ATTR = "ethosu.operators"  # JSON list of the indices of the TFLite operators a composite computes


class OperatorRecorder:
    """FuseOpsByPattern's check sees a match's bindings (by imported name), its attribute getter only the match's
    annotated expressions: `matched` notes the operators of an accepted match under those expressions, `attrs`
    writes them on the composite made of it."""

    def __init__(self, owners: dict[str, int]):
        self.owners = owners  # binding name → operator index
        self.pending: dict[tuple, list[int]] = {}

    def matched(self, ctx) -> bool:
        names = (var.name for var in ctx.matched_bindings.keys())
        self.pending[_key(ctx.annotated_expr)] = sorted({self.owners[n] for n in names if n in self.owners})
        return True  # a check that accepts every match

    def attrs(self, annotated) -> dict[str, str]:
        return {OPERATORS_ATTR: json.dumps(self.pending[_key(annotated)])}


def composite_operators(func: relax.Function) -> set[int]:
    """The operators a composite function computes, as recorded when it was fused."""
    return set(json.loads(str(func.attrs[OPERATORS_ATTR])))


def _key(annotated) -> tuple:
    return tuple(sorted(annotated.items(), key=lambda item: str(item[0])))


def without_operators(mod: tvm.IRModule) -> tvm.IRModule:
    """A copy of `mod` without ``OPERATORS_ATTR`` on the composites its functions bind: it is build-time only (the
    MLF's relax.txt leaves it out)."""
    result = mod.clone()
    for gvar, func in mod.functions.items():
        if isinstance(func, relax.Function) and isinstance(func.body, relax.SeqExpr) and any(
                _tagged(b.value) for block in func.body.blocks for b in block.bindings):
            blocks = [type(block)([relax.VarBinding(b.var, b.value.without_attr(OPERATORS_ATTR)) if _tagged(b.value)
                                   else b for b in block.bindings]) for block in func.body.blocks]
            body = relax.SeqExpr(blocks, func.body.body, func.body.span)
            result.update_func(gvar, relax.Function(func.params, body, func.ret_ty, func.is_pure,
                                                    func.attrs, func.span))
    return result


def _tagged(value: relax.Expr) -> bool:
    return isinstance(value, relax.Function) and value.attrs is not None and OPERATORS_ATTR in value.attrs
