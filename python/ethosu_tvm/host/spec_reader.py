"""Reading a ``host.<kind>`` composite back as the :mod:`~ethosu_tvm.host.spec` op its C kernel is built from.

The composite is re-matched with its pattern, and each kind's reader takes the TFLite parameters from the matched
roles: quantization from the QDQ calls, or for raw-integer ops from the attribute fuse_host_ops recorded.
"""
from __future__ import annotations

import json
from collections.abc import Callable

import numpy as np
from tvm import relax

from ..qdq.match import Match, match_composite
from ..qdq.patterns import COMPARISON_OPS, REDUCTION_OPS, concat_arities
from ..qdq.values import Quant, const_value, dtype_of, int_tuple, prim_float, quant_of, shape_of, slice_parameters
from ..qdq.values import is_const as is_constant
from ..quantization import quantize_value
from . import spec
from .patterns import HOST, QUANT_ATTR, SOURCE_ATTR, host_patterns
from .spec import UnsupportedHostOp

_BINARY_KINDS = {"add": "add", "subtract": "sub", "multiply": "mul", "minimum": "minimum", "maximum": "maximum",
                 "squared_difference": "squared_difference", "div": "div"}


def host_spec(func: relax.Function) -> spec.HostOp:
    """The host op description of one ``host.<kind>`` composite; its inputs follow the function's parameters."""
    name = str((func.attrs or {}).get("Composite", ""))
    where = str((func.attrs or {}).get(SOURCE_ATTR, name or "function"))
    kind = name.split(".", 1)[1] if name.startswith(f"{HOST}.") else ""
    if kind not in _SPECS:
        raise UnsupportedHostOp(f"{where}: {name or 'a function without a Composite attribute'} is not a host op")
    try:
        match = match_composite(func, host_patterns(concat_arities(func)))
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

    def operands(self, *roles: str, constants: int = 0, repeats: bool = False) -> None:
        """The matched operands must be the parameters, in order: the spec's inputs follow them. Up to `constants`
        of them may be constants instead (the kernel holds their values); with `repeats` one feature map may be
        several operands (the kernel takes it once)."""
        exprs = [self.match[r] for r in roles]
        maps = [e for e in exprs if not is_constant(e)]
        if repeats:
            maps = [e for k, e in enumerate(maps) if not any(e.same_as(f) for f in maps[:k])]
        if not maps:
            raise UnsupportedHostOp("every operand is a constant (TFLite's converter folds such an operator; no kernel "
                                    "computes constants)")
        if (len(exprs) - len(maps) > constants or len(maps) != len(self.func.params)
                or not all(e.same_as(p) for e, p in zip(maps, self.func.params))):
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
    return (qmin if low is None else max(qmin, quantize_value(low, out.scale, out.zero_point)),
            qmax if high is None else min(qmax, quantize_value(high, out.scale, out.zero_point)))


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
    # The depthwise pattern's constant is TFLite's [1, H, W, C·m] (reshaped in the graph; with one input channel
    # to HWIO, a plain convolution whose OHWI weights are [m, H, W, 1]); otherwise the constant was transposed at
    # import, HWIO (→ OHWI) or HWOI with I = 1 (→ [1, H, W, C·m]).
    if c.match.kind == "depthwise_conv2d":
        weights = raw if depthwise else np.ascontiguousarray(raw.transpose(3, 1, 2, 0))
    else:
        weights = np.ascontiguousarray(raw.transpose(3, 0, 1, 2))
    stride, dilation = _window(attrs)
    output = c.quantized_output()
    return spec.Conv2D(c.quantized_input("ifm"), output, weights, _weight_scales(c), _bias(c),
                       _int_clamp(c, output.dtype), stride=stride, dilation=dilation,
                       padding=tuple(int(p) for p in attrs.padding), depthwise=depthwise)


