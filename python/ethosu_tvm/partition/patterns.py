"""relax.dpl patterns over the QDQ Relax form that TVM's TFLite frontend emits, one per NPU-capable operator.

Each pattern names its interesting sub-expressions (annotations) so that the constraint checks and the legalizer
read them by role ("ifm", "weights", "conv", ...) instead of walking the graph again. Pattern names start with
``ethos-u.``: the text before the first '.' becomes the Codegen attribute of the merged functions. The builders take
the composite name so that the host patterns (``host.<kind>``, for what stays on the Cortex-M) reuse them.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import tvm
from tvm import relax
from tvm.relax.dpl import DFPattern, has_dtype, is_const, is_op, wildcard

CODEGEN = "ethos-u"


@dataclass(frozen=True)
class NpuPattern:
    """A named pattern with its annotated roles; `name` is the composite name, e.g. ``ethos-u.conv2d`` (the host
    patterns of :mod:`ethosu_tvm.host.legalize` use it too, named ``host.<kind>``)."""

    name: str
    pattern: DFPattern
    annotations: dict[str, DFPattern] = field(default_factory=dict)

    @property
    def kind(self) -> str:
        return self.name.split(".", 1)[1]


def dequantized(x: DFPattern) -> DFPattern:
    return is_op("relax.dequantize")(x, is_const(), is_const())


def quantized(x: DFPattern) -> DFPattern:
    return is_op("relax.quantize")(x, is_const(), is_const())


def _int_clip(x: DFPattern) -> DFPattern:
    """A fused activation as the frontend writes it after quantize: a clip on the integer output."""
    return is_op("relax.clip")(x, wildcard(), wildcard())


def _requantized(core: DFPattern, roles: dict[str, DFPattern]) -> DFPattern:
    """core [+ dequantized bias] → quantize [→ int clip]; records the roles "bias_dq", "quantize", "clip"."""
    bias_dq = dequantized(is_const())
    biased = is_op("relax.add")(core, bias_dq)
    quantize = quantized(biased | core)
    clip = _int_clip(quantize)
    roles.update(bias_dq=bias_dq, quantize=quantize, clip=clip)
    return clip | quantize


def _conv_like(name: str, depthwise: bool) -> NpuPattern:
    ifm, weights = wildcard(), is_const()
    ifm_dq, weights_dq = dequantized(ifm), dequantized(weights)
    kernel = is_op("relax.reshape")(weights_dq, wildcard()) if depthwise else weights_dq
    conv = is_op("relax.nn.conv2d")(ifm_dq, kernel)
    roles = dict(ifm=ifm, ifm_dq=ifm_dq, weights=weights, weights_dq=weights_dq, conv=conv)
    return NpuPattern(name, _requantized(conv, roles), roles)


def _fully_connected(name: str) -> NpuPattern:
    ifm, weights = wildcard(), is_const()
    ifm_dq = dequantized(ifm)
    weights_dq = dequantized(is_op("relax.permute_dims")(weights))
    matmul = is_op("relax.matmul")(ifm_dq, weights_dq)
    roles = dict(ifm=ifm, ifm_dq=ifm_dq, weights=weights, weights_dq=weights_dq, matmul=matmul)
    return NpuPattern(name, _requantized(matmul, roles), roles)


def _pool(name: str, kind: str) -> NpuPattern:
    """Pools run on the raw integer values (the frontend keeps no QDQ around them); avg pool widens to int32."""
    ifm = wildcard()
    if kind == "avg_pool2d":
        pool_call = is_op("relax.nn.avg_pool2d")(is_op("relax.astype")(ifm))
        out = is_op("relax.astype")(pool_call)
    else:
        pool_call = is_op("relax.nn.max_pool2d")(ifm)
        out = pool_call
    clip = _int_clip(out)
    return NpuPattern(name, clip | out, dict(ifm=ifm, pool=pool_call, out=out, clip=clip))


def _binary(name: str, relax_op: str) -> NpuPattern:
    """dequantize both operands → op → optional float relu/clip (fused activation) → quantize."""
    lhs, rhs = wildcard(), wildcard()
    lhs_dq, rhs_dq = dequantized(lhs), dequantized(rhs)
    core = is_op(relax_op)(lhs_dq, rhs_dq)
    relu = is_op("relax.nn.relu")(core)
    float_clip = is_op("relax.clip")(core, wildcard(), wildcard())
    quantize = quantized(relu | float_clip | core)
    roles = dict(lhs=lhs, rhs=rhs, lhs_dq=lhs_dq, rhs_dq=rhs_dq, core=core, relu=relu, float_clip=float_clip,
                 quantize=quantize)
    return NpuPattern(name, quantize, roles)


def _mean(name: str) -> NpuPattern:
    ifm = wildcard()
    ifm_dq = dequantized(ifm)
    mean = is_op("relax.mean")(ifm_dq)
    quantize = quantized(mean)
    return NpuPattern(name, quantize, dict(ifm=ifm, ifm_dq=ifm_dq, mean=mean, quantize=quantize))


def unary(name: str, core_of: Callable[[DFPattern], DFPattern]) -> NpuPattern:
    """dequantize → float op → quantize (on the NPU an int8 → int8 function run as a 256-entry lookup table)."""
    ifm = wildcard()
    ifm_dq = dequantized(ifm)
    core = core_of(ifm_dq)
    quantize = quantized(core)
    return NpuPattern(name, quantize, dict(ifm=ifm, ifm_dq=ifm_dq, core=core, quantize=quantize))


def _hard_swish(name: str) -> NpuPattern:
    """The frontend's x · clip(x + 3, 0, 6) / 6 on the dequantized input."""
    ifm = wildcard()
    ifm_dq = dequantized(ifm)
    shifted = is_op("relax.clip")(is_op("relax.add")(ifm_dq, is_const()), wildcard(), wildcard())
    core = is_op("relax.divide")(is_op("relax.multiply")(ifm_dq, shifted), is_const())
    quantize = quantized(core)
    roles = dict(ifm=ifm, ifm_dq=ifm_dq, core=core, quantize=quantize)
    return NpuPattern(name, quantize, roles)


