"""Pooling and reductions over axes (ARG_MAX and ARG_MIN among them)."""
from __future__ import annotations

import numpy as np
import tflite

from .base import NetBase
from .quant import ACTIVATIONS, OP, PADDINGS, QTensor, choice, conv_out_size, pair


class PoolingOps(NetBase):
    """Average and max pooling, mean, sum, the maximum and minimum over axes and their indices."""

    def _pool(self, builtin, x: QTensor, pool, stride, padding, activation) -> QTensor:
        (ph, pw), (sh, sw) = pair(pool, "pool"), pair(stride, "stride")
        act, pad = choice(activation, ACTIVATIONS, "activation"), choice(padding, PADDINGS, "padding")
        n, h, w, c = x.shape
        y = self._same_quant(x, (n, conv_out_size(h, ph, sh, 1, padding), conv_out_size(w, pw, sw, 1, padding), c))
        self.builder.add_operator(builtin, [x.index], [y.index], "Pool2DOptions",
                                  dict(Padding=pad, StrideW=sw, StrideH=sh, FilterWidth=pw, FilterHeight=ph,
                                       FusedActivationFunction=act))
        return y

    def avg_pool2d(self, x: QTensor, pool=(2, 2), stride=(2, 2), padding: str = "VALID",
                   activation: str = "NONE") -> QTensor:
        """AVERAGE_POOL_2D; TFLite requires the output to keep the input's quantization."""
        return self._pool(OP.AVERAGE_POOL_2D, x, pool, stride, padding, activation)

    def max_pool2d(self, x: QTensor, pool=(2, 2), stride=(2, 2), padding: str = "VALID",
                   activation: str = "NONE") -> QTensor:
        """MAX_POOL_2D; the output keeps the input's quantization."""
        return self._pool(OP.MAX_POOL_2D, x, pool, stride, padding, activation)

    def _reduce(self, builtin, x: QTensor, axis, keep_dims: bool, result) -> QTensor:
        """A reducer over `axis`; `result(shape, count)` makes the output tensor (count: elements reduced)."""
        axes = sorted({a % len(x.shape) for a in np.atleast_1d(axis).tolist()})
        shape = tuple((1 if i in axes else d) for i, d in enumerate(x.shape) if keep_dims or i not in axes)
        y = result(shape or (1,), int(np.prod([x.shape[a] for a in axes])))
        axis_t = self._const(np.array(axes, dtype=np.int32))
        self.builder.add_operator(builtin, [x.index, axis_t], [y.index], "ReducerOptions", dict(KeepDims=keep_dims))
        return y

    def mean(self, x: QTensor, axis=(1, 2), keep_dims: bool = True, out_scale=None, out_zp=None) -> QTensor:
        """MEAN over `axis`."""
        lo, hi = x.real_range
        return self._reduce(OP.MEAN, x, axis, keep_dims,
                            lambda shape, _: self._result(x, shape, lo, hi, out_scale, out_zp))

    def sum(self, x: QTensor, axis=(1, 2), keep_dims: bool = True, out_scale=None, out_zp=None) -> QTensor:
        """SUM over `axis`; the default output range grows with the number of summed elements."""
        lo, hi = x.real_range
        return self._reduce(OP.SUM, x, axis, keep_dims,
                            lambda shape, count: self._result(x, shape, lo * count, hi * count, out_scale, out_zp))

    def reduce_max(self, x: QTensor, axis=(1, 2), keep_dims: bool = True) -> QTensor:
        """REDUCE_MAX over `axis`; the output keeps the input's quantization."""
        return self._reduce(OP.REDUCE_MAX, x, axis, keep_dims, lambda shape, _: self._same_quant(x, shape))

    def reduce_min(self, x: QTensor, axis=(1, 2), keep_dims: bool = True) -> QTensor:
        """REDUCE_MIN over `axis`; the output keeps the input's quantization."""
        return self._reduce(OP.REDUCE_MIN, x, axis, keep_dims, lambda shape, _: self._same_quant(x, shape))

    def _arg(self, builtin, options_table: str, x: QTensor, axis: int, output_type: str) -> QTensor:
        types = {"int32": tflite.TensorType.INT32, "int64": tflite.TensorType.INT64}
        if output_type not in types:
            raise ValueError(f"output_type must be 'int32' or 'int64', got {output_type!r}")
        rank = len(x.shape)
        if not -rank <= axis < rank:
            raise ValueError(f"axis {axis} is outside a rank-{rank} tensor")
        axis_t = self.builder.add_tensor(self._name("axis"), (1,), np.int32, np.array([axis], np.int32))
        shape = tuple(d for k, d in enumerate(x.shape) if k != axis % rank)
        index = self.builder.add_tensor(self._name("index"), shape, output_type)
        self.builder.add_operator(builtin, [x.index, axis_t], [index], options_table,
                                  {"OutputType": types[output_type]})
        return QTensor(index, shape, np.dtype(output_type), 1.0, 0, 0.0)

    def arg_max(self, x: QTensor, axis: int = -1, output_type: str = "int32") -> QTensor:
        """ARG_MAX over `axis`: the index of the largest value (the first of equal ones), the axis removed."""
        return self._arg(OP.ARG_MAX, "ArgMaxOptions", x, axis, output_type)

    def arg_min(self, x: QTensor, axis: int = -1, output_type: str = "int32") -> QTensor:
        """ARG_MIN over `axis`: the index of the smallest value (the first of equal ones), the axis removed."""
        return self._arg(OP.ARG_MIN, "ArgMinOptions", x, axis, output_type)