def _transpose_conv(c: _Composite) -> spec.TransposeConv2D:
    """TRANSPOSE_CONV; the frontend transposed TFLite's OHWI weights to IOHW, and its padding's top and left are
    TFLite's (the bottom and right crop what the output shape leaves out)."""
    c.operands("ifm")
    attrs = c["conv"].attrs
    layouts = (str(attrs.data_layout), str(attrs.kernel_layout), str(attrs.out_layout))
    if layouts != ("NHWC", "IOHW", "NHWC") or int(attrs.groups) != 1:
        raise UnsupportedHostOp(f"layouts {layouts} with groups={int(attrs.groups)}")
    stride, dilation = _window(attrs)
    if dilation != (1, 1):
        raise UnsupportedHostOp(f"dilation {dilation} (TFLite's TRANSPOSE_CONV has none)")
    weights = np.ascontiguousarray(np.asarray(const_value(c["weights"])).transpose(1, 2, 3, 0))
    output = c.quantized_output()
    top, left = (int(p) for p in attrs.padding[:2])
    return spec.TransposeConv2D(c.quantized_input("ifm"), output, weights, _weight_scales(c), _bias(c),
                                _int_clamp(c, output.dtype), stride=stride, padding=(top, left))


def _weight_scales(c: _Composite) -> tuple[float, ...]:
    quant = quant_of(c["weights_dq"])
    if np.any(quant.zero_point != 0):
        raise UnsupportedHostOp(f"weight zero points {quant.zero_point.tolist()} (TFLite's kernels take 0)")
    return tuple(float(s) for s in quant.scale)


def _bias(c: _Composite) -> np.ndarray | None:
    """The bias in accumulator units; a 16x8 op's int64 bias was imported as int32 (Relax cannot dequantize int64)
    and is widened back to the accumulator's int64."""
    bias_dq = c.get("bias_dq")
    if bias_dq is None:
        return None
    values = np.asarray(const_value(bias_dq.args[0]))
    return values.astype(np.int64) if dtype_of(c["ifm"]) == "int16" else values


def _fully_connected(c: _Composite) -> spec.FullyConnected:
    c.operands("ifm")
    output = c.quantized_output()
    weights = np.asarray(const_value(c["weights"]))  # TFLite [units, depth], before the graph's permute_dims
    return spec.FullyConnected(c.quantized_input("ifm"), output, weights, _weight_scales(c), _bias(c),
                               _int_clamp(c, output.dtype))


def _batch_matmul(c: _Composite) -> spec.BatchMatMul:
    """A constant operand (one at most) becomes the kernel's constant values; the permutes are adj_x, adj_y."""
    c.operands("lhs", "rhs", constants=1)
    values = {f"{role}_values": np.asarray(const_value(c[role])) for role in ("lhs", "rhs") if is_constant(c[role])}
    adjoints = [c.get(f"{role}_t") is not None for role in ("lhs", "rhs")]
    return spec.BatchMatMul(c.quantized_input("lhs"), c.quantized_input("rhs"), c.quantized_output(), *adjoints,
                            **values)


def _arg_min_max(c: _Composite) -> spec.ArgMinMax:
    c.operands("ifm")
    cast = c["cast"]
    return spec.ArgMinMax(c.raw(c["ifm"]), shape_of(cast), c.match.kind, int(c["arg"].attrs.axis), dtype_of(cast))


def _comparison(c: _Composite) -> spec.Comparison:
    """A constant operand (one at most) becomes the kernel's constant values."""
    c.operands("lhs", "rhs", constants=1)
    values = {f"{role}_values": np.asarray(const_value(c[role])) for role in ("lhs", "rhs") if is_constant(c[role])}
    return spec.Comparison(c.match.kind, c.quantized_input("lhs"), c.quantized_input("rhs"), shape_of(c["core"]),
                           **values)


def _select(c: _Composite) -> spec.Select:
    """Constant operands become the kernel's constant values (one feature map at least)."""
    roles = ("condition", "x", "y")
    c.operands(*roles, constants=2)
    values = {f"{role}_values": np.asarray(const_value(c[role])) for role in roles if is_constant(c[role])}
    return spec.Select(*(shape_of(c[role]) for role in roles), shape_of(c["where"]), dtype_of(c["where"]), **values)


