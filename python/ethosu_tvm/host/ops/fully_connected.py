"""FULLY_CONNECTED (int8, 16x8, int8 → int16): acc = Σ (x − input_zp) · w + bias, requantized, + output_zp, clamped.

LiteRT's BUILTIN_REF kernel requantizes with TFLite's single-rounding multiply, (acc · m + 2^(30−s)) >> (31 − s)
in 64 bits, for int8 and 16x8 alike, unlike conv (int8: double rounding; 16x8: a 16-bit multiplier): they differ
by one LSB now and then, and the tests pin each down. A per-tensor multiplier is input_scale · weight_scale in
float32, then / output_scale in double (TFLite's GetQuantizedConvolutionMultipler); per-channel ones are
computed in double like conv's.

An int8 → int16 FULLY_CONNECTED is one of an integer LSTM's gates (TFLite Micro refuses it alone): TFLite Micro's
LSTM requantizes it with the double-rounding multiply, as conv does.
"""
from __future__ import annotations

from tvm import te

from ...quantization import widening_fully_connected
from ..fixed_point import multiply_by_quantized_multiplier, multiply_by_quantized_multiplier_single_round
from ..spec import FullyConnected, op_name
from ..te_kernel import TeKernel, activation, attach, constant, require, saturate, split_reduction_init
from . import weighted
from .weighted import accumulator_dtype


def define(op: FullyConnected) -> TeKernel:
    accumulator = accumulator_dtype(op, widening=True)
    units, depth = op.weights.shape
    rows = op.input.size // depth
    require(rows * depth == op.input.size and op.output.size == rows * units, op_name(op),
            f"weights {op.weights.shape} do not take input {op.input.shape} to output {op.output.shape}")
    x = activation(op.input, "input", (rows, depth))
    weights, bias = constant(op.weights, "weights"), weighted.bias(op, units)
    multiplier, shift = weighted.channel_multipliers(op, units, float32_product=True)
    d = te.reduce_axis((0, depth), "d")
    acc = te.compute((rows, units), lambda r, u: te.sum(
        ((x[r, d].astype("int32") - op.input.zero_point) * weights[u, d].astype("int32")).astype(accumulator),
        axis=d), name="acc")
    requantize = multiply_by_quantized_multiplier if widening_fully_connected(op.input.dtype, op.output.dtype) \
        else multiply_by_quantized_multiplier_single_round
    y = te.compute((rows, units), lambda r, u: saturate(requantize(
        acc[r, u] + bias[u], multiplier[u], shift[u]), op.output, op.clamp), name="output")

    def schedule(sch):
        attach(sch, "acc", "output", 2)
        split_reduction_init(sch, "acc", 2)

    return TeKernel(inputs=(x,), output=y, constants=(weights, bias, multiplier, shift), schedule=schedule)
