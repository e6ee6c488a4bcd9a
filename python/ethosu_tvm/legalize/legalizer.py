"""Turn each merged NPU function of a partitioned module into an NpuGraph of primitive operators."""
from __future__ import annotations

import tvm
from tvm import relax

from ..partition.npu_view import pack_view, transposed_ofm_shape
from ..partition.patterns import npu_functions, npu_patterns
from ..qdq.match import Match, match_composite
from ..qdq.patterns import concat_arities
from ..qdq.values import dtype_of, shape_of
from .ops import NpuGraph, Tensor
from .pad_fusion import fold_pads
from .rules import RULES
from .rules.operands import LegalizeError, npu_shape


class _Names:
    """Unique tensor names: merged functions may bind several vars with one name (e.g. "lv")."""

    def __init__(self):
        self.used: set[str] = set()

    def tensor(self, var: relax.Var, shape: tuple[int, int, int, int] | None = None, dtype: str | None = None
               ) -> Tensor:
        """`var`'s tensor, in `shape` and `dtype` (the same bytes) when given."""
        name, suffix = var.name, 1
        while name in self.used:
            name, suffix = f"{var.name}_{suffix}", suffix + 1
        self.used.add(name)
        return Tensor(name, shape or npu_shape(shape_of(var)), dtype or dtype_of(var))


def ofm_type(match: Match, var: relax.Var) -> tuple[tuple[int, int, int, int], str]:
    """The 4-D shape and element type a composite's output is written in (the same bytes): PACK's view of its OFM
    (see `pack_view`); int64 ARG_MAX indices as int32 pairs, each index then 0 (little-endian, as the NPU writes no
    64-bit values); a TRANSPOSE's with its batch merged into its height (`transposed_ofm_shape`); other outputs' own
    shapes in NHWC."""
    if match.kind == "transpose":
        return transposed_ofm_shape(shape_of(var)), dtype_of(var)
    if match.kind == "pack":
        concat = match["concat"]
        return pack_view(shape_of(concat), int(concat.attrs.axis) % len(shape_of(concat)))[0], dtype_of(var)
    if match.kind in ("arg_max", "arg_min") and dtype_of(var) == "int64":
        return npu_shape(shape_of(var) + (2,)), "int32"
    return npu_shape(shape_of(var)), dtype_of(var)


def _outputs(func: relax.Function, tensors: dict) -> tuple[Tensor, ...]:
    result = func.body.body
    fields = result.fields if isinstance(result, relax.Tuple) else [result]
    return tuple(tensors[f] for f in fields)


def legalize_function(name: str, func: relax.Function, function: str = "") -> NpuGraph:
    """Legalize one ``Codegen="ethos-u"`` function: the primitives of each composite call (one for most), in
    binding order, with PADs folded into the convolutions that read them (`fold_pads`)."""
    names = _Names()
    tensors: dict[relax.Var, Tensor] = {param: names.tensor(param) for param in func.params}
    composites: dict[relax.Var, relax.Function] = {}
    ops, sources = [], []
    for block in func.body.blocks:
        for binding in block.bindings:
            value = binding.value
            if isinstance(value, relax.Function):
                composites[binding.var] = value
            elif isinstance(value, relax.Call) and value.op in composites:
                composite = composites[value.op]
                match = match_composite(composite, npu_patterns(concat_arities(composite)))
                tensors[binding.var] = names.tensor(binding.var, *ofm_type(match, binding.var))
                arguments = {param: tensors[arg] for param, arg in zip(composite.params, value.args)}
                source = f"{match.kind}:{tensors[binding.var].name}"
                legalized = RULES[match.kind](match, arguments, tensors[binding.var], source)
                ops.extend(legalized if isinstance(legalized, tuple) else (legalized,))
                sources.append(source)
            elif isinstance(value, relax.Var):
                tensors[binding.var] = tensors[value]
            else:
                raise LegalizeError(f"unexpected binding {binding.var.name} in NPU function {name}")
    return fold_pads(NpuGraph(name, tuple(tensors[p] for p in func.params), _outputs(func, tensors), tuple(ops),
                              function, tuple(sources)))


def legalize(mod: tvm.IRModule) -> list[NpuGraph]:
    """All NPU subgraphs of a partitioned module, named ``ethos_u_0``, ``ethos_u_1``... in execution order."""
    return [legalize_function(f"ethos_u_{i}", func, gname) for i, (gname, func) in enumerate(npu_functions(mod))]
