"""Host legalization: what partitioning leaves in ``main`` becomes ``host.<kind>`` composite functions, and each
composite is read back as the :mod:`~ethosu_tvm.host.spec` op its C kernel is built from.

The host patterns reuse the NPU pattern builders (the host runs the same QDQ forms, plus int16 and the ops the NPU
lacks), so both sides agree on what one TFLite operator looks like in Relax. Pools, pads and reshapes run on raw
integers in Relax, without their quantization: :func:`fuse_host_ops` copies it from the importer's tensor map onto
the composite (attribute ``ethosu.quantization``), together with the source operator it came from (for messages).
"""
from __future__ import annotations

import json
from collections.abc import Callable, Iterable

import numpy as np
import tvm
from tvm import relax
from tvm.relax.dpl import is_const, is_op, is_tuple, wildcard
from tvm.relax.transform import FuseOpsByPattern, FusionPattern

from ..frontend.importer import source_ops, tensor_quant
from ..legalize import scaling  # a module reference: legalize.scaling imports this package
from ..partition.match import Match, match_composite
from ..partition.patterns import (
    CODEGEN,
    UNARY_CORES,
    NpuPattern,
    called_functions,
    dequantized,
    quantized,
    reshape,
    unary,
    weighted_and_elementwise,
)
from ..partition.qdq import Quant, bound_values, const_value, dtype_of, prim_float, quant_of, shape_of
from ..partition.qdq import is_const as is_constant
from . import spec
from .spec import UnsupportedHostOp

HOST = "host"
QUANT_ATTR = "ethosu.quantization"
SOURCE_ATTR = "ethosu.source_op"
_UNARY_KINDS = ("relu", "clip", "leaky_relu", "requantize", "tanh", "logistic")
_RAW_KINDS = frozenset({"avg_pool2d", "max_pool2d", "reshape", "pad"})
_BINARY_KINDS = {"add": "add", "subtract": "sub", "multiply": "mul", "minimum": "minimum", "maximum": "maximum"}


# -- patterns ------------------------------------------------------------------------------------------------------
def _softmax_pattern() -> NpuPattern:
    """dequantize → [multiply by beta, when beta ≠ 1] → softmax → quantize."""
    ifm, beta = wildcard(), is_const()
    ifm_dq = dequantized(ifm)
    core = is_op("relax.nn.softmax")(is_op("relax.multiply")(ifm_dq, beta) | ifm_dq)
    quantize = quantized(core)
    return NpuPattern(f"{HOST}.softmax", quantize, dict(ifm=ifm, ifm_dq=ifm_dq, beta=beta, core=core,
                                                        quantize=quantize))


def _pad_pattern() -> NpuPattern:
    """PAD pads the raw integers (with the zero point as pad value)."""
    ifm = wildcard()
    pad = is_op("relax.nn.pad")(ifm)
    return NpuPattern(f"{HOST}.pad", pad, dict(ifm=ifm, pad=pad))


def _concatenation_pattern(arity: int) -> NpuPattern:
    """dequantize each input → concat → quantize; dpl tuples have a fixed size, so one pattern per input count."""
    inputs = [wildcard() for _ in range(arity)]
    dqs = [dequantized(x) for x in inputs]
    concat = is_op("relax.concat")(is_tuple(dqs))
    quantize = quantized(concat)
    roles = {f"input{i}": x for i, x in enumerate(inputs)} | {f"input{i}_dq": d for i, d in enumerate(dqs)}
    return NpuPattern(f"{HOST}.concatenation", quantize, roles | dict(concat=concat, quantize=quantize))


def host_patterns(concat_arities: Iterable[int] = ()) -> list[NpuPattern]:
    """Every host pattern, most specific first; concatenation once per input count in `concat_arities`."""
    return [
        *weighted_and_elementwise(HOST),
        _softmax_pattern(),
        *(unary(f"{HOST}.{kind}", UNARY_CORES[kind]) for kind in _UNARY_KINDS),
        reshape(f"{HOST}.reshape", ("int8", "int16")),
        _pad_pattern(),
        *(_concatenation_pattern(n) for n in sorted(set(concat_arities))),
    ]


def _concat_arities(func: relax.Function) -> set[int]:
    return {len(value.args[0].fields) for value in bound_values(func).values()
            if isinstance(value, relax.Call) and getattr(value.op, "name", "") == "relax.concat"
            and isinstance(value.args[0], relax.Tuple)}