def reshape(name: str, dtypes: tuple[str, ...] = ("int8",)) -> NpuPattern:
    """RESHAPE, SQUEEZE and EXPAND_DIMS (imported as a reshape): the same integer values under another shape."""
    dtype_check = has_dtype(dtypes[0])
    for dtype in dtypes[1:]:
        dtype_check = dtype_check | has_dtype(dtype)
    ifm = wildcard() & dtype_check
    reshape_call = is_op("relax.reshape")(ifm, wildcard()) | is_op("relax.squeeze")(ifm)
    return NpuPattern(name, reshape_call, dict(ifm=ifm, reshape=reshape_call))


# Float cores of the dequantize → op → quantize functions, by composite kind.
UNARY_CORES: dict[str, Callable[[DFPattern], DFPattern]] = {
    "relu": lambda x: is_op("relax.nn.relu")(x),
    "clip": lambda x: is_op("relax.clip")(x, wildcard(), wildcard()),
    "abs": lambda x: is_op("relax.abs")(x),
    "leaky_relu": lambda x: is_op("relax.nn.leakyrelu")(x),
    "requantize": lambda x: x,
    "tanh": lambda x: is_op("relax.tanh")(x),
    "logistic": lambda x: is_op("relax.sigmoid")(x),
}
BINARY_OPS = {"add": "relax.add", "subtract": "relax.subtract", "multiply": "relax.multiply",
              "minimum": "relax.minimum", "maximum": "relax.maximum"}


def weighted_and_elementwise(prefix: str) -> list[NpuPattern]:
    """Convolutions, fully connected, pools and binary elementwise ops, most specific first: the patterns the NPU
    and the host share (the host takes the ones the NPU's constraints reject)."""
    return [
        _conv_like(f"{prefix}.depthwise_conv2d", depthwise=True),
        _conv_like(f"{prefix}.conv2d", depthwise=False),
        _fully_connected(f"{prefix}.fully_connected"),
        _pool(f"{prefix}.avg_pool2d", "avg_pool2d"),
        _pool(f"{prefix}.max_pool2d", "max_pool2d"),
        *(_binary(f"{prefix}.{kind}", relax_op) for kind, relax_op in BINARY_OPS.items()),
    ]


def npu_patterns() -> list[NpuPattern]:
    """All patterns, most specific first (FuseOpsByPattern gives earlier patterns priority)."""
    return [
        *weighted_and_elementwise(CODEGEN),
        _mean(f"{CODEGEN}.mean"),
        *(unary(f"{CODEGEN}.{kind}", core) for kind, core in UNARY_CORES.items()),
        _hard_swish(f"{CODEGEN}.hard_swish"),
        reshape(f"{CODEGEN}.reshape"),
    ]


def called_functions(mod: tvm.IRModule, attr: str, prefix: str) -> list[tuple[str, relax.Function]]:
    """The functions main calls whose attribute `attr` starts with `prefix`, as (global name, function), in main's
    call order (each once)."""
    found: list[tuple[str, relax.Function]] = []
    for block in mod["main"].body.blocks:
        for binding in block.bindings:
            callee = getattr(binding.value, "op", None)
            if not isinstance(callee, tvm.ir.GlobalVar) or any(name == callee.name_hint for name, _ in found):
                continue
            func = mod[callee]
            if isinstance(func, relax.Function) and str((func.attrs or {}).get(attr, "")).startswith(prefix):
                found.append((callee.name_hint, func))
    return found


def npu_functions(mod: tvm.IRModule) -> list[tuple[str, relax.Function]]:
    """The merged NPU functions of a partitioned module, as (global name, function), in main's call order."""
    return [(name, func) for name, func in called_functions(mod, "Codegen", CODEGEN)
            if str(func.attrs["Codegen"]) == CODEGEN]
