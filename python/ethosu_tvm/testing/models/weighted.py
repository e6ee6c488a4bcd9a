"""Layers with random int8 weights and a bias: convolution, depthwise convolution, fully connected and transposed
convolution."""
from __future__ import annotations

import math

import numpy as np

from ..tflite_builder import Quantization
from .base import NetBase
from .quant import ACTIVATIONS, OP, PADDINGS, QTensor, choice, conv_out_size, pair


class WeightedOps(NetBase):
    """Multiply-accumulate layers, with output quantization sized from the weights' statistics."""

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

    def _bias(self, x: QTensor, w_scales: np.ndarray, accumulation: float, bias: bool, values=None) -> int:
        """Random (or the given) bias in accumulator units (int32, int64 for 16-bit activations), or -1 without
        one."""
        if not bias:
            return -1
        dtype = np.int64 if x.dtype == np.int16 else np.int32
        if values is None:
            values = np.round(self.rng.normal(0.0, 0.3 * accumulation, size=w_scales.size))
        elif np.shape(values) != (w_scales.size,):
            raise ValueError(f"bias_values needs {w_scales.size} values, got shape {np.shape(values)}")
        values = np.asarray(values).astype(dtype)
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

    def _space_to_batch(self, x: QTensor, kernel, dilation, padding: str) -> tuple[QTensor, list[list[int]]]:
        """SPACE_TO_BATCH_ND as TensorFlow writes it for a dilated convolution (the convolution itself then runs
        VALID without dilation between it and :meth:`_batch_to_space`): the input padded as the dilated
        convolution pads it, plus rows and columns up to a multiple of the dilation that the crops remove again.
        Returns the space-to-batch output and the crops of the BATCH_TO_SPACE_ND."""
        if x.shape[0] != 1:
            raise ValueError("space_to_batch needs a batch of 1")
        pads, crops, blocks = [], [], []
        for size, k, d in zip(x.shape[1:3], kernel, dilation):
            total = (k - 1) * d if padding == "SAME" else 0
            extra = -(size + total) % d
            pads.append([total // 2, total - total // 2 + extra])
            crops.append([0, extra])
            blocks.append((size + total + extra) // d)
        inner = self._same_quant(x, (dilation[0] * dilation[1], blocks[0], blocks[1], x.shape[3]))
        self.builder.add_operator(OP.SPACE_TO_BATCH_ND, [x.index, self._const(np.array(dilation, np.int32)),
                                                          self._const(np.array(pads, np.int32))], [inner.index])
        return inner, crops

    def _add_conv(self, builtin: int, table: str, options: dict, x: QTensor, constants: list[int], y: QTensor,
                  kernel, padding: str, space_to_batch: bool) -> None:
        """The convolution x → y; with `space_to_batch`, its dilation written as TensorFlow writes it:
        SPACE_TO_BATCH_ND → the convolution, VALID and undilated → BATCH_TO_SPACE_ND."""
        if not space_to_batch:
            self.builder.add_operator(builtin, [x.index, *constants], [y.index], table, options)
            return
        if (options["StrideH"], options["StrideW"]) != (1, 1):
            raise ValueError("space_to_batch needs stride 1")
        dilation = (options["DilationHFactor"], options["DilationWFactor"])
        inner_x, crops = self._space_to_batch(x, kernel, dilation, padding)
        _, bh, bw, _ = inner_x.shape
        inner_y = self._same_quant(y, (inner_x.shape[0], bh - kernel[0] + 1, bw - kernel[1] + 1, y.shape[3]))
        self.builder.add_operator(builtin, [inner_x.index, *constants], [inner_y.index], table,
                                  dict(options, Padding=PADDINGS["VALID"], DilationWFactor=1, DilationHFactor=1))
        self.builder.add_operator(OP.BATCH_TO_SPACE_ND, [inner_y.index, self._const(np.array(dilation, np.int32)),
                                                          self._const(np.array(crops, np.int32))], [y.index])

    def conv2d(self, x: QTensor, out_channels: int = 8, kernel=(3, 3), stride=(1, 1), dilation=(1, 1),
               padding: str = "SAME", activation: str = "NONE", per_channel: bool = True,
               w_scales=None, out_scale=None, out_zp=None, bias_values=None, space_to_batch: bool = False) -> QTensor:
        """CONV_2D with OHWI weights and a bias (LiteRT cannot run it without one); `bias_values`, one per output
        channel in accumulator units, replace the random bias. `space_to_batch` writes the dilation as TensorFlow
        does: SPACE_TO_BATCH_ND → CONV_2D → BATCH_TO_SPACE_ND."""
        (kh, kw), (sh, sw), (dh, dw) = pair(kernel, "kernel"), pair(stride, "stride"), pair(dilation, "dilation")
        act, pad = choice(activation, ACTIVATIONS, "activation"), choice(padding, PADDINGS, "padding")
        n, h, w, c = x.shape
        shape = (n, conv_out_size(h, kh, sh, dh, padding), conv_out_size(w, kw, sw, dw, padding), out_channels)
        weights, scales = self._weights((out_channels, kh, kw, c), out_channels, 0, per_channel, w_scales)
        y, acc = self._weighted_output(x, shape, kh * kw * c, scales, activation, out_scale, out_zp)
        bias_index = self._bias(x, scales, acc, True, bias_values)
        options = dict(Padding=pad, StrideW=sw, StrideH=sh, DilationWFactor=dw, DilationHFactor=dh,
                       FusedActivationFunction=act)
        self._add_conv(OP.CONV_2D, "Conv2DOptions", options, x, [weights, bias_index], y, (kh, kw), padding,
                       space_to_batch)
        return y

    def depthwise_conv2d(self, x: QTensor, kernel=(3, 3), stride=(1, 1), dilation=(1, 1), depth_multiplier: int = 1,
                         padding: str = "SAME", activation: str = "NONE", per_channel: bool = True,
                         w_scales=None, out_scale=None, out_zp=None, bias_values=None,
                         space_to_batch: bool = False) -> QTensor:
        """DEPTHWISE_CONV_2D with [1, H, W, C*multiplier] weights and a bias (LiteRT needs one); `space_to_batch`
        as for :meth:`conv2d`."""
        (kh, kw), (sh, sw), (dh, dw) = pair(kernel, "kernel"), pair(stride, "stride"), pair(dilation, "dilation")
        act, pad = choice(activation, ACTIVATIONS, "activation"), choice(padding, PADDINGS, "padding")
        if depth_multiplier < 1:
            raise ValueError(f"depth_multiplier must be positive, got {depth_multiplier}")
        n, h, w, c = x.shape
        channels = c * depth_multiplier
        shape = (n, conv_out_size(h, kh, sh, dh, padding), conv_out_size(w, kw, sw, dw, padding), channels)
        weights, scales = self._weights((1, kh, kw, channels), channels, 3, per_channel, w_scales)
        y, acc = self._weighted_output(x, shape, kh * kw, scales, activation, out_scale, out_zp)
        bias_index = self._bias(x, scales, acc, True, bias_values)
        options = dict(Padding=pad, StrideW=sw, StrideH=sh, DepthMultiplier=depth_multiplier, DilationWFactor=dw,
                       DilationHFactor=dh, FusedActivationFunction=act)
        self._add_conv(OP.DEPTHWISE_CONV_2D, "DepthwiseConv2DOptions", options, x, [weights, bias_index], y,
                       (kh, kw), padding, space_to_batch)
        return y

    def fully_connected(self, x: QTensor, units: int = 16, bias: bool = True, keep_num_dims: bool = False,
                        activation: str = "NONE", per_channel: bool = False, w_scales=None, out_scale=None,
                        out_zp=None, bias_values=None) -> QTensor:
        """FULLY_CONNECTED over the last dimension (inputs of higher rank are flattened unless keep_num_dims)."""
        act = choice(activation, ACTIVATIONS, "activation")
        depth = x.shape[-1]
        if keep_num_dims:
            shape = x.shape[:-1] + (units,)
        else:
            shape = (int(np.prod(x.shape)) // depth, units)
        weights, scales = self._weights((units, depth), units, 0, per_channel, w_scales)
        y, acc = self._weighted_output(x, shape, depth, scales, activation, out_scale, out_zp)
        bias_index = self._bias(x, scales, acc, bias, bias_values)
        self.builder.add_operator(OP.FULLY_CONNECTED, [x.index, weights, bias_index], [y.index],
                                  "FullyConnectedOptions", dict(FusedActivationFunction=act, KeepNumDims=keep_num_dims))
        return y

    def transpose_conv(self, x: QTensor, out_channels: int = 8, kernel=(3, 3), stride=(2, 2),
                       padding: str = "SAME", bias: bool = True, per_channel: bool = True, w_scales=None,
                       out_scale=None, out_zp=None, shape_input: bool = False) -> QTensor:
        """TRANSPOSE_CONV with OHWI weights; the output size is input*stride (SAME) or (input-1)*stride+kernel.
        `shape_input` makes the output shape a model input (after the data), as TFLite Micro's SEANet models have
        it."""
        (kh, kw), (sh, sw) = pair(kernel, "kernel"), pair(stride, "stride")
        pad = choice(padding, PADDINGS, "padding")
        n, h, w, c = x.shape
        if padding == "SAME":
            shape = (n, h * sh, w * sw, out_channels)
        else:
            shape = (n, (h - 1) * sh + kh, (w - 1) * sw + kw, out_channels)
        out_shape = self.plain_input((4,), np.int32) if shape_input else self._const(np.array(shape, dtype=np.int32))
        weights, scales = self._weights((out_channels, kh, kw, c), out_channels, 0, per_channel, w_scales)
        taps = max(1, -(-kh // sh) * -(-kw // sw)) * c
        y, acc = self._weighted_output(x, shape, taps, scales, "NONE", out_scale, out_zp)
        self.builder.add_operator(OP.TRANSPOSE_CONV, [out_shape, weights, x.index, self._bias(x, scales, acc, bias)],
                                  [y.index], "TransposeConvOptions", dict(Padding=pad, StrideW=sw, StrideH=sh),
                                  version=3)
        return y
