"""A factory of small, fully quantized TFLite models written directly as flatbuffers (no TensorFlow needed).

`make(op, seed, **params)` builds a single-operator model; `make_graph(name, seed)` builds a small network. Every
quantization parameter can be given explicitly (`in_scale`, `in_zp`, `out_scale`, `out_zp`, `w_scales`, ...);
what is not given is derived so that outputs use most of the integer range. Weights and biases are seeded random.
Activations are int8, or int16 (with int8 weights, zero points 0) where TFLite has 16x8 kernels: pass `dtype="int16"`.
"""
from __future__ import annotations

import inspect
import math
from dataclasses import dataclass

import numpy as np
import tflite

from .tflite_builder import ModelBuilder, Quantization

_OP = tflite.BuiltinOperator
_ACTIVATIONS = {"NONE": 0, "RELU": 1, "RELU_N1_TO_1": 2, "RELU6": 3}
_PADDINGS = {"SAME": 0, "VALID": 1}
# Ops with 16-bit activation kernels in both LiteRT and TFLite Micro (16x8 for the weighted ones).
_INT16_OPS = {
    "conv2d", "depthwise_conv2d", "fully_connected", "avg_pool2d", "max_pool2d", "add", "sub", "mul",
    "minimum", "maximum", "tanh", "logistic", "softmax", "reshape", "quantize",
}


@dataclass(frozen=True)
class QTensor:
    """A quantized activation tensor of the model being built."""

    index: int
    shape: tuple[int, ...]
    dtype: np.dtype
    scale: float
    zero_point: int
    rms: float  # estimated root-mean-square of the real values, to size downstream quantization

    @property
    def real_range(self) -> tuple[float, float]:
        """The real values this tensor can represent."""
        info = np.iinfo(self.dtype)
        return self.scale * (info.min - self.zero_point), self.scale * (info.max - self.zero_point)


def _quant_for_range(lo: float, hi: float, dtype) -> tuple[float, int]:
    """Scale and zero point covering [lo, hi] (always including 0); int16 is symmetric with zero point 0."""
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    if hi - lo < 1e-6:
        hi = lo + 1e-6
    info = np.iinfo(dtype)
    if np.dtype(dtype) == np.int16:
        return max(-lo, hi) / info.max, 0
    scale = (hi - lo) / (info.max - info.min)
    zero_point = int(np.clip(round(info.min - lo / scale), info.min, info.max))
    return scale, zero_point


def _pair(value, name: str) -> tuple[int, int]:
    pair = (value, value) if isinstance(value, int) else tuple(value)
    if len(pair) != 2 or any(not isinstance(v, (int, np.integer)) or v < 1 for v in pair):
        raise ValueError(f"{name} must be a positive int or a pair of positive ints, got {value!r}")
    return int(pair[0]), int(pair[1])


def _choice(value: str, options: dict, name: str) -> int:
    if value not in options:
        raise ValueError(f"{name} must be one of {', '.join(options)}, got {value!r}")
    return options[value]