# -- fusion --------------------------------------------------------------------------------------------------------
def host_functions(mod: tvm.IRModule) -> list[tuple[str, relax.Function]]:
    """The host composite functions main calls, as (global name, function), in call order."""
    return called_functions(mod, "Composite", f"{HOST}.")


def fuse_host_ops(mod: tvm.IRModule) -> tvm.IRModule:
    """Group the bindings a partitioned module keeps in ``main`` into ``host.<kind>`` composite functions.

    NPU functions are left as they are. Raises UnsupportedHostOp naming the first TFLite operator that neither
    the NPU nor a host kernel covers.
    """
    owners = {name: op for op in source_ops(mod) for name in op.bindings}
    quant = tensor_quant(mod)
    for pattern in host_patterns(_concat_arities(mod["main"])):
        # One pattern per pass: fusing renames main's vars, so each pass reads the names its matches still carry.
        names = _original_names(mod["main"])
        fusion = FusionPattern(pattern.name, pattern.pattern, pattern.annotations,
                               attrs_getter=_attrs_getter(pattern.kind, names, owners, quant))
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


def _attrs_getter(kind: str, names: dict, owners: dict, quant: dict) -> Callable[[dict], dict[str, str]]:
    """Attributes of a new composite: the source operator of its bindings and, for raw-integer kinds, the
    quantization of any of its tensors (those ops keep it from input to output)."""
    def attrs(annotated: dict) -> dict[str, str]:
        found = {role: names[expr] for role, expr in annotated.items() if expr in names}
        own = [name for role, name in found.items() if not _is_operand(role)]  # operands are their producers'
        result = {SOURCE_ATTR: next((_where(owners, n) for n in own if n in owners), "")}
        known = [quant[n] for n in found.values() if n in quant]
        if kind in _RAW_KINDS and known:
            result[QUANT_ATTR] = json.dumps(known[0])
        return {key: value for key, value in result.items() if value}

    return attrs


def _is_operand(role: str) -> bool:
    return role in ("ifm", "lhs", "rhs") or (role.startswith("input") and role[5:].isdigit())


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


# -- composite → spec ----------------------------------------------------------------------------------------------
def host_spec(func: relax.Function) -> spec.HostOp:
    """The host op description of one ``host.<kind>`` composite; its inputs follow the function's parameters."""
    name = str((func.attrs or {}).get("Composite", ""))
    where = str((func.attrs or {}).get(SOURCE_ATTR, name or "function"))
    kind = name.split(".", 1)[1] if name.startswith(f"{HOST}.") else ""
    if kind not in _SPECS:
        raise UnsupportedHostOp(f"{where}: {name or 'a function without a Composite attribute'} is not a host op")
    try:
        match = match_composite(func, host_patterns(_concat_arities(func)))
        return _SPECS[kind](_Composite(func, match))
    except ValueError as err:  # UnsupportedHostOp, or a body that no longer matches its pattern
        raise UnsupportedHostOp(f"{where}: {err}") from None


class _Composite:
    """A matched composite with the readers the spec builders share."""

    def __init__(self, func: relax.Function, match: Match):
        self.func, self.match = func, match

    def __getitem__(self, role: str) -> relax.Expr:
        return self.match[role]

    def get(self, role: str):
        return self.match.get(role)

    def operands(self, *roles: str) -> None:
        """The matched operands must be the parameters, in order: the spec's inputs follow them."""
        exprs = [self.match[r] for r in roles]
        if len(exprs) != len(self.func.params) or not all(e.same_as(p) for e, p in zip(exprs, self.func.params)):
            kinds = ", ".join("a constant" if is_constant(e) else "a feature map" for e in exprs)
            raise UnsupportedHostOp(f"operands ({kinds}) are not distinct feature maps (the kernel takes only those)")

    def tensor(self, expr: relax.Expr, quant: Quant) -> spec.QuantTensor:
        if quant.per_axis:
            raise UnsupportedHostOp("per-axis quantization of an activation")
        return spec.QuantTensor(shape_of(expr), dtype_of(expr), quant.scalar_scale, quant.scalar_zero_point)

    def quantized_input(self, role: str) -> spec.QuantTensor:
        return self.tensor(self.match[role], quant_of(self.match[f"{role}_dq"]))

    def quantized_output(self) -> spec.QuantTensor:
        return self.tensor(self.match["quantize"], quant_of(self.match["quantize"]))

    def raw(self, expr: relax.Expr) -> spec.QuantTensor:
        """A tensor of a raw-integer op, with the quantization fuse_host_ops recorded."""
        text = (self.func.attrs or {}).get(QUANT_ATTR)
        if text is None:
            raise UnsupportedHostOp("no TFLite quantization recorded for its tensors (import with "
                                    "ethosu_tvm.frontend.importer.from_tflite, then run fuse_host_ops)")
        scale, zero_point = json.loads(str(text))
        return spec.QuantTensor(shape_of(expr), dtype_of(expr), scale, zero_point)