def _fill(c: _Composite) -> spec.Fill:
    c.operands("value")
    return spec.Fill(shape_of(c["full"]), dtype_of(c["full"]))


def _gather_nd(c: _Composite) -> spec.GatherNd:
    """Constant indices were imported as int64 (the kernel holds their positions); run-time ones keep their dtype
    and come first (their cast precedes the gather)."""
    c.operands(*(("params", "indices") if c.get("cast") is None else ("indices", "params")), constants=1)
    params, indices = c["params"], c["indices"]
    values = {f"{role}_values": np.asarray(const_value(c[role])) for role in ("params", "indices")
              if is_constant(c[role])}
    return spec.GatherNd(shape_of(params), shape_of(indices), dtype_of(params), dtype_of(indices), **values)


def _cast(c: _Composite) -> spec.Cast:
    c.operands("ifm")
    return spec.Cast(shape_of(c["ifm"]), dtype_of(c["ifm"]), dtype_of(c["cast"]))


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
    """A constant operand (one at most: TVM's frontend folds two) becomes the kernel's constant values; an op of
    one feature map with itself (x·x) takes it once."""
    c.operands("lhs", "rhs", constants=1, repeats=True)
    values = {f"{role}_values": np.asarray(const_value(c[role])) for role in ("lhs", "rhs") if is_constant(c[role])}
    values["one_input"] = c["lhs"].same_as(c["rhs"])
    output = c.quantized_output()
    clamp = None
    if c.get("relu") is not None:
        clamp = _real_clamp(output, 0.0, None)
    elif c.get("float_clip") is not None:
        clamp = _real_clamp(output, *_clip_bounds(c["float_clip"]))
    return spec.Binary(_BINARY_KINDS[c.match.kind], c.quantized_input("lhs"), c.quantized_input("rhs"), output,
                       clamp, **values)


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


def _log_softmax_spec(x: spec.QuantTensor, y: spec.QuantTensor, c: _Composite) -> spec.LogSoftmax:
    axis = int(c["core"].attrs.axis)
    if axis not in (-1, len(x.shape) - 1):
        raise UnsupportedHostOp(f"log_softmax over axis {axis} (the kernel normalises the last one)")
    return spec.LogSoftmax(x, y)


def _l2_normalization_spec(x: spec.QuantTensor, y: spec.QuantTensor, c: _Composite) -> spec.L2Normalization:
    axis = c["total"].attrs.axis
    if axis is None or [int(a) % len(x.shape) for a in axis] != [len(x.shape) - 1]:
        raise UnsupportedHostOp("l2_normalization over other axes than the last")
    return spec.L2Normalization(x, y)


def _prelu(x: spec.QuantTensor, y: spec.QuantTensor, c: _Composite) -> spec.Prelu:
    quant = quant_of(c["alpha_dq"])
    if quant.per_axis:
        raise UnsupportedHostOp("per-axis quantization of alpha (TFLite's PRELU takes one scale)")
    return spec.Prelu(x, y, np.asarray(const_value(c["alpha"])), quant.scalar_scale, quant.scalar_zero_point)


def _relu(x: spec.QuantTensor, y: spec.QuantTensor, c: _Composite) -> spec.Relu:
    bounds = (0.0, None) if c.match.kind == "relu" else _clip_bounds(c["core"])
    return spec.Relu(x, y, _real_clamp(y, *bounds))


def _reshape(c: _Composite) -> spec.Reshape:
    c.operands("ifm")
    return spec.Reshape(c.raw(c["ifm"]), c.raw(c["reshape"]))


def _float_quantize(c: _Composite) -> spec.FloatQuantize:
    c.operands("ifm")
    return spec.FloatQuantize(shape_of(c["ifm"]), c.quantized_output())