def _conv_out_size(size: int, kernel: int, stride: int, dilation: int, padding: str) -> int:
    effective = (kernel - 1) * dilation + 1
    out = -(-size // stride) if padding == "SAME" else (size - effective) // stride + 1
    if out < 1:
        raise ValueError(f"kernel extent {effective} does not fit an input of size {size} with {padding} padding")
    return out


class Net:
    """Builds a quantized model layer by layer; each layer method returns its output `QTensor`."""

    def __init__(self, seed: int = 0, description: str = "ethosu_tvm.testing.models"):
        self.rng = np.random.default_rng(seed)
        self.builder = ModelBuilder(description)
        self._inputs: list[QTensor] = []
        self._outputs: list[QTensor] = []
        self._names = 0

    # -- model I/O -------------------------------------------------------------------------------------------
    def _name(self, kind: str) -> str:
        self._names += 1
        return f"{kind}_{self._names}"

    def _activation(self, shape, dtype, scale: float, zero_point: int, name: str | None = None,
                    rms: float | None = None) -> QTensor:
        """A new activation tensor; without an `rms` estimate its values are taken as uniform over its range."""
        dtype = np.dtype(dtype)
        if dtype not in (np.dtype(np.int8), np.dtype(np.int16)):
            raise ValueError(f"activations must be int8 or int16, got {dtype}")
        if dtype == np.int16 and zero_point != 0:
            raise ValueError("int16 activations must have zero point 0")
        info = np.iinfo(dtype)
        if not info.min <= zero_point <= info.max:
            raise ValueError(f"zero point {zero_point} is outside the {dtype} range")
        if not scale > 0:
            raise ValueError(f"scales must be positive, got {scale}")
        if any(int(d) < 1 for d in shape):
            raise ValueError(f"every dimension must be positive, got shape {tuple(shape)}")
        index = self.builder.add_tensor(name or self._name("t"), shape, dtype,
                                        quantization=Quantization((float(scale),), (int(zero_point),)))
        lo, hi = scale * (info.min - zero_point), scale * (info.max - zero_point)
        rms = rms if rms is not None else math.sqrt((lo * lo + lo * hi + hi * hi) / 3)
        return QTensor(index, tuple(int(d) for d in shape), dtype, float(scale), int(zero_point), float(rms))

    def input(self, shape, dtype="int8", scale: float | None = None, zero_point: int | None = None) -> QTensor:
        """A model input; int8 defaults to scale 0.02 and zero point -3, int16 to scale 1/2048."""
        is16 = np.dtype(dtype) == np.int16
        scale = scale if scale is not None else (1 / 2048 if is16 else 0.02)
        zero_point = zero_point if zero_point is not None else (0 if is16 else -3)
        tensor = self._activation(shape, dtype, scale, zero_point, name=f"input_{len(self._inputs)}")
        self._inputs.append(tensor)
        return tensor

    def output(self, tensor: QTensor) -> None:
        """Mark a model output; it is named output_0, output_1, ... in order."""
        self.builder.rename_tensor(tensor.index, f"output_{len(self._outputs)}")
        self._outputs.append(tensor)

    def build(self) -> bytes:
        return self.builder.build(
            [t.index for t in self._inputs], [t.index for t in self._outputs],
            [f"input_{i}" for i in range(len(self._inputs))], [f"output_{i}" for i in range(len(self._outputs))])

    # -- helpers ---------------------------------------------------------------------------------------------
    def _result(self, x: QTensor, shape, lo: float, hi: float, out_scale, out_zp, rms=None) -> QTensor:
        """The output tensor: given quantization, or one covering [lo, hi]."""
        scale, zero_point = _quant_for_range(lo, hi, x.dtype)
        return self._activation(shape, x.dtype, out_scale if out_scale is not None else scale,
                                out_zp if out_zp is not None else zero_point, rms=rms)

    def _same_quant(self, x: QTensor, shape) -> QTensor:
        return self._activation(shape, x.dtype, x.scale, x.zero_point)

    def _const(self, data: np.ndarray, quantization: Quantization | None = None) -> int:
        return self.builder.add_tensor(self._name("const"), data.shape, data.dtype, data, quantization)

    def _weights(self, shape, channels: int, axis: int, per_channel: bool, w_scales) -> tuple[int, np.ndarray]:
        """Random symmetric int8 weights with per-channel (along `axis`) or per-tensor scales."""
        count = channels if per_channel else 1
        if w_scales is None:
            scales = self.rng.uniform(0.004, 0.012, size=count)
        else:
            scales = np.atleast_1d(np.asarray(w_scales, dtype=np.float64))
            if scales.size != count or not np.all(scales > 0):
                raise ValueError(f"w_scales needs {count} positive values, got {scales.size}")
        data = self.rng.integers(-127, 127, size=shape, endpoint=True, dtype=np.int8)
        quant = Quantization(tuple(float(s) for s in scales), (0,) * count, axis if per_channel else 0)
        return self._const(data, quant), np.broadcast_to(scales, (channels,)).astype(np.float32)

    def _bias(self, x: QTensor, w_scales: np.ndarray, accumulation: float, bias: bool) -> int:
        """Random bias in accumulator units (int32, int64 for 16-bit activations), or -1 without one."""
        if not bias:
            return -1
        dtype = np.int64 if x.dtype == np.int16 else np.int32
        values = np.round(self.rng.normal(0.0, 0.3 * accumulation, size=w_scales.size)).astype(dtype)
        scales = (np.float32(x.scale) * w_scales).astype(np.float64)
        return self._const(values, Quantization(tuple(scales), (0,) * w_scales.size, 0))

    def _weighted_output(self, x, shape, taps: int, w_scales, activation, out_scale, out_zp) -> tuple[QTensor, float]:
        """Output quantization of a multiply-accumulate op covering about 3 sigma of its result.

        Random int8 weights have a standard deviation of about 73, so the accumulator's is
        sqrt(taps) * rms(x in integer units) * 73; a ReLU-like activation keeps the positive half.
        """
        accumulation = math.sqrt(taps) * (x.rms / x.scale) * 73.0
        rms = accumulation * x.scale * float(np.mean(w_scales))
        if activation in ("RELU", "RELU6"):
            return self._result(x, shape, 0.0, 3.0 * rms, out_scale, out_zp, rms / math.sqrt(2)), accumulation
        return self._result(x, shape, -3.0 * rms, 3.0 * rms, out_scale, out_zp, rms), accumulation

    # -- weighted layers -------------------------------------------------------------------------------------
    def conv2d(self, x: QTensor, out_channels: int = 8, kernel=(3, 3), stride=(1, 1), dilation=(1, 1),
               padding: str = "SAME", activation: str = "NONE", per_channel: bool = True,
               w_scales=None, out_scale=None, out_zp=None) -> QTensor:
        """CONV_2D with OHWI weights and a bias (LiteRT cannot run it without one)."""
        (kh, kw), (sh, sw), (dh, dw) = _pair(kernel, "kernel"), _pair(stride, "stride"), _pair(dilation, "dilation")
        act, pad = _choice(activation, _ACTIVATIONS, "activation"), _choice(padding, _PADDINGS, "padding")
        n, h, w, c = x.shape
        shape = (n, _conv_out_size(h, kh, sh, dh, padding), _conv_out_size(w, kw, sw, dw, padding), out_channels)
        weights, scales = self._weights((out_channels, kh, kw, c), out_channels, 0, per_channel, w_scales)
        y, acc = self._weighted_output(x, shape, kh * kw * c, scales, activation, out_scale, out_zp)
        self.builder.add_operator(_OP.CONV_2D, [x.index, weights, self._bias(x, scales, acc, True)], [y.index],
                                  "Conv2DOptions", dict(Padding=pad, StrideW=sw, StrideH=sh, DilationWFactor=dw,
                                                        DilationHFactor=dh, FusedActivationFunction=act))
        return y

    def depthwise_conv2d(self, x: QTensor, kernel=(3, 3), stride=(1, 1), dilation=(1, 1), depth_multiplier: int = 1,
                         padding: str = "SAME", activation: str = "NONE", per_channel: bool = True,
                         w_scales=None, out_scale=None, out_zp=None) -> QTensor:
        """DEPTHWISE_CONV_2D with [1, H, W, C*multiplier] weights and a bias (LiteRT needs one)."""
        (kh, kw), (sh, sw), (dh, dw) = _pair(kernel, "kernel"), _pair(stride, "stride"), _pair(dilation, "dilation")
        act, pad = _choice(activation, _ACTIVATIONS, "activation"), _choice(padding, _PADDINGS, "padding")
        if depth_multiplier < 1:
            raise ValueError(f"depth_multiplier must be positive, got {depth_multiplier}")
        n, h, w, c = x.shape
        channels = c * depth_multiplier
        shape = (n, _conv_out_size(h, kh, sh, dh, padding), _conv_out_size(w, kw, sw, dw, padding), channels)
        weights, scales = self._weights((1, kh, kw, channels), channels, 3, per_channel, w_scales)
        y, acc = self._weighted_output(x, shape, kh * kw, scales, activation, out_scale, out_zp)
        self.builder.add_operator(
            _OP.DEPTHWISE_CONV_2D, [x.index, weights, self._bias(x, scales, acc, True)], [y.index],
            "DepthwiseConv2DOptions", dict(Padding=pad, StrideW=sw, StrideH=sh, DepthMultiplier=depth_multiplier,
                                           DilationWFactor=dw, DilationHFactor=dh, FusedActivationFunction=act))
        return y

    def fully_connected(self, x: QTensor, units: int = 16, bias: bool = True, keep_num_dims: bool = False,
                        activation: str = "NONE", per_channel: bool = False, w_scales=None, out_scale=None,
                        out_zp=None) -> QTensor:
        """FULLY_CONNECTED over the last dimension (inputs of higher rank are flattened unless keep_num_dims)."""
        act = _choice(activation, _ACTIVATIONS, "activation")
        depth = x.shape[-1]
        if keep_num_dims:
            shape = x.shape[:-1] + (units,)
        else:
            shape = (int(np.prod(x.shape)) // depth, units)
        weights, scales = self._weights((units, depth), units, 0, per_channel, w_scales)
        y, acc = self._weighted_output(x, shape, depth, scales, activation, out_scale, out_zp)
        self.builder.add_operator(_OP.FULLY_CONNECTED, [x.index, weights, self._bias(x, scales, acc, bias)],
                                  [y.index], "FullyConnectedOptions",
                                  dict(FusedActivationFunction=act, KeepNumDims=keep_num_dims))
        return y

    def transpose_conv(self, x: QTensor, out_channels: int = 8, kernel=(3, 3), stride=(2, 2),
                       padding: str = "SAME", bias: bool = True, per_channel: bool = True, w_scales=None,
                       out_scale=None, out_zp=None) -> QTensor:
        """TRANSPOSE_CONV with OHWI weights; the output size is input*stride (SAME) or (input-1)*stride+kernel."""
        (kh, kw), (sh, sw) = _pair(kernel, "kernel"), _pair(stride, "stride")
        pad = _choice(padding, _PADDINGS, "padding")
        n, h, w, c = x.shape
        if padding == "SAME":
            shape = (n, h * sh, w * sw, out_channels)
        else:
            shape = (n, (h - 1) * sh + kh, (w - 1) * sw + kw, out_channels)
        out_shape = self._const(np.array(shape, dtype=np.int32))
        weights, scales = self._weights((out_channels, kh, kw, c), out_channels, 0, per_channel, w_scales)
        taps = max(1, -(-kh // sh) * -(-kw // sw)) * c
        y, acc = self._weighted_output(x, shape, taps, scales, "NONE", out_scale, out_zp)
        self.builder.add_operator(_OP.TRANSPOSE_CONV, [out_shape, weights, x.index, self._bias(x, scales, acc, bias)],
                                  [y.index], "TransposeConvOptions", dict(Padding=pad, StrideW=sw, StrideH=sh),
                                  version=3)
        return y

    # -- pooling and reductions ------------------------------------------------------------------------------
    def _pool(self, builtin, x: QTensor, pool, stride, padding, activation) -> QTensor:
        (ph, pw), (sh, sw) = _pair(pool, "pool"), _pair(stride, "stride")
        act, pad = _choice(activation, _ACTIVATIONS, "activation"), _choice(padding, _PADDINGS, "padding")
        n, h, w, c = x.shape
        y = self._same_quant(x, (n, _conv_out_size(h, ph, sh, 1, padding), _conv_out_size(w, pw, sw, 1, padding), c))
        self.builder.add_operator(builtin, [x.index], [y.index], "Pool2DOptions",
                                  dict(Padding=pad, StrideW=sw, StrideH=sh, FilterWidth=pw, FilterHeight=ph,
                                       FusedActivationFunction=act))
        return y

    def avg_pool2d(self, x: QTensor, pool=(2, 2), stride=(2, 2), padding: str = "VALID",
                   activation: str = "NONE") -> QTensor:
        """AVERAGE_POOL_2D; TFLite requires the output to keep the input's quantization."""
        return self._pool(_OP.AVERAGE_POOL_2D, x, pool, stride, padding, activation)

    def max_pool2d(self, x: QTensor, pool=(2, 2), stride=(2, 2), padding: str = "VALID",
                   activation: str = "NONE") -> QTensor:
        """MAX_POOL_2D; the output keeps the input's quantization."""
        return self._pool(_OP.MAX_POOL_2D, x, pool, stride, padding, activation)

    def _reduce(self, builtin, x: QTensor, axis, keep_dims: bool, scale_range: float, out_scale, out_zp) -> QTensor:
        axes = sorted({a % len(x.shape) for a in np.atleast_1d(axis).tolist()})
        shape = tuple((1 if i in axes else d) for i, d in enumerate(x.shape) if keep_dims or i not in axes)
        lo, hi = x.real_range
        count = int(np.prod([x.shape[a] for a in axes])) if scale_range else 1
        y = self._result(x, shape or (1,), lo * count, hi * count, out_scale, out_zp)
        axis_t = self._const(np.array(axes, dtype=np.int32))
        self.builder.add_operator(builtin, [x.index, axis_t], [y.index], "ReducerOptions", dict(KeepDims=keep_dims))
        return y

    def mean(self, x: QTensor, axis=(1, 2), keep_dims: bool = True, out_scale=None, out_zp=None) -> QTensor:
        """MEAN over `axis`."""
        return self._reduce(_OP.MEAN, x, axis, keep_dims, False, out_scale, out_zp)

    def sum(self, x: QTensor, axis=(1, 2), keep_dims: bool = True, out_scale=None, out_zp=None) -> QTensor:
        """SUM over `axis`; the default output range grows with the number of summed elements."""
        return self._reduce(_OP.SUM, x, axis, keep_dims, True, out_scale, out_zp)

    # -- elementwise -----------------------------------------------------------------------------------------
    def _binary(self, builtin, options_table, a: QTensor, b: QTensor, lo, hi, activation, out_scale, out_zp,
                extra=None) -> QTensor:
        if a.dtype != b.dtype:
            raise ValueError("both operands must have the same dtype")
        try:
            shape = tuple(np.broadcast_shapes(a.shape, b.shape))
        except ValueError:
            raise ValueError(f"shapes {a.shape} and {b.shape} do not broadcast") from None
        options = dict(extra or {})
        if activation is not None:
            options["FusedActivationFunction"] = _choice(activation, _ACTIVATIONS, "activation")
            if activation in ("RELU", "RELU6"):
                lo = 0.0
        y = self._result(a, shape, lo, hi, out_scale, out_zp)
        self.builder.add_operator(builtin, [a.index, b.index], [y.index], options_table, options)
        return y

    def add(self, a: QTensor, b: QTensor, activation: str = "NONE", out_scale=None, out_zp=None) -> QTensor:
        (alo, ahi), (blo, bhi) = a.real_range, b.real_range
        return self._binary(_OP.ADD, "AddOptions", a, b, alo + blo, ahi + bhi, activation, out_scale, out_zp,
                            {"PotScaleInt16": False})

    def sub(self, a: QTensor, b: QTensor, activation: str = "NONE", out_scale=None, out_zp=None) -> QTensor:
        (alo, ahi), (blo, bhi) = a.real_range, b.real_range
        return self._binary(_OP.SUB, "SubOptions", a, b, alo - bhi, ahi - blo, activation, out_scale, out_zp,
                            {"PotScaleInt16": False})

    def mul(self, a: QTensor, b: QTensor, activation: str = "NONE", out_scale=None, out_zp=None) -> QTensor:
        corners = [p * q for p in a.real_range for q in b.real_range]
        return self._binary(_OP.MUL, "MulOptions", a, b, min(corners), max(corners), activation, out_scale, out_zp)

    def minimum(self, a: QTensor, b: QTensor) -> QTensor:
        """MINIMUM compares raw integers, so both operands and the output share one quantization."""
        self._require_same_quant(a, b, "minimum")
        return self._binary(_OP.MINIMUM, "MaximumMinimumOptions", a, b, *a.real_range, None, a.scale, a.zero_point)

    def maximum(self, a: QTensor, b: QTensor) -> QTensor:
        """MAXIMUM compares raw integers, so both operands and the output share one quantization."""
        self._require_same_quant(a, b, "maximum")
        return self._binary(_OP.MAXIMUM, "MaximumMinimumOptions", a, b, *a.real_range, None, a.scale, a.zero_point)

    @staticmethod
    def _require_same_quant(a: QTensor, b: QTensor, op: str) -> None:
        if (a.scale, a.zero_point) != (b.scale, b.zero_point):
            raise ValueError(f"{op} needs both operands to share one scale and zero point")

    def squared_difference(self, a: QTensor, b: QTensor, out_scale=None, out_zp=None) -> QTensor:
        (alo, ahi), (blo, bhi) = a.real_range, b.real_range
        spread = max(abs(ahi - blo), abs(bhi - alo))
        return self._binary(_OP.SQUARED_DIFFERENCE, "SquaredDifferenceOptions", a, b, 0.0, spread * spread, None,
                            out_scale, out_zp)

    def prelu(self, x: QTensor, alpha_scale: float = 0.004, out_scale=None, out_zp=None) -> QTensor:
        """PRELU with a random per-channel int8 alpha constant."""
        channels = x.shape[-1]
        alpha = self.rng.integers(-127, 127, size=(1,) * (len(x.shape) - 2) + (channels,), endpoint=True,
                                  dtype=np.int8)
        alpha_t = self._const(alpha, Quantization((float(alpha_scale),), (0,)))
        lo, hi = x.real_range
        bound = 127 * alpha_scale * max(-lo, hi)
        y = self._result(x, x.shape, min(lo, -bound), max(hi, bound), out_scale, out_zp)
        self.builder.add_operator(_OP.PRELU, [x.index, alpha_t], [y.index])
        return y

    def _unary(self, builtin, options_table, x: QTensor, y: QTensor, options=None) -> QTensor:
        self.builder.add_operator(builtin, [x.index], [y.index], options_table, options)
        return y

    def abs(self, x: QTensor, out_scale=None, out_zp=None) -> QTensor:
        lo, hi = x.real_range
        return self._unary(_OP.ABS, "AbsOptions", x,
                           self._result(x, x.shape, 0.0, max(-lo, hi), out_scale, out_zp))

    def relu(self, x: QTensor, out_scale=None, out_zp=None) -> QTensor:
        """RELU; by default the output is requantized to the clamped range."""
        xlo, xhi = x.real_range
        return self._unary(_OP.RELU, None, x, self._result(x, x.shape, 0.0, xhi, out_scale, out_zp))

    def relu6(self, x: QTensor, out_scale=None, out_zp=None) -> QTensor:
        """RELU6; keeps the input's quantization by default (TFLite Micro's kernel cannot requantize)."""
        y = self._activation(x.shape, x.dtype, x.scale if out_scale is None else out_scale,
                             x.zero_point if out_zp is None else out_zp)
        return self._unary(_OP.RELU6, None, x, y)

    def relu_n1_to_1(self, x: QTensor, out_scale=None, out_zp=None) -> QTensor:
        """RELU_N1_TO_1; keeps the input's quantization by default."""
        y = self._activation(x.shape, x.dtype, x.scale if out_scale is None else out_scale,
                             x.zero_point if out_zp is None else out_zp)
        return self._unary(_OP.RELU_N1_TO_1, None, x, y)

    def exp(self, x: QTensor, out_scale=None, out_zp=None) -> QTensor:
        lo, hi = x.real_range
        return self._unary(_OP.EXP, "ExpOptions", x,
                           self._result(x, x.shape, math.exp(lo), math.exp(hi), out_scale, out_zp))

    def leaky_relu(self, x: QTensor, alpha: float = 0.2, out_scale=None, out_zp=None) -> QTensor:
        lo, hi = x.real_range
        y = self._result(x, x.shape, min(alpha * lo, alpha * hi), max(hi, alpha * lo), out_scale, out_zp)
        return self._unary(_OP.LEAKY_RELU, "LeakyReluOptions", x, y, dict(Alpha=float(alpha)))

    def hard_swish(self, x: QTensor, out_scale=None, out_zp=None) -> QTensor:
        hi = x.real_range[1]
        y = self._result(x, x.shape, -0.375, max(hi, 0.0), out_scale, out_zp)
        return self._unary(_OP.HARD_SWISH, "HardSwishOptions", x, y)

    def _fixed_output(self, x: QTensor, signed_int8: bool, int8_scale: float) -> QTensor:
        """TFLite's fixed output quantization of tanh/logistic/softmax."""
        if x.dtype == np.int16:
            return self._activation(x.shape, x.dtype, 1 / 32768, 0)
        return self._activation(x.shape, x.dtype, int8_scale, 0 if signed_int8 else -128)

    def tanh(self, x: QTensor) -> QTensor:
        return self._unary(_OP.TANH, None, x, self._fixed_output(x, True, 1 / 128))

    def logistic(self, x: QTensor) -> QTensor:
        return self._unary(_OP.LOGISTIC, None, x, self._fixed_output(x, False, 1 / 256))

    def softmax(self, x: QTensor, beta: float = 1.0) -> QTensor:
        return self._unary(_OP.SOFTMAX, "SoftmaxOptions", x, self._fixed_output(x, False, 1 / 256),
                           dict(Beta=float(beta)))

    def quantize(self, x: QTensor, out_scale=None, out_zp=None) -> QTensor:
        """QUANTIZE as an int8->int8 (or int16->int16) requantization."""
        lo, hi = x.real_range
        y = self._result(x, x.shape, 0.8 * lo, 1.3 * hi, out_scale, out_zp)
        return self._unary(_OP.QUANTIZE, "QuantizeOptions", x, y)

    # -- data movement ---------------------------------------------------------------------------------------
    def reshape(self, x: QTensor, new_shape=(1, -1)) -> QTensor:
        shape = list(new_shape)
        total = int(np.prod(x.shape))
        if shape.count(-1) > 1:
            raise ValueError("new_shape may contain at most one -1")
        if -1 in shape:
            known = int(np.prod([d for d in shape if d != -1]))
            if known <= 0 or total % known:
                raise ValueError(f"cannot reshape {x.shape} to {tuple(new_shape)}")
            shape[shape.index(-1)] = total // known
        if int(np.prod(shape)) != total or min(shape) < 1:
            raise ValueError(f"cannot reshape {x.shape} to {tuple(new_shape)}")
        y = self._same_quant(x, shape)
        shape_t = self._const(np.array(shape, dtype=np.int32))
        self.builder.add_operator(_OP.RESHAPE, [x.index, shape_t], [y.index], "ReshapeOptions",
                                  dict(NewShape=list(shape)))
        return y

    def concatenation(self, inputs: list[QTensor], axis: int = -1, activation: str = "NONE") -> QTensor:
        """CONCATENATION; TFLite's int8 kernel needs every input to share the output's quantization."""
        first = inputs[0]
        rank = len(first.shape)
        if not -rank <= axis < rank:
            raise ValueError(f"axis {axis} is out of range for rank {rank}")
        axis %= rank
        for t in inputs[1:]:
            self._require_same_quant(first, t, "concatenation")
            if t.shape[:axis] + t.shape[axis + 1:] != first.shape[:axis] + first.shape[axis + 1:]:
                raise ValueError(f"shapes {first.shape} and {t.shape} differ outside axis {axis}")
        shape = list(first.shape)
        shape[axis] = sum(t.shape[axis] for t in inputs)
        y = self._same_quant(first, shape)
        self.builder.add_operator(_OP.CONCATENATION, [t.index for t in inputs], [y.index], "ConcatenationOptions",
                                  dict(Axis=axis, FusedActivationFunction=_choice(activation, _ACTIVATIONS,
                                                                                  "activation")))
        return y

    def split(self, x: QTensor, num_splits: int = 2, axis: int = -1) -> list[QTensor]:
        rank = len(x.shape)
        if not -rank <= axis < rank:
            raise ValueError(f"axis {axis} is out of range for rank {rank}")
        axis %= rank
        if num_splits < 1 or x.shape[axis] % num_splits:
            raise ValueError(f"dimension {x.shape[axis]} cannot be split into {num_splits} equal parts")
        shape = list(x.shape)
        shape[axis] //= num_splits
        outputs = [self._same_quant(x, shape) for _ in range(num_splits)]
        axis_t = self._const(np.array(axis, dtype=np.int32))
        self.builder.add_operator(_OP.SPLIT, [axis_t, x.index], [t.index for t in outputs], "SplitOptions",
                                  dict(NumSplits=num_splits))
        return outputs

    def strided_slice(self, x: QTensor, begin=(0, 1, 1, 0), end=(1, 7, 7, 4), strides=(1, 2, 1, 1),
                      begin_mask: int = 0, end_mask: int = 0) -> QTensor:
        rank = len(x.shape)
        if not len(begin) == len(end) == len(strides) == rank:
            raise ValueError(f"begin, end and strides need {rank} values each")
        if 0 in strides:
            raise ValueError("strides must be non-zero")
        shape = []
        for i, dim in enumerate(x.shape):
            start = None if begin_mask >> i & 1 else begin[i]
            stop = None if end_mask >> i & 1 else end[i]
            shape.append(len(range(*slice(start, stop, strides[i]).indices(dim))))
        if min(shape) < 1:
            raise ValueError(f"the slice of {x.shape} is empty")
        y = self._same_quant(x, shape)
        consts = [self._const(np.array(v, dtype=np.int32)) for v in (begin, end, strides)]
        self.builder.add_operator(_OP.STRIDED_SLICE, [x.index, *consts], [y.index], "StridedSliceOptions",
                                  dict(BeginMask=begin_mask, EndMask=end_mask))
        return y

    def slice(self, x: QTensor, begin=(0, 1, 2, 0), size=(1, 5, 4, -1)) -> QTensor:
        """SLICE; a size of -1 takes the rest of the dimension."""
        if not len(begin) == len(size) == len(x.shape):
            raise ValueError(f"begin and size need {len(x.shape)} values each")
        shape = [d - b if s == -1 else s for d, b, s in zip(x.shape, begin, size)]
        if any(b < 0 or s < 1 or b + s > d for d, b, s in zip(x.shape, begin, shape)):
            raise ValueError(f"slice begin={tuple(begin)} size={tuple(size)} does not fit {x.shape}")
        y = self._same_quant(x, shape)
        consts = [self._const(np.array(v, dtype=np.int32)) for v in (begin, size)]
        self.builder.add_operator(_OP.SLICE, [x.index, *consts], [y.index], "SliceOptions")
        return y

    def squeeze(self, x: QTensor, axis=(0,)) -> QTensor:
        axes = sorted({a % len(x.shape) for a in axis})
        if any(x.shape[a] != 1 for a in axes):
            raise ValueError(f"cannot squeeze axes {tuple(axis)} of {x.shape}: not all of size 1")
        y = self._same_quant(x, [d for i, d in enumerate(x.shape) if i not in axes])
        self.builder.add_operator(_OP.SQUEEZE, [x.index], [y.index], "SqueezeOptions", dict(SqueezeDims=axes))
        return y

    def expand_dims(self, x: QTensor, axis: int = 0) -> QTensor:
        rank = len(x.shape) + 1
        if not -rank <= axis < rank:
            raise ValueError(f"axis {axis} is out of range for rank {rank}")
        shape = list(x.shape)
        shape.insert(axis % rank, 1)
        y = self._same_quant(x, shape)
        self.builder.add_operator(_OP.EXPAND_DIMS, [x.index, self._const(np.array([axis], dtype=np.int32))],
                                  [y.index], "ExpandDimsOptions")
        return y

    def transpose(self, x: QTensor, perm=(0, 2, 1, 3)) -> QTensor:
        if sorted(perm) != list(range(len(x.shape))):
            raise ValueError(f"perm {tuple(perm)} is not a permutation of {len(x.shape)} axes")
        y = self._same_quant(x, [x.shape[p] for p in perm])
        self.builder.add_operator(_OP.TRANSPOSE, [x.index, self._const(np.array(perm, dtype=np.int32))],
                                  [y.index], "TransposeOptions")
        return y

    def pack(self, inputs: list[QTensor], axis: int = 0) -> QTensor:
        """PACK (stack); like concatenation, inputs share the output's quantization."""
        first = inputs[0]
        rank = len(first.shape) + 1
        if not -rank <= axis < rank:
            raise ValueError(f"axis {axis} is out of range for rank {rank}")
        for t in inputs[1:]:
            self._require_same_quant(first, t, "pack")
            if t.shape != first.shape:
                raise ValueError(f"pack needs equal shapes, got {first.shape} and {t.shape}")
        shape = list(first.shape)
        shape.insert(axis % rank, len(inputs))
        y = self._same_quant(first, shape)
        self.builder.add_operator(_OP.PACK, [t.index for t in inputs], [y.index], "PackOptions",
                                  dict(ValuesCount=len(inputs), Axis=axis % rank))
        return y

    def pad(self, x: QTensor, paddings=((0, 0), (1, 1), (2, 1), (0, 0))) -> QTensor:
        """PAD with the zero point (real 0.0)."""
        pads = np.array(paddings, dtype=np.int32)
        if pads.shape != (len(x.shape), 2) or pads.min() < 0:
            raise ValueError(f"paddings must be {len(x.shape)} non-negative (before, after) pairs")
        y = self._same_quant(x, tuple(d + int(p.sum()) for d, p in zip(x.shape, pads)))
        self.builder.add_operator(_OP.PAD, [x.index, self._const(pads)], [y.index], "PadOptions")
        return y

    def _resize(self, builtin, options_table, x: QTensor, size, align_corners, half_pixel_centers) -> QTensor:
        height, width = _pair(size, "size")
        if align_corners and half_pixel_centers:
            raise ValueError("align_corners and half_pixel_centers cannot both be set")
        y = self._same_quant(x, (x.shape[0], height, width, x.shape[3]))
        self.builder.add_operator(builtin, [x.index, self._const(np.array([height, width], dtype=np.int32))],
                                  [y.index], options_table,
                                  dict(AlignCorners=align_corners, HalfPixelCenters=half_pixel_centers))
        return y

    def resize_nearest_neighbor(self, x: QTensor, size=(16, 16), align_corners: bool = False,
                                half_pixel_centers: bool = False) -> QTensor:
        return self._resize(_OP.RESIZE_NEAREST_NEIGHBOR, "ResizeNearestNeighborOptions", x, size, align_corners,
                            half_pixel_centers)

    def resize_bilinear(self, x: QTensor, size=(16, 16), align_corners: bool = False,
                        half_pixel_centers: bool = False) -> QTensor:
        return self._resize(_OP.RESIZE_BILINEAR, "ResizeBilinearOptions", x, size, align_corners,
                            half_pixel_centers)


# -- single-operator models ------------------------------------------------------------------------------------
# op kind -> (Net method, number of tensor inputs, default input shape)
_SINGLE = {
    "conv2d": (Net.conv2d, 1, (1, 8, 8, 4)),
    "depthwise_conv2d": (Net.depthwise_conv2d, 1, (1, 8, 8, 8)),
    "fully_connected": (Net.fully_connected, 1, (1, 32)),
    "avg_pool2d": (Net.avg_pool2d, 1, (1, 8, 8, 8)),
    "max_pool2d": (Net.max_pool2d, 1, (1, 8, 8, 8)),
    "add": (Net.add, 2, (1, 8, 8, 8)),
    "sub": (Net.sub, 2, (1, 8, 8, 8)),
    "mul": (Net.mul, 2, (1, 8, 8, 8)),
    "minimum": (Net.minimum, 2, (1, 8, 8, 8)),
    "maximum": (Net.maximum, 2, (1, 8, 8, 8)),
    "abs": (Net.abs, 1, (1, 8, 8, 8)),
    "leaky_relu": (Net.leaky_relu, 1, (1, 8, 8, 8)),
    "tanh": (Net.tanh, 1, (1, 8, 8, 8)),
    "logistic": (Net.logistic, 1, (1, 8, 8, 8)),
    "hard_swish": (Net.hard_swish, 1, (1, 8, 8, 8)),
    "softmax": (Net.softmax, 1, (1, 10)),
    "reshape": (Net.reshape, 1, (1, 4, 4, 8)),
    "concatenation": (Net.concatenation, 2, (1, 4, 4, 8)),
    "split": (Net.split, 1, (1, 4, 4, 8)),
    "strided_slice": (Net.strided_slice, 1, (1, 8, 8, 4)),
    "pad": (Net.pad, 1, (1, 8, 8, 4)),
    "mean": (Net.mean, 1, (1, 8, 8, 8)),
    "resize_nearest_neighbor": (Net.resize_nearest_neighbor, 1, (1, 8, 8, 4)),
    "resize_bilinear": (Net.resize_bilinear, 1, (1, 8, 8, 4)),
    "transpose_conv": (Net.transpose_conv, 1, (1, 8, 8, 4)),
    "quantize": (Net.quantize, 1, (1, 8, 8, 8)),
    "relu": (Net.relu, 1, (1, 8, 8, 8)),
    "relu6": (Net.relu6, 1, (1, 8, 8, 8)),
    "relu_n1_to_1": (Net.relu_n1_to_1, 1, (1, 8, 8, 8)),
    "exp": (Net.exp, 1, (1, 8, 8, 8)),
    "prelu": (Net.prelu, 1, (1, 8, 8, 8)),
    "squared_difference": (Net.squared_difference, 2, (1, 8, 8, 8)),
    "sum": (Net.sum, 1, (1, 8, 8, 8)),
    "slice": (Net.slice, 1, (1, 8, 8, 4)),
    "squeeze": (Net.squeeze, 1, (1, 8, 8, 4)),
    "expand_dims": (Net.expand_dims, 1, (8, 8, 4)),
    "transpose": (Net.transpose, 1, (1, 4, 6, 8)),
    "pack": (Net.pack, 2, (1, 4, 4, 8)),
}
OPS: tuple[str, ...] = tuple(_SINGLE)
# Ops taking a list of same-quantized inputs (`num_inputs` of them).
_LIST_OPS = ("concatenation", "pack")


def _op_params(method) -> list[str]:
    return [p for p in inspect.signature(method).parameters if p not in ("self", "x", "a", "b", "inputs")]


def make(op: str, seed: int = 0, **params) -> bytes:
    """A .tflite model with the single operator `op` (one of `OPS`), its inputs named input_0, input_1, ...

    Input parameters: `in_shape`, `dtype` ("int8" or "int16"), `in_scale`, `in_zp`; binary ops also take
    `in2_shape`, `in2_scale`, `in2_zp` (broadcasting allowed); concatenation takes `num_inputs`. Every other
    parameter is the op's own (see the `Net` method of the same name). Bad values raise ValueError.
    """
    if op not in _SINGLE:
        raise ValueError(f"unknown op kind {op!r}; known: {', '.join(OPS)}")
    method, arity, default_shape = _SINGLE[op]
    allowed = set(_op_params(method)) | {"in_shape", "dtype", "in_scale", "in_zp"}
    allowed |= {"in2_shape", "in2_scale", "in2_zp"} if arity == 2 and op not in _LIST_OPS else set()
    allowed |= {"num_inputs"} if op in _LIST_OPS else set()
    unknown = sorted(set(params) - allowed)
    if unknown:
        raise ValueError(f"unknown parameter(s) {', '.join(unknown)} for op {op!r}; valid: {', '.join(sorted(allowed))}")
    dtype = params.pop("dtype", "int8")
    if dtype not in ("int8", "int16"):
        raise ValueError(f"dtype must be 'int8' or 'int16', got {dtype!r}")
    if dtype == "int16" and op not in _INT16_OPS:
        raise ValueError(f"op {op!r} has no int16 variant here; int16 ops: {', '.join(sorted(_INT16_OPS))}")
    shape = tuple(params.pop("in_shape", default_shape))
    net = Net(seed, description=f"ethosu_tvm.testing.models:{op}")
    first = net.input(shape, dtype, params.pop("in_scale", None), params.pop("in_zp", None))
    if op in _LIST_OPS:
        count = params.pop("num_inputs", 2)
        if count < 1:
            raise ValueError("num_inputs must be at least 1")
        inputs = [first] + [net.input(shape, dtype, first.scale, first.zero_point) for _ in range(count - 1)]
        result = method(net, inputs, **params)
    elif arity == 2:
        same = op in ("minimum", "maximum")
        default_scale, default_zp = (first.scale, first.zero_point) if same else (None, None)
        second = net.input(tuple(params.pop("in2_shape", shape)), dtype, params.pop("in2_scale", default_scale),
                           params.pop("in2_zp", default_zp if same else (None if dtype == "int8" else 0)))
        result = method(net, first, second, **params)
    else:
        result = method(net, first, **params)
    for tensor in result if isinstance(result, list) else [result]:
        net.output(tensor)
    return net.build()


# -- small networks --------------------------------------------------------------------------------------------
def _ds_cnn(net: Net) -> None:
    """Keyword-spotting DS-CNN in miniature: strided conv, two depthwise-separable blocks, pool, FC, softmax."""
    x = net.input((1, 49, 10, 1), scale=0.5847, zero_point=83)
    x = net.conv2d(x, out_channels=16, kernel=(10, 4), stride=(2, 2), activation="RELU")
    for _ in range(2):
        x = net.depthwise_conv2d(x, activation="RELU")
        x = net.conv2d(x, out_channels=16, kernel=(1, 1), activation="RELU")
    x = net.avg_pool2d(x, pool=(x.shape[1], x.shape[2]), stride=(1, 1))
    x = net.reshape(x, (1, 16))
    logits = net.fully_connected(x, units=12)
    net.output(net.softmax(logits, beta=1.0 / logits.rms))  # a beta that keeps the probabilities graded


def _resnet_block(net: Net) -> None:
    """Two 3x3 convolutions and a residual add with fused ReLU."""
    x = net.input((1, 16, 16, 8))
    y = net.conv2d(x, out_channels=8, activation="RELU")
    y = net.conv2d(y, out_channels=8)
    net.output(net.add(y, x, activation="RELU"))


def _inverted_residual(net: Net) -> None:
    """MobileNetV2 block: 1x1 expand, 3x3 depthwise, 1x1 project, residual add."""
    x = net.input((1, 16, 16, 8))
    y = net.conv2d(x, out_channels=32, kernel=(1, 1), activation="RELU6")
    y = net.depthwise_conv2d(y, activation="RELU6")
    y = net.conv2d(y, out_channels=8, kernel=(1, 1))
    net.output(net.add(y, x))


def _multi_io(net: Net) -> None:
    """Two inputs, two outputs: a conv of one added to the other, and a pooled product of both."""
    a = net.input((1, 8, 8, 4))
    b = net.input((1, 8, 8, 4), scale=0.03, zero_point=5)
    net.output(net.add(net.conv2d(a, out_channels=4), b))
    net.output(net.max_pool2d(net.mul(a, b)))


_GRAPHS = {"ds_cnn": _ds_cnn, "resnet_block": _resnet_block, "inverted_residual": _inverted_residual,
           "multi_io": _multi_io}
GRAPHS: tuple[str, ...] = tuple(_GRAPHS)


def make_graph(name: str, seed: int = 0) -> bytes:
    """A small multi-operator model (one of `GRAPHS`)."""
    if name not in _GRAPHS:
        raise ValueError(f"unknown graph {name!r}; known: {', '.join(GRAPHS)}")
    net = Net(seed, description=f"ethosu_tvm.testing.models:{name}")
    _GRAPHS[name](net)
    return net.build()
