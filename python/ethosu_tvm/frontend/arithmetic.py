"""Converters of the operators that compute on quantized values, where TVM's converter has no quantized form or
computes otherwise than TFLite: each is written as QDQ Relax (dequantize → the float op → quantize) in the form
the patterns of `qdq.patterns` read back as that TFLite operator, or as integer ops where TFLite's kernel is one.
"""
from __future__ import annotations

import numpy as np
import tflite
from tvm import relax
from tvm.relax.frontend.tflite.tflite_frontend import get_tensor_name

from ..qdq.values import const_value, dtype_of, is_const
from .converter import ConverterCore
from .dilated_conv import DilatedConv
from .slicing import strided_slice
from .tflite_file import TFLITE_DTYPES, builtin_options


class ArithmeticConverters(ConverterCore):
    def convert_conv_2d(self, op):
        return self._convolution(op, "conv2d")

    def convert_depthwise_conv_2d(self, op):
        return self._convolution(op, "depthwise")

    def _convolution(self, op, conv_type: str):
        dilated = self.rewrites.dilated.get(self.index_of(op))
        if dilated is None:
            return _per_tensor_depthwise(_int32_bias(super().convert_conv(op, conv_type)))
        # The hidden SPACE_TO_BATCH_ND's output is its input; the VALID convolution TVM builds on it gets the chain's
        # dilation and padding.
        inner = self.get_input_tensors(op)[0].tensor_idx
        self.exp_tab.set_expr(get_tensor_name(self.subgraph, inner), self.get_expr(dilated.source))
        return _per_tensor_depthwise(_int32_bias(_dilate(super().convert_conv(op, conv_type), dilated)))

    def convert_transpose_conv(self, op):
        # TVM's converter reads an absent bias (TFLite's input index -1) as a tensor (it handles three inputs), and
        # the output shape as a constant: one given at run time (a model input, as in TFLite Micro's SEANet tests) is
        # the output tensor's static shape, the only one a compiled program has. A 16x8 one's int64 bias is narrowed
        # as CONV_2D's.
        cls, overrides = type(self), {}
        if op.InputsLength() == 4 and op.Inputs(3) < 0:
            overrides["get_input_tensors"] = lambda op_: cls.get_input_tensors(self, op_)[:3]
        shape = self.get_input_tensors(op)[0].tensor_idx
        if shape not in self.rewrites.folded and self.has_expr(shape):
            static = np.array(self.get_tensor_shape(self.get_output_tensors(op)[0]), dtype=np.int32)
            overrides["get_tensor_value"] = lambda tensor, is_sparse=False: (
                static if tensor.tensor_idx == shape else cls.get_tensor_value(self, tensor, is_sparse))
        vars(self).update(overrides)
        try:
            return _int32_bias(super().convert_transpose_conv(op))
        finally:
            for name in overrides:
                delattr(self, name)

    def convert_fully_connected(self, op):
        # TVM's converter feeds an N-D input straight into matmul; TFLite flattens it to [-1, n_inputs] (unless
        # keep_num_dims, where the output keeps the input's rank).
        data, weights = self.get_input_tensors(op)[:2]
        (output,) = self.get_output_tensors(op)
        n_inputs = int(self.get_tensor_shape(weights)[1])
        if len(self.get_tensor_shape(data)) != 2 and len(self.get_tensor_shape(output)) == 2:
            flat = self.bb.emit(relax.op.reshape(self.get_tensor_expr(data), (-1, n_inputs)))
            self.input_override = (data.tensor_idx, flat)
        try:
            return _int32_bias(super().convert_fully_connected(op))
        finally:
            self.input_override = None

    def convert_prelu(self, op):
        # TVM's converter applies prelu to the raw integers; TFLite's PRELU is x where x ≥ 0, else alpha · x, on the
        # real values.
        data, alpha = self.get_input_tensors(op)
        (output,) = self.get_output_tensors(op)
        if not data.qnn_params:
            return super().convert_prelu(op)
        x = self.dequantize(self.get_tensor_expr(data), data)
        negative = relax.op.multiply(x, self.dequantize(self.get_tensor_expr(alpha), alpha))
        out = relax.op.where(relax.op.greater_equal(x, relax.const(0.0, "float32")), x, negative)
        return self.quantize(out, output)

    def convert_elu(self, op):
        # TVM's converter computes on the raw integers; TFLite's ELU is exp(x) − 1 below zero, x above, on the real
        # values.
        (data,) = self.get_input_tensors(op)
        (output,) = self.get_output_tensors(op)
        if not data.qnn_params:
            return super().convert_elu(op)
        x = self.dequantize(self.get_tensor_expr(data), data)
        below = relax.op.subtract(relax.op.exp(x), relax.const(1.0, "float32"))
        out = relax.op.where(relax.op.less(x, relax.const(0.0, "float32")), below, x)
        return self.quantize(out, output)

    def convert_gelu(self, op):
        # TVM's converter refuses quantized GELU: dequantize, GELU (its tanh form when `approximate`), quantize.
        (data,) = self.get_input_tensors(op)
        (output,) = self.get_output_tensors(op)
        if not data.qnn_params:
            return super().convert_gelu(op)
        approximate = op.BuiltinOptions() is not None and builtin_options(op, tflite.GeluOptions).Approximate()
        function = relax.op.nn.gelu_tanh if approximate else relax.op.nn.gelu
        return self.quantize(function(self.dequantize(self.get_tensor_expr(data), data)), output)

    def convert_batch_matmul(self, op):
        # TVM's converter has no quantized form: dequantize both operands, swap the last two axes of the ones
        # adj_x/adj_y name, matmul (batch axes broadcast), quantize. Operands computed at run time have their
        # integers copied first where the NPU needs them otherwise: the left one transposed (it reads the left-hand
        # rows as they are; `_matrices_transposed`), and each repeated to the output's batch axis (it takes equal
        # batch axes; `_batches_repeated`; with more batch axes the copies would be a concatenation along the NPU's
        # batch axis, so those broadcast on the host).
        lhs, rhs = self.get_input_tensors(op)
        (output,) = self.get_output_tensors(op)
        if not lhs.qnn_params:
            return super().convert_batch_matmul(op)
        options = builtin_options(op, tflite.BatchMatMulOptions)
        batch = np.broadcast_shapes(self.shape_of(lhs)[:-2], self.shape_of(rhs)[:-2])
        operands = []
        for tensor, adjoint in ((lhs, options.AdjX()), (rhs, options.AdjY())):
            rank = len(self.shape_of(tensor))
            swap = [*range(rank - 2), rank - 1, rank - 2]
            value, matrix = self.get_tensor_expr(tensor), list(self.shape_of(tensor)[-2:])
            if adjoint and tensor is lhs and self.has_expr(tensor.tensor_idx):
                value, adjoint, matrix = self._matrices_transposed(tensor), False, matrix[::-1]
            if self.has_expr(tensor.tensor_idx) and self.shape_of(tensor)[:-2] != batch and len(batch) == 1:
                value = self._batches_repeated(value, tensor, batch[0], matrix)
                rank = len(batch) + 2
                swap = [*range(rank - 2), rank - 1, rank - 2]
            value = self.dequantize(value, tensor)
            operands.append(relax.op.permute_dims(value, swap) if adjoint else value)
        return self.quantize(relax.op.matmul(*operands), output)

    def _matrices_transposed(self, tensor) -> relax.Var:
        """The integers of `tensor` (rank 2 or more) with its last two axes swapped, as copies the NPU makes: one
        transpose of two axes per matrix (sliced off the batch axes), concatenated."""
        *batch, rows, columns = self.shape_of(tensor)
        count = int(np.prod(batch, dtype=np.int64))
        x = self.bound(relax.op.reshape(self.get_tensor_expr(tensor), [count, rows, columns]), tensor)
        parts = [relax.op.permute_dims(strided_slice(x, [range(i, i + 1), range(rows), range(columns)],
                                                     (count, rows, columns)), [0, 2, 1]) for i in range(count)]
        joined = self.bound(parts[0], tensor) if count == 1 else self.concatenated(parts, 0, tensor)
        return self.bound(relax.op.reshape(joined, [*batch, columns, rows]), tensor)

    def _batches_repeated(self, value, tensor, count: int, matrix: list[int]) -> relax.Var:
        """`value` (the integers of `tensor`, one matrix of `matrix` rows and columns, or its transposed copy)
        repeated `count` times along the batch axis: copies concatenated, each a tensor of its own (a host
        concatenation takes distinct inputs)."""
        copies = [self.bound(relax.op.reshape(value, [1, *matrix]), tensor) for _ in range(count)]
        joined = relax.op.concat([self.dequantize(copy, tensor) for copy in copies], 0)
        return self.bound(self.quantize(joined, tensor), tensor)

    # ARG_MAX and ARG_MIN: the order of the raw integers is the order of the real values, so TVM's argmax and argmin
    # of them are exact; TVM's converter leaves them int64 where TFLite's output is int32 (or int64).
    def convert_arg_max(self, op):
        return self._arg_min_max(op, relax.op.argmax)

    def convert_arg_min(self, op):
        return self._arg_min_max(op, relax.op.argmin)

    def _arg_min_max(self, op, relax_op):
        data, axis_tensor = self.get_input_tensors(op)
        (output,) = self.get_output_tensors(op)
        axis = int(self.get_tensor_value(axis_tensor).reshape(-1)[0]) % len(self.shape_of(data))
        index = relax_op(self.get_tensor_expr(data), axis=axis, keepdims=False)
        return relax.op.astype(index, str(TFLITE_DTYPES[output.tensor.Type()]))

    def convert_add_n(self, op):
        # Stacked and summed over the new axis rather than added in a chain, which the NPU would take as ADDs: TFLite
        # Micro's int8 ADD_N (LiteRT has none) is not their arithmetic.
        inputs = self.get_input_tensors(op)
        (output,) = self.get_output_tensors(op)
        if not inputs[0].qnn_params:
            return super().convert_add_n(op)
        stacked = relax.op.concat([relax.op.expand_dims(self.dequantize(self.get_tensor_expr(t), t), 0)
                                   for t in inputs], 0)
        return self.quantize(relax.op.sum(stacked, axis=[0]), output)

    def convert_cast(self, op):
        # TFLite's CAST converts the stored integers as C does, whatever their quantization.
        (data,) = self.get_input_tensors(op)
        (output,) = self.get_output_tensors(op)
        dtypes = [str(TFLITE_DTYPES[t.tensor.Type()]) for t in (data, output)]
        if not all(d in ("int8", "int16", "int32") for d in dtypes):
            raise ValueError(f"CAST from {dtypes[0]} to {dtypes[1]}: only int8, int16 and int32 are supported")
        return relax.op.astype(self.get_tensor_expr(data), dtypes[1])

    def convert_quantize(self, op):
        # Relax's quantize has no int32 output. TFLite Micro requantizes int8 and int16 to int32: that is written
        # round(input's real value / output scale) as int32 plus the output zero point, the form the host fuses into
        # TFLite's integer requantization (host.quantize_int32), so nothing computes it in float.
        (data,) = self.get_input_tensors(op)
        (output,) = self.get_output_tensors(op)
        if output.tensor.Type() != tflite.TensorType.INT32 or not data.qnn_params:
            return super().convert_quantize(op)
        real = self.dequantize(self.get_tensor_expr(data), data)
        rounded = relax.op.round(relax.op.divide(real, output.qnn_params["scale"]))
        return relax.op.add(relax.op.astype(rounded, "int32"), output.qnn_params["zero_point"])

    def convert_neg(self, op):
        # LiteRT's int8 NEG negates the raw integers (wrapping −128 to itself) whatever the quantization: that is −x
        # on the real values only with equal scales and opposite zero points; refuse the rest.
        (data,) = self.get_input_tensors(op)
        (output,) = self.get_output_tensors(op)
        if data.qnn_params:
            (in_scale, in_zp), (out_scale, out_zp) = (
                (t.tensor.Quantization().Scale(0), t.tensor.Quantization().ZeroPoint(0)) for t in (data, output))
            if in_scale != out_scale or in_zp + out_zp:
                raise ValueError(f"int8 NEG needs equal scales and opposite zero points, got scale {in_scale:g} "
                                 f"zero point {in_zp} → scale {out_scale:g} zero point {out_zp}")
        return self._convert_unary_elemwise(op, relax.op.negative)

    def convert_softmax(self, op):
        # TVM's converter drops beta; TFLite computes softmax(beta · x) on the real input.
        beta = builtin_options(op, tflite.SoftmaxOptions).Beta()
        if beta == 1.0:
            return super().convert_softmax(op)
        (data,) = self.get_input_tensors(op)
        (output,) = self.get_output_tensors(op)
        x = self.get_tensor_expr(data)
        if data.qnn_params:
            x = self.dequantize(x, data)
        out = relax.op.nn.softmax(relax.op.multiply(x, relax.const(np.float32(beta), "float32")), axis=-1)
        return self.quantize(out, output) if output.qnn_params else out


