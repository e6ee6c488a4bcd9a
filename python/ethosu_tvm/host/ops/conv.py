"""CONV_2D and DEPTHWISE_CONV_2D: TFLite's per-channel reference kernels (int8, and int16 activations with int8
weights: "16x8").

acc = Σ (x − input_zp) · w over the taps inside the input (padding contributes nothing), + bias; output =
requantize(acc) per channel, + output_zp, clamped to the activation range. int8 accumulates in int32 and uses the
double-rounding multiply; 16x8 accumulates in int64 (int64 bias) and uses TFLite's 16-bit-multiplier rounding.
Per-channel multipliers come from input_scale · weight_scale / output_scale in double, as TFLite computes them.
"""
from __future__ import annotations

from tvm import te, tirx

from ..fixed_point import multiply_by_quantized_multiplier, multiply_by_quantized_multiplier_wide
from ..spec import Conv2D, Weighted, op_name
from ..te_kernel import (
    TeKernel,
    activation,
    attach,
    constant,
    require,
    saturate,
    split_reduction_init,
    window_output_size,
)
from . import weighted
from .weighted import accumulator_dtype

# requantization of the accumulator per activation dtype: double rounding (int8), 16-bit multiplier (16x8)
REQUANTIZE = {"int8": multiply_by_quantized_multiplier, "int16": multiply_by_quantized_multiplier_wide}


def check_shapes(op: Conv2D) -> None:
    """Refuse weights and an output shape that do not fit the input and the window (UnsupportedHostOp)."""
    batches, height, width, depth = op.input.shape
    channels, (kernel_h, kernel_w) = op.output.shape[3], op.weights.shape[1:3]
    expected = (1, kernel_h, kernel_w, channels) if op.depthwise else (channels, kernel_h, kernel_w, depth)
    require(op.weights.shape == expected, op_name(op), f"weights {op.weights.shape} do not fit; expected {expected}")
    require(not op.depthwise or channels % depth == 0, op_name(op), f"{channels} channels from {depth} inputs")
    top, left, bottom, right = op.padding
    out_h = window_output_size(height, kernel_h, op.stride[0], op.dilation[0], top, bottom)
    out_w = window_output_size(width, kernel_w, op.stride[1], op.dilation[1], left, right)
    require(op.output.shape == (batches, out_h, out_w, channels), op_name(op),
            f"output {op.output.shape} does not follow from input {op.input.shape} and the window")


def define(op: Conv2D) -> TeKernel:
    accumulator = accumulator_dtype(op)
    check_shapes(op)
    _, height, width, depth = op.input.shape
    channels, (kernel_h, kernel_w) = op.output.shape[3], op.weights.shape[1:3]
    (stride_h, stride_w), (dilation_h, dilation_w), (top, left) = op.stride, op.dilation, op.padding[:2]
    x = activation(op.input, "input")
    weights, bias = constant(op.weights, "weights"), weighted.bias(op, channels)
    multiplier, shift = weighted.channel_multipliers(op, channels)
    ky = te.reduce_axis((0, kernel_h), "ky")
    kx = te.reduce_axis((0, kernel_w), "kx")
    multiplier_per_input = channels // depth if op.depthwise else 1

    def tap(b, y, x_, channel, weight):
        iy = y * stride_h + ky * dilation_h - top
        ix = x_ * stride_w + kx * dilation_w - left
        inside = tirx.all(iy >= 0, iy < height, ix >= 0, ix < width)
        value = (x[b, iy, ix, channel].astype("int32") - op.input.zero_point) * weight.astype("int32")
        return tirx.if_then_else(inside, value.astype(accumulator), tirx.const(0, accumulator))

    if op.depthwise:
        acc = te.compute(op.output.shape, lambda b, y, x_, o: te.sum(
            tap(b, y, x_, o // multiplier_per_input, weights[0, ky, kx, o]), axis=[ky, kx]), name="acc")
    else:
        c = te.reduce_axis((0, depth), "c")
        acc = te.compute(op.output.shape, lambda b, y, x_, o: te.sum(
            tap(b, y, x_, c, weights[o, ky, kx, c]), axis=[ky, kx, c]), name="acc")
    return requantized_kernel(op, x, acc, (weights, bias, multiplier, shift))


def requantized_kernel(op: Weighted, x: te.Tensor, acc: te.Tensor, constants: tuple) -> TeKernel:
    """The kernel whose output is the NHWC accumulator `acc` plus bias, requantized per channel, + output zero point,
    clamped (CONV_2D's and TRANSPOSE_CONV's last step); `constants` are (weights, bias, multiplier, shift)."""
    _, bias, multiplier, shift = constants
    requantize = REQUANTIZE[op.input.dtype]
    y = te.compute(op.output.shape, lambda b, y, x_, o: saturate(requantize(
        acc[b, y, x_, o] + bias[o], multiplier[o], shift[o]), op.output, op.clamp), name="output")

    def schedule(sch):
        attach(sch, "acc", "output", 4)
        split_reduction_init(sch, "acc", 4)

    return TeKernel(inputs=(x,), output=y, constants=constants, schedule=schedule)