def _limits(dtype: str) -> tuple[int, int]:
    info = np.iinfo(dtype)
    return int(info.min), int(info.max)


def _int_clamp(c: _Composite, dtype: str) -> tuple[int, int] | None:
    """A clip on the quantized output (fused activation of conv, FC and pools); None without one."""
    clip = c.get("clip")
    if clip is None:
        return None
    low, high = _limits(dtype)
    return max(low, round(prim_float(clip.args[1]))), min(high, round(prim_float(clip.args[2])))


def _real_clamp(out: spec.QuantTensor, low: float | None, high: float | None) -> tuple[int, int]:
    """Real activation bounds in output integers, as TFLite's CalculateActivationRangeQuantized."""
    qmin, qmax = out.limits
    return (qmin if low is None else max(qmin, scaling.quantize_value(low, out.scale, out.zero_point)),
            qmax if high is None else min(qmax, scaling.quantize_value(high, out.scale, out.zero_point)))


def _clip_bounds(clip: relax.Call) -> tuple[float, float]:
    return prim_float(clip.args[1]), prim_float(clip.args[2])


def _window(attrs) -> tuple[tuple[int, int], tuple[int, int]]:
    """Strides and dilation of a conv or pool."""
    return tuple(int(s) for s in attrs.strides), tuple(int(d) for d in attrs.dilation)


def _conv(c: _Composite) -> spec.Conv2D:
    """CONV_2D or DEPTHWISE_CONV_2D; a per-tensor depthwise imports without the graph reshape, so the conv2d
    pattern matches it: the HWOI kernel layout tells it apart."""
    c.operands("ifm")
    attrs = c["conv"].attrs
    layouts = (str(attrs.data_layout), str(attrs.kernel_layout), str(attrs.out_layout))
    depthwise = layouts[1] == "HWOI"
    if layouts[0::2] != ("NHWC", "NHWC") or layouts[1] not in ("HWIO", "HWOI"):
        raise UnsupportedHostOp(f"layouts {layouts}")
    channels_in = shape_of(c["ifm"])[-1]
    if int(attrs.groups) != (channels_in if depthwise else 1):
        raise UnsupportedHostOp(f"grouped convolution (groups={int(attrs.groups)})")
    raw = np.asarray(const_value(c["weights"]))
    # The depthwise pattern's constant is TFLite's [1, H, W, C·m] (reshaped in the graph); otherwise the constant
    # was transposed at import, HWIO (→ OHWI) or HWOI with I = 1 (→ [1, H, W, C·m]).
    weights = raw if c.match.kind == "depthwise_conv2d" else np.ascontiguousarray(raw.transpose(3, 0, 1, 2))
    stride, dilation = _window(attrs)
    output = c.quantized_output()
    return spec.Conv2D(c.quantized_input("ifm"), output, weights, _weight_scales(c), _bias(c),
                       _int_clamp(c, output.dtype), stride=stride, dilation=dilation,
                       padding=tuple(int(p) for p in attrs.padding), depthwise=depthwise)


def _weight_scales(c: _Composite) -> tuple[float, ...]:
    quant = quant_of(c["weights_dq"])
    if np.any(quant.zero_point != 0):
        raise UnsupportedHostOp(f"weight zero points {quant.zero_point.tolist()} (TFLite's kernels take 0)")
    return tuple(float(s) for s in quant.scale)


def _bias(c: _Composite) -> np.ndarray | None:
    bias_dq = c.get("bias_dq")
    return None if bias_dq is None else np.asarray(const_value(bias_dq.args[0]))


def _fully_connected(c: _Composite) -> spec.FullyConnected:
    c.operands("ifm")
    output = c.quantized_output()
    weights = np.asarray(const_value(c["weights"]))  # TFLite [units, depth], before the graph's permute_dims
    return spec.FullyConnected(c.quantized_input("ifm"), output, weights, _weight_scales(c), _bias(c),
                               _int_clamp(c, output.dtype))


