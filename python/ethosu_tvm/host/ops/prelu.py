"""PRELU int8: TFLite's reference. Where x ≥ input_zp, (x − input_zp) requantized by input_scale/output_scale;
below, (x − input_zp)·(alpha − alpha_zp) requantized by input_scale·alpha_scale/output_scale; + output_zp. Both
ratios in float32, as TFLite computes them from the tensors' float scales. Alpha broadcasts against the input
(right-aligned, numpy rules) and stays a constant of its own shape."""
from __future__ import annotations

from tvm import te

from ...quantization import prelu_multipliers
from ..fixed_point import multiply_by_quantized_multiplier, select
from ..spec import Prelu, op_name
from ..te_kernel import TeKernel, activation, constant, require, require_dtype, saturate, tflite_multiplier


def define(op: Prelu) -> TeKernel:
    name = op_name(op)
    require_dtype(name, op.input, ("int8",))
    require_dtype(name, op.output, ("int8",))
    shape, alpha_shape = op.input.shape, op.alpha.shape
    require(op.output.shape == shape and len(alpha_shape) <= len(shape)
            and all(a in (1, d) for a, d in zip(alpha_shape[::-1], shape[::-1])), name,
            f"alpha {alpha_shape} does not broadcast to the input {shape}")
    identity, negative = (tflite_multiplier(name, real)
                          for real in prelu_multipliers(op.input.scale, op.alpha_scale, op.output.scale))
    x = activation(op.input, "input")
    alpha = constant(op.alpha, "alpha")
    offset = len(shape) - len(alpha_shape)

    def output(*index):
        value = x[index].astype("int32") - op.input.zero_point
        at = [index[offset + k] if extent > 1 else 0 for k, extent in enumerate(alpha_shape)]
        slope = alpha[tuple(at)].astype("int32") - op.alpha_zero_point
        return saturate(select(value >= 0, multiply_by_quantized_multiplier(value, *identity),
                               multiply_by_quantized_multiplier(value * slope, *negative)), op.output)

    return TeKernel(inputs=(x,), output=te.compute(shape, output, name="output"), constants=(alpha,))