def _quantize_int32(c: _Composite) -> spec.Requantize:
    """The importer's QUANTIZE to int32: the output scale is the divisor, the zero point the addend."""
    c.operands("ifm")
    output = spec.QuantTensor(shape_of(c["quantize"]), "int32", const_value(c["scaled"].args[1]),
                              const_value(c["quantize"].args[1]))
    return spec.Requantize(c.quantized_input("ifm"), output)


def _dequantize(c: _Composite) -> spec.Dequantize:
    c.operands("ifm")
    return spec.Dequantize(c.quantized_input("ifm"))


def _pad(c: _Composite) -> spec.Pad:
    c.operands("ifm")
    attrs = c["pad"].attrs
    x, y = c.raw(c["ifm"]), c.raw(c["pad"])
    value = float(attrs.pad_value)  # the zero point (PAD) or PADV2's constant, in the input's quantization
    info = np.iinfo(x.dtype)
    if str(attrs.pad_mode) != "constant" or not value.is_integer() or not info.min <= value <= info.max:
        raise UnsupportedHostOp(f"{attrs.pad_mode} padding with {value} (the kernel pads {x.dtype} with a constant)")
    widths = [int(w) for w in attrs.pad_width]
    return spec.Pad(x, y, tuple(zip(widths[0::2], widths[1::2])), None if value == y.zero_point else int(value))


def _reduce(c: _Composite) -> spec.Reduce:
    c.operands("ifm")
    x = c.quantized_input("ifm")
    axis = c["reduce"].attrs.axis
    axes = range(len(x.shape)) if axis is None else sorted({int(a) % len(x.shape) for a in axis})
    return spec.Reduce(x, c.quantized_output(), c.match.kind, tuple(axes))


_RESIZE_METHODS = {"resize_bilinear": "linear", "resize_nearest_neighbor": "nearest_neighbor"}
# The frontend's coordinate_transformation_mode for TFLite's (align_corners, half_pixel_centers).
_RESIZE_FLAGS = {"asymmetric": (False, False), "align_corners": (True, False), "half_pixel": (False, True)}


def _resize(c: _Composite) -> spec.Resize:
    c.operands("ifm")
    attrs = c["resize"].attrs
    mode, method = str(attrs.coordinate_transformation_mode), str(attrs.method)
    if str(attrs.layout) != "NHWC" or method != _RESIZE_METHODS[c.match.kind] or mode not in _RESIZE_FLAGS:
        raise UnsupportedHostOp(f"{method} resize2d in {attrs.layout} with coordinate mode {mode}")
    if c.match.kind == "resize_bilinear":
        x, y = c.quantized_input("ifm"), c.quantized_output()
    else:
        x, y = c.raw(c["ifm"]), c.raw(c["resize"])
    return spec.Resize(x, y, c.match.kind, *_RESIZE_FLAGS[mode])


def _concatenation(c: _Composite) -> spec.Concatenation | spec.Tile:
    """Copies of one feature map (the importer's TILE, one axis) are a tile of it: the kernel takes it once."""
    count = len(c["concat"].args[0].fields)
    roles = [f"input{i}" for i in range(count)]
    if count > 1 and all(c[r].same_as(c["input0"]) for r in roles):
        c.operands("input0")
        return spec.Tile(c.quantized_input("input0"), c.quantized_output())
    c.operands(*roles)
    return spec.Concatenation(tuple(c.quantized_input(r) for r in roles), c.quantized_output(),
                              int(c["concat"].attrs.axis))


def _add_n(c: _Composite) -> spec.AddN:
    count = len(c["concat"].args[0].fields)
    roles = [f"input{i}" for i in range(count)]
    c.operands(*roles)
    return spec.AddN(tuple(c.quantized_input(r) for r in roles), c.quantized_output())


def _strided_slice(c: _Composite) -> spec.StridedSlice:
    c.operands("ifm")
    call = c["slice"]
    x = c.raw(c["ifm"])
    axes, begin, strides = slice_parameters(call)
    if axes != tuple(range(len(x.shape))) or not all(0 <= b < d for b, d in zip(begin, x.shape)):
        raise UnsupportedHostOp(f"strided slice over axes {axes} from {begin} (the importer gives every axis a "
                                "start inside it)")
    reshape = c.get("reshape")
    return spec.StridedSlice(x, c.raw(call if reshape is None else reshape), begin, strides, shape_of(call))