def _pool(c: _Composite) -> spec.Pool2D:
    c.operands("ifm")
    attrs = c["pool"].attrs
    stride, dilation = _window(attrs)
    if (str(attrs.layout), str(attrs.out_layout)) != ("NHWC", "NHWC") or dilation != (1, 1):
        raise UnsupportedHostOp(f"layout {attrs.layout} with dilation {dilation}")
    if bool(attrs.ceil_mode) or bool(attrs.count_include_pad):
        raise UnsupportedHostOp("ceil_mode or count_include_pad pooling")
    output = c.raw(c["out"])
    return spec.Pool2D(c.match.kind.split("_", 1)[0], c.raw(c["ifm"]), output,
                       tuple(int(k) for k in attrs.pool_size), stride, tuple(int(p) for p in attrs.padding),
                       _int_clamp(c, output.dtype))


def _binary(c: _Composite) -> spec.Binary:
    c.operands("lhs", "rhs")
    output = c.quantized_output()
    clamp = None
    if c.get("relu") is not None:
        clamp = _real_clamp(output, 0.0, None)
    elif c.get("float_clip") is not None:
        clamp = _real_clamp(output, *_clip_bounds(c["float_clip"]))
    return spec.Binary(_BINARY_KINDS[c.match.kind], c.quantized_input("lhs"), c.quantized_input("rhs"), output,
                       clamp)


def _unary(make: Callable[[spec.QuantTensor, spec.QuantTensor, _Composite], spec.HostOp]):
    """dequantize → op → quantize: `make` gets both tensors and the composite (for beta, bounds, alpha)."""
    def build(c: _Composite) -> spec.HostOp:
        c.operands("ifm")
        return make(c.quantized_input("ifm"), c.quantized_output(), c)

    return build


def _softmax_spec(x: spec.QuantTensor, y: spec.QuantTensor, c: _Composite) -> spec.Softmax:
    axis = int(c["core"].attrs.axis)
    if axis not in (-1, len(x.shape) - 1):
        raise UnsupportedHostOp(f"softmax over axis {axis} (the kernel normalises the last one)")
    beta = np.float32(1.0) if c.get("beta") is None else np.asarray(const_value(c["beta"]))
    if beta.size != 1:
        raise UnsupportedHostOp(f"beta of shape {beta.shape}, not a scalar")
    return spec.Softmax(x, y, float(beta.reshape(-1)[0]))


def _relu(x: spec.QuantTensor, y: spec.QuantTensor, c: _Composite) -> spec.Relu:
    bounds = (0.0, None) if c.match.kind == "relu" else _clip_bounds(c["core"])
    return spec.Relu(x, y, _real_clamp(y, *bounds))


def _reshape(c: _Composite) -> spec.Reshape:
    c.operands("ifm")
    return spec.Reshape(c.raw(c["ifm"]), c.raw(c["reshape"]))


def _pad(c: _Composite) -> spec.Pad:
    c.operands("ifm")
    attrs = c["pad"].attrs
    x, y = c.raw(c["ifm"]), c.raw(c["pad"])
    if str(attrs.pad_mode) != "constant" or float(attrs.pad_value) != x.zero_point:
        raise UnsupportedHostOp(f"{attrs.pad_mode} padding with {float(attrs.pad_value)} (the kernel pads with the "
                                f"zero point {x.zero_point})")
    widths = [int(w) for w in attrs.pad_width]
    return spec.Pad(x, y, tuple(zip(widths[0::2], widths[1::2])))


def _concatenation(c: _Composite) -> spec.Concatenation:
    count = len(c["concat"].args[0].fields)
    roles = [f"input{i}" for i in range(count)]
    c.operands(*roles)
    return spec.Concatenation(tuple(c.quantized_input(r) for r in roles), c.quantized_output(),
                              int(c["concat"].attrs.axis))


_SPECS: dict[str, Callable[[_Composite], spec.HostOp]] = {
    "conv2d": _conv,
    "depthwise_conv2d": _conv,
    "fully_connected": _fully_connected,
    "avg_pool2d": _pool,
    "max_pool2d": _pool,
    **{kind: _binary for kind in _BINARY_KINDS},
    "softmax": _unary(_softmax_spec),
    "relu": _unary(_relu),
    "clip": _unary(_relu),
    "leaky_relu": _unary(lambda x, y, c: spec.LeakyRelu(x, y, float(c["core"].attrs.alpha))),
    "requantize": _unary(lambda x, y, _: spec.Requantize(x, y)),
    "tanh": _unary(lambda x, y, _: spec.Tanh(x, y)),
    "logistic": _unary(lambda x, y, _: spec.Logistic(x, y)),
    "reshape": _reshape,
    "pad": _pad,
    "concatenation": _concatenation,
}
