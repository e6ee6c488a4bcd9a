"""relax.dpl patterns over the QDQ Relax form that TVM's TFLite frontend emits, one per NPU-capable operator.

Each pattern names its interesting sub-expressions (annotations) so that the constraint checks and the legalizer
read them by role ("ifm", "weights", "conv", ...) instead of walking the graph again. Pattern names start with
``ethos-u.``: the text before the first '.' becomes the Codegen attribute of the merged functions.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import tvm
from tvm import relax
from tvm.relax.dpl import DFPattern, has_dtype, is_const, is_op, wildcard

CODEGEN = "ethos-u"


@dataclass(frozen=True)
class NpuPattern:
    """A named pattern with its annotated roles; `name` is the composite name, e.g. ``ethos-u.conv2d``."""

    name: str
    pattern: DFPattern
    annotations: dict[str, DFPattern] = field(default_factory=dict)

    @property
    def kind(self) -> str:
        return self.name.split(".", 1)[1]


def _dq(x: DFPattern) -> DFPattern:
    return is_op("relax.dequantize")(x, is_const(), is_const())


def _q(x: DFPattern) -> DFPattern:
    return is_op("relax.quantize")(x, is_const(), is_const())


def _int_clip(x: DFPattern) -> DFPattern:
    """A fused activation as the frontend writes it after quantize: a clip on the int8 output."""
    return is_op("relax.clip")(x, wildcard(), wildcard())


def _requantized(core: DFPattern, roles: dict[str, DFPattern]) -> DFPattern:
    """core [+ dequantized bias] → quantize [→ int clip]; records the roles "bias_dq", "quantize", "clip"."""
    bias_dq = _dq(is_const())
    biased = is_op("relax.add")(core, bias_dq)
    quantize = _q(biased | core)
    clip = _int_clip(quantize)
    roles.update(bias_dq=bias_dq, quantize=quantize, clip=clip)
    return clip | quantize


def _conv_like(name: str, depthwise: bool) -> NpuPattern:
    ifm, weights = wildcard(), is_const()
    ifm_dq, weights_dq = _dq(ifm), _dq(weights)
    kernel = is_op("relax.reshape")(weights_dq, wildcard()) if depthwise else weights_dq
    conv = is_op("relax.nn.conv2d")(ifm_dq, kernel)
    roles = dict(ifm=ifm, ifm_dq=ifm_dq, weights=weights, weights_dq=weights_dq, conv=conv)
    return NpuPattern(name, _requantized(conv, roles), roles)


def _fully_connected() -> NpuPattern:
    ifm, weights = wildcard(), is_const()
    ifm_dq = _dq(ifm)
    weights_dq = _dq(is_op("relax.permute_dims")(weights))
    matmul = is_op("relax.matmul")(ifm_dq, weights_dq)
    roles = dict(ifm=ifm, ifm_dq=ifm_dq, weights=weights, weights_dq=weights_dq, matmul=matmul)
    return NpuPattern(f"{CODEGEN}.fully_connected", _requantized(matmul, roles), roles)


def _pool(kind: str) -> NpuPattern:
    """Pools run on the raw int8 values (the frontend keeps no QDQ around them); avg pool widens to int32."""
    ifm = wildcard()
    if kind == "avg_pool2d":
        pool = is_op("relax.nn.avg_pool2d")(is_op("relax.astype")(ifm))
        out = is_op("relax.astype")(pool)
    else:
        pool = is_op("relax.nn.max_pool2d")(ifm)
        out = pool
    clip = _int_clip(out)
    return NpuPattern(f"{CODEGEN}.{kind}", clip | out, dict(ifm=ifm, pool=pool, out=out, clip=clip))


def _binary(kind: str, relax_op: str) -> NpuPattern:
    """dequantize both operands → op → optional float relu/clip (fused activation) → quantize."""
    lhs, rhs = wildcard(), wildcard()
    lhs_dq, rhs_dq = _dq(lhs), _dq(rhs)
    core = is_op(relax_op)(lhs_dq, rhs_dq)
    relu = is_op("relax.nn.relu")(core)
    float_clip = is_op("relax.clip")(core, wildcard(), wildcard())
    quantize = _q(relu | float_clip | core)
    roles = dict(lhs=lhs, rhs=rhs, lhs_dq=lhs_dq, rhs_dq=rhs_dq, core=core, relu=relu, float_clip=float_clip,
                 quantize=quantize)
    return NpuPattern(f"{CODEGEN}.{kind}", quantize, roles)


def _mean() -> NpuPattern:
    ifm = wildcard()
    ifm_dq = _dq(ifm)
    mean = is_op("relax.mean")(ifm_dq)
    quantize = _q(mean)
    return NpuPattern(f"{CODEGEN}.mean", quantize, dict(ifm=ifm, ifm_dq=ifm_dq, mean=mean, quantize=quantize))


def _unary(kind: str, core_of) -> NpuPattern:
    """dequantize → float op → quantize: an int8 → int8 function the NPU runs as a 256-entry lookup table."""
    ifm = wildcard()
    ifm_dq = _dq(ifm)
    core = core_of(ifm_dq)
    quantize = _q(core)
    return NpuPattern(f"{CODEGEN}.{kind}", quantize, dict(ifm=ifm, ifm_dq=ifm_dq, core=core, quantize=quantize))


def _hard_swish() -> NpuPattern:
    """The frontend's x · clip(x + 3, 0, 6) / 6 on the dequantized input."""
    ifm = wildcard()
    ifm_dq = _dq(ifm)
    shifted = is_op("relax.clip")(is_op("relax.add")(ifm_dq, is_const()), wildcard(), wildcard())
    core = is_op("relax.divide")(is_op("relax.multiply")(ifm_dq, shifted), is_const())
    quantize = _q(core)
    roles = dict(ifm=ifm, ifm_dq=ifm_dq, core=core, quantize=quantize)
    return NpuPattern(f"{CODEGEN}.hard_swish", quantize, roles)


