"""LEAKY_RELU int8 and int16: (x − input_zp) requantized by input_scale/output_scale where x >= input_zp, and by
input_scale·alpha/output_scale below, + output_zp (TFLite's reference; both ratios computed in float32; int16
has zero points 0, as TFLite requires)."""
from __future__ import annotations

from tvm import te

from ...quantization import table_multipliers
from ..fixed_point import multiply_by_quantized_multiplier, select
from ..spec import LeakyRelu, op_name
from ..te_kernel import TeKernel, activation, require, require_dtype, saturate, tflite_multiplier


def define(op: LeakyRelu) -> TeKernel:
    name = op_name(op)
    require_dtype(name, op.input, ("int8", "int16"))
    require_dtype(name, op.output, (op.input.dtype,))
    require(op.input.dtype == "int8" or (op.input.zero_point, op.output.zero_point) == (0, 0), name,
            "int16 needs zero points 0 (as TFLite requires)")
    identity, negative = (tflite_multiplier(name, real)
                          for real in table_multipliers("leaky_relu", op.input.scale, op.output.scale, op.alpha))
    x = activation(op.input, "input", (op.input.size,))

    def output(i):
        value = x[i].astype("int32") - op.input.zero_point
        return saturate(select(value >= 0, multiply_by_quantized_multiplier(value, *identity),
                               multiply_by_quantized_multiplier(value, *negative)), op.output)

    return TeKernel(inputs=(x,), output=te.compute(x.shape, output, name="output"))
