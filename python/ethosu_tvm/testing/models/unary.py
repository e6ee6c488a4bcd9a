"""Ops of one tensor: activations, look-up-table functions (tanh, logistic, exp, ...), softmax and quantize."""
from __future__ import annotations

import math

import numpy as np

from ..tflite_builder import Quantization
from .base import NetBase
from .quant import OP, QTensor


class UnaryOps(NetBase):
    """Functions of one tensor; the output has its shape (PRELU's alpha is a constant of the model)."""

    def prelu(self, x: QTensor, alpha_scale: float = 0.004, out_scale=None, out_zp=None) -> QTensor:
        """PRELU with a random per-channel int8 alpha constant."""
        channels = x.shape[-1]
        alpha = self.rng.integers(-127, 127, size=(1,) * (len(x.shape) - 2) + (channels,), endpoint=True,
                                  dtype=np.int8)
        alpha_t = self._const(alpha, Quantization((float(alpha_scale),), (0,)))
        lo, hi = x.real_range
        bound = 127 * alpha_scale * max(-lo, hi)
        y = self._result(x, x.shape, min(lo, -bound), max(hi, bound), out_scale, out_zp)
        self.builder.add_operator(OP.PRELU, [x.index, alpha_t], [y.index])
        return y

    def _unary(self, builtin, options_table, x: QTensor, y: QTensor, options=None) -> QTensor:
        self.builder.add_operator(builtin, [x.index], [y.index], options_table, options)
        return y

    def abs(self, x: QTensor, out_scale=None, out_zp=None) -> QTensor:
        lo, hi = x.real_range
        return self._unary(OP.ABS, "AbsOptions", x,
                           self._result(x, x.shape, 0.0, max(-lo, hi), out_scale, out_zp))

    def relu(self, x: QTensor, out_scale=None, out_zp=None) -> QTensor:
        """RELU; by default the output is requantized to the clamped range."""
        xlo, xhi = x.real_range
        return self._unary(OP.RELU, None, x, self._result(x, x.shape, 0.0, xhi, out_scale, out_zp))

    def relu6(self, x: QTensor, out_scale=None, out_zp=None) -> QTensor:
        """RELU6; keeps the input's quantization by default (TFLite Micro's kernel cannot requantize)."""
        y = self._activation(x.shape, x.dtype, x.scale if out_scale is None else out_scale,
                             x.zero_point if out_zp is None else out_zp)
        return self._unary(OP.RELU6, None, x, y)

    def relu_n1_to_1(self, x: QTensor, out_scale=None, out_zp=None) -> QTensor:
        """RELU_N1_TO_1; keeps the input's quantization by default."""
        y = self._activation(x.shape, x.dtype, x.scale if out_scale is None else out_scale,
                             x.zero_point if out_zp is None else out_zp)
        return self._unary(OP.RELU_N1_TO_1, None, x, y)

    def relu_0_to_1(self, x: QTensor, out_scale=None, out_zp=None) -> QTensor:
        """RELU_0_TO_1; keeps the input's quantization by default."""
        y = self._activation(x.shape, x.dtype, x.scale if out_scale is None else out_scale,
                             x.zero_point if out_zp is None else out_zp)
        return self._unary(OP.RELU_0_TO_1, None, x, y)

    def exp(self, x: QTensor, out_scale=None, out_zp=None) -> QTensor:
        lo, hi = x.real_range
        return self._unary(OP.EXP, "ExpOptions", x,
                           self._result(x, x.shape, math.exp(lo), math.exp(hi), out_scale, out_zp))

    def elu(self, x: QTensor, out_scale=None, out_zp=None) -> QTensor:
        """ELU; LiteRT registers no reference kernel for it (its optimised one and TFLite Micro agree)."""
        lo, hi = x.real_range
        y = self._result(x, x.shape, math.expm1(min(lo, 0.0)), max(hi, 0.0), out_scale, out_zp)
        self.builder.add_operator(OP.ELU, [x.index], [y.index])
        return y

    def gelu(self, x: QTensor, approximate: bool = False, out_scale=None, out_zp=None) -> QTensor:
        """GELU, x·Φ(x) (`approximate`: its tanh form); TFLite's int8 kernel is a table of the float function. The
        output covers [−0.17, hi] (GELU's minimum is about −0.17, at x ≈ −0.75)."""
        lo, hi = x.real_range
        y = self._result(x, x.shape, -0.17 if lo < 0 else 0.0, max(hi, 0.0), out_scale, out_zp)
        return self._unary(OP.GELU, "GeluOptions", x, y, dict(Approximate=bool(approximate)))

    def log(self, x: QTensor, out_scale=None, out_zp=None) -> QTensor:
        """LOG over the positive part of the input's range (LiteRT gives the lowest value for the rest)."""
        lo, hi = x.real_range
        floor = max(lo, x.scale)
        return self._unary(OP.LOG, None, x, self._result(x, x.shape, math.log(floor), math.log(max(hi, floor)),
                                                          out_scale, out_zp))

    def rsqrt(self, x: QTensor, out_scale=None, out_zp=None) -> QTensor:
        """RSQRT; LiteRT refuses non-positive inputs at run time, so give it an input range of non-negative values
        (in_zp = −128)."""
        lo, hi = x.real_range
        floor = max(lo, x.scale)
        return self._unary(OP.RSQRT, None, x, self._result(x, x.shape, 1 / math.sqrt(max(hi, floor)),
                                                            1 / math.sqrt(floor), out_scale, out_zp))

    def leaky_relu(self, x: QTensor, alpha: float = 0.2, out_scale=None, out_zp=None) -> QTensor:
        lo, hi = x.real_range
        y = self._result(x, x.shape, min(alpha * lo, alpha * hi), max(hi, alpha * lo), out_scale, out_zp)
        return self._unary(OP.LEAKY_RELU, "LeakyReluOptions", x, y, dict(Alpha=float(alpha)))

    def hard_swish(self, x: QTensor, out_scale=None, out_zp=None) -> QTensor:
        hi = x.real_range[1]
        y = self._result(x, x.shape, -0.375, max(hi, 0.0), out_scale, out_zp)
        return self._unary(OP.HARD_SWISH, "HardSwishOptions", x, y)

    def _fixed_output(self, x: QTensor, signed_int8: bool, int8_scale: float) -> QTensor:
        """TFLite's fixed output quantization of tanh/logistic/softmax."""
        if x.dtype == np.int16:
            return self._activation(x.shape, x.dtype, 1 / 32768, 0)
        return self._activation(x.shape, x.dtype, int8_scale, 0 if signed_int8 else -128)

    def tanh(self, x: QTensor) -> QTensor:
        return self._unary(OP.TANH, None, x, self._fixed_output(x, True, 1 / 128))

    def logistic(self, x: QTensor) -> QTensor:
        return self._unary(OP.LOGISTIC, None, x, self._fixed_output(x, False, 1 / 256))

    def softmax(self, x: QTensor, beta: float = 1.0) -> QTensor:
        return self._unary(OP.SOFTMAX, "SoftmaxOptions", x, self._fixed_output(x, False, 1 / 256),
                           dict(Beta=float(beta)))

    def log_softmax(self, x: QTensor) -> QTensor:
        """LOG_SOFTMAX over the last axis; TFLite fixes the int8 output at scale 16/256, zero point 127."""
        y = self._activation(x.shape, x.dtype, 16 / 256, 127)
        return self._unary(OP.LOG_SOFTMAX, "LogSoftmaxOptions", x, y)

    def quantize(self, x: QTensor, out_scale=None, out_zp=None, out_dtype=None) -> QTensor:
        """QUANTIZE as a requantization into `out_dtype` (default: the input's; int8 for uint8, the only type TFLite
        requantizes uint8 to). Between uint8 and int8 the output defaults to the input's scale and a zero point 128
        apart, as TFLite's converter writes a uint8 model's I/O; otherwise to a range 0.8 and 1.3 times the input's."""
        dtype = np.dtype(out_dtype or ("int8" if x.dtype == np.uint8 else x.dtype))
        if {x.dtype.name, dtype.name} == {"uint8", "int8"}:
            shifted = x.zero_point + (128 if dtype == np.uint8 else -128)
            return self._unary(OP.QUANTIZE, "QuantizeOptions", x, self._activation(
                x.shape, dtype, x.scale if out_scale is None else out_scale, shifted if out_zp is None else out_zp))
        lo, hi = x.real_range
        y = self._result(x, x.shape, 0.8 * lo, 1.3 * hi, out_scale, out_zp, dtype=dtype)
        return self._unary(OP.QUANTIZE, "QuantizeOptions", x, y)

    def neg(self, x: QTensor, out_scale=None, out_zp=None) -> QTensor:
        """NEG; LiteRT's int8 kernel negates the raw integers, right for equal scales and opposite zero points (the
        default)."""
        mirrored = min(max(-x.zero_point, -128), 127)
        y = self._activation(x.shape, x.dtype, x.scale if out_scale is None else out_scale,
                             mirrored if out_zp is None else out_zp)
        return self._unary(OP.NEG, "NegOptions", x, y)

    def sqrt(self, x: QTensor, out_scale=None, out_zp=None) -> QTensor:
        """SQRT over the non-negative part of the input's range (LiteRT refuses negative inputs at run time)."""
        lo, hi = x.real_range
        return self._unary(OP.SQRT, None, x, self._result(x, x.shape, 0.0, math.sqrt(max(hi, 0.0)), out_scale,
                                                           out_zp))

    def cast(self, x: QTensor, out_type: str = "int32") -> QTensor:
        """CAST of the raw integers to `out_type` (int8, int16 or int32; quantization is not applied: TFLite's CAST
        converts the stored values, as C does)."""
        if out_type not in ("int8", "int16", "int32"):
            raise ValueError(f"out_type must be 'int8', 'int16' or 'int32', got {out_type!r}")
        index = self.builder.add_tensor(self._name("cast"), x.shape, out_type)
        self.builder.add_operator(OP.CAST, [x.index], [index])
        return QTensor(index, x.shape, np.dtype(out_type), 1.0, 0, 0.0)

    def l2_normalization(self, x: QTensor) -> QTensor:
        """L2_NORMALIZATION over the last axis (int8): the output has TFLite's fixed scale 1/128 and zero point 0."""
        if x.dtype != np.int8:
            raise ValueError("L2_NORMALIZATION is int8 only here (TFLite has no int16 kernel)")
        y = self._activation(x.shape, x.dtype, 1.0 / 128, 0)
        self.builder.add_operator(OP.L2_NORMALIZATION, [x.index], [y.index], "L2NormOptions",
                                  dict(FusedActivationFunction=0))
        return y