def _reshape() -> NpuPattern:
    """RESHAPE, SQUEEZE and EXPAND_DIMS (imported as a reshape): the same int8 values under another shape."""
    ifm = wildcard() & has_dtype("int8")
    reshape = is_op("relax.reshape")(ifm, wildcard()) | is_op("relax.squeeze")(ifm)
    return NpuPattern(f"{CODEGEN}.reshape", reshape, dict(ifm=ifm, reshape=reshape))


def npu_patterns() -> list[NpuPattern]:
    """All patterns, most specific first (FuseOpsByPattern gives earlier patterns priority)."""
    return [
        _conv_like(f"{CODEGEN}.depthwise_conv2d", depthwise=True),
        _conv_like(f"{CODEGEN}.conv2d", depthwise=False),
        _fully_connected(),
        _pool("avg_pool2d"),
        _pool("max_pool2d"),
        _binary("add", "relax.add"),
        _binary("subtract", "relax.subtract"),
        _binary("multiply", "relax.multiply"),
        _binary("minimum", "relax.minimum"),
        _binary("maximum", "relax.maximum"),
        _mean(),
        _unary("relu", lambda x: is_op("relax.nn.relu")(x)),
        _unary("clip", lambda x: is_op("relax.clip")(x, wildcard(), wildcard())),
        _unary("abs", lambda x: is_op("relax.abs")(x)),
        _unary("leaky_relu", lambda x: is_op("relax.nn.leakyrelu")(x)),
        _unary("requantize", lambda x: x),
        _unary("tanh", lambda x: is_op("relax.tanh")(x)),
        _unary("logistic", lambda x: is_op("relax.sigmoid")(x)),
        _hard_swish(),
        _reshape(),
    ]


def npu_functions(mod: tvm.IRModule) -> list[tuple[str, relax.Function]]:
    """The merged NPU functions of a partitioned module, as (global name, function), in main's call order."""
    found: list[tuple[str, relax.Function]] = []
    for block in mod["main"].body.blocks:
        for binding in block.bindings:
            callee = getattr(binding.value, "op", None)
            if not isinstance(callee, tvm.ir.GlobalVar) or any(name == callee.name_hint for name, _ in found):
                continue
            func = mod[callee]
            if isinstance(func, relax.Function) and func.attrs is not None and func.attrs.get("Codegen") == CODEGEN:
                found.append((callee.name_hint, func))
    return found
