"""LEAKY_RELU int8: (x − input_zp) requantized by input_scale/output_scale where x >= input_zp, and by
input_scale·alpha/output_scale below, + output_zp (TFLite's reference; both ratios computed in float32)."""
from __future__ import annotations

import numpy as np
from tvm import te

from ..fixed_point import multiply_by_quantized_multiplier, select
from ..spec import LeakyRelu, op_name
from ..te_kernel import TeKernel, activation, require_dtype, saturate, tflite_multiplier


def define(op: LeakyRelu) -> TeKernel:
    require_dtype(op_name(op), op.input, ("int8",))
    require_dtype(op_name(op), op.output, ("int8",))
    in_scale, out_scale = np.float32(op.input.scale), np.float32(op.output.scale)
    identity = tflite_multiplier(op_name(op), float(in_scale / out_scale))
    negative = tflite_multiplier(op_name(op), float(in_scale * np.float32(op.alpha) / out_scale))
    x = activation(op.input, "input", (op.input.size,))

    def output(i):
        value = x[i].astype("int32") - op.input.zero_point
        return saturate(select(value >= 0, multiply_by_quantized_multiplier(value, *identity),
                               multiply_by_quantized_multiplier(value, *negative)), op.output)

    return TeKernel(inputs=(x,), output=te.compute(x.shape, output, name="output"))