def _transpose(c: _Composite) -> spec.Transpose:
    c.operands("ifm")
    x, axes = c.raw(c["ifm"]), c["permute"].attrs.axes
    perm = tuple(range(len(x.shape)))[::-1] if axes is None else tuple(int(a) % len(x.shape) for a in axes)
    return spec.Transpose(x, c.raw(c["permute"]), perm)


def _broadcast_to(c: _Composite) -> spec.BroadcastTo:
    c.operands("ifm")
    return spec.BroadcastTo(c.raw(c["ifm"]), c.raw(c["broadcast"]))


def _pack(c: _Composite) -> spec.Pack:
    concat = c["concat"]
    count = len(concat.args[0].fields)
    roles = [f"input{i}" for i in range(count)]
    c.operands(*roles)
    rank = len(shape_of(concat))
    axis = int(concat.attrs.axis) % rank
    if any(tuple(a % rank for a in int_tuple(c[f"expand{i}"].attrs.axis)) != (axis,) for i in range(count)):
        raise UnsupportedHostOp(f"inputs gain axes other than the concatenation's ({axis})")
    return spec.Pack(tuple(c.raw(c[r]) for r in roles), c.raw(concat), axis)


_SPECS: dict[str, Callable[[_Composite], spec.HostOp]] = {
    "conv2d": _conv,
    "depthwise_conv2d": _conv,
    "fully_connected": _fully_connected,
    "transpose_conv": _transpose_conv,
    "batch_matmul": _batch_matmul,
    "arg_max": _arg_min_max,
    "arg_min": _arg_min_max,
    "cast": _cast,
    "select_v2": _select,
    "fill": _fill,
    "gather_nd": _gather_nd,
    **{kind: _comparison for kind in COMPARISON_OPS},
    "avg_pool2d": _pool,
    "max_pool2d": _pool,
    **{kind: _binary for kind in _BINARY_KINDS},
    "softmax": _unary(_softmax_spec),
    "log_softmax": _unary(_log_softmax_spec),
    "l2_normalization": _unary(_l2_normalization_spec),
    "relu": _unary(_relu),
    "clip": _unary(_relu),
    "leaky_relu": _unary(lambda x, y, c: spec.LeakyRelu(x, y, float(c["core"].attrs.alpha))),
    "requantize": _unary(lambda x, y, _: spec.Requantize(x, y)),
    "tanh": _unary(lambda x, y, _: spec.Tanh(x, y)),
    "logistic": _unary(lambda x, y, _: spec.Logistic(x, y)),
    "hard_swish": _unary(lambda x, y, _: spec.HardSwish(x, y)),
    **{kind: _unary(lambda x, y, c: spec.FloatFunction(x, y, c.match.kind))
       for kind in ("exp", "log", "elu", "gelu", "gelu_tanh")},
    "rsqrt": _unary(lambda x, y, _: spec.Rsqrt(x, y)),
    "abs": _unary(lambda x, y, _: spec.Abs(x, y)),
    "sqrt": _unary(lambda x, y, _: spec.Sqrt(x, y)),
    "neg": _unary(lambda x, y, _: spec.Neg(x, y)),
    "prelu": _unary(_prelu),
    "reshape": _reshape,
    "pad": _pad,
    "concatenation": _concatenation,
    "add_n": _add_n,
    **{kind: _reduce for kind in REDUCTION_OPS},
    **{kind: _resize for kind in _RESIZE_METHODS},
    "strided_slice": _strided_slice,
    "transpose": _transpose,
    "broadcast_to": _broadcast_to,
    "pack": _pack,
    "float_quantize": _float_quantize,
    "quantize_int32": _quantize_int32,
    "dequantize": _dequantize,
}