def _rewrite_calls(expr, rewrite):
    """The converter's (not yet bound) expression tree with `rewrite(call, args)` building every call anew."""
    if not isinstance(expr, relax.Call):
        return expr
    return rewrite(expr, [_rewrite_calls(arg, rewrite) for arg in expr.args])


def _int32_bias(expr):
    """The converted 16x8 op with its int64 bias narrowed to int32 (TVM's dequantize refuses int64 data).

    Exact while every value fits int32 (the host kernel widens it back to its int64 accumulator); a bias beyond int32
    is refused (the caller names the operator)."""
    def rewrite(call, args):
        if call.op.name == "relax.dequantize" and is_const(args[0]) and dtype_of(args[0]) == "int64":
            values = const_value(args[0])
            info = np.iinfo(np.int32)
            if values.size and not info.min <= values.min() <= values.max() <= info.max:
                raise ValueError(f"int64 bias values up to {int(np.abs(values).max())} exceed the int32 range")
            args[0] = relax.const(values.astype(np.int32), "int32")
        return relax.Call(call.op, args, call.attrs, call.ty_args, call.span)

    return _rewrite_calls(expr, rewrite)


def _per_tensor_depthwise(expr):
    """The converted convolution with a per-tensor depthwise kernel written as a per-channel one is: the TFLite
    [1, H, W, C] weights dequantized, then reshaped to HWOI. TVM reshapes the raw constant instead, which leaves a
    grouped convolution over a dequantized HWOI constant that no depthwise pattern matches."""
    def rewrite(call, args):
        weights = args[1] if call.op.name == "relax.nn.conv2d" and int(call.attrs.groups) > 1 else None
        if (weights is None or not isinstance(weights, relax.Call) or weights.op.name != "relax.dequantize"
                or not is_const(weights.args[0])):
            return relax.Call(call.op, args, call.attrs, call.ty_args, call.span)
        raw = const_value(weights.args[0])
        height, width, channels, _ = raw.shape
        tflite_layout = relax.const(raw.reshape(1, height, width, channels), dtype_of(weights.args[0]))
        dequantized = relax.Call(weights.op, [tflite_layout, *weights.args[1:]], weights.attrs)
        args[1] = relax.op.reshape(dequantized, raw.shape)
        return relax.Call(call.op, args, call.attrs, call.ty_args, call.span)

    return _rewrite_calls(expr, rewrite)


def _dilate(expr, dilated: DilatedConv):
    """The converted convolution with the dilation and padding of the chain it stands for."""
    def rewrite(call, args):
        if call.op.name != "relax.nn.conv2d":
            return relax.Call(call.op, args, call.attrs, call.ty_args, call.span)
        attrs = call.attrs
        return relax.op.nn.conv2d(args[0], args[1], strides=attrs.strides, padding=dilated.padding,
                                  dilation=dilated.dilation, groups=int(attrs.groups),
                                  data_layout=str(attrs.data_layout), kernel_layout=str(attrs.kernel_layout),
                                  out_layout=str(attrs.out_layout), out_dtype=attrs.out_dtype)

    return _rewrite_calls(expr, rewrite)
