"""TRANSPOSE_CONV: TFLite's per-channel reference kernel (int8, and int16 activations with int8 weights).

TFLite scatters: input pixel (y, x) adds (x − input_zp) · w[o, ky, kx, c] to output pixel (y·stride − top + ky,
x·stride − left + kx), skipping outputs outside the tensor. Written here as the equivalent gather, which TE can
express: output (oy, ox) sums the taps whose oy + top − ky is a multiple of the stride that lands inside the input.
The accumulator is then requantized per channel exactly as CONV_2D's (same multipliers, same rounding).
"""
from __future__ import annotations

from tvm import te, tirx

from ..spec import TransposeConv2D, op_name
from ..te_kernel import TeKernel, activation, constant, require
from . import weighted
from .conv import requantized_kernel
from .weighted import accumulator_dtype


def define(op: TransposeConv2D) -> TeKernel:
    accumulator = accumulator_dtype(op)
    batches, height, width, depth = op.input.shape
    channels, kernel_h, kernel_w = op.output.shape[3], op.weights.shape[1], op.weights.shape[2]
    require(op.weights.shape == (channels, kernel_h, kernel_w, depth), op_name(op),
            f"weights {op.weights.shape} do not fit {depth} input and {channels} output channels")
    require(op.output.shape[0] == batches, op_name(op), f"output {op.output.shape} for input {op.input.shape}")
    (stride_h, stride_w), (top, left) = op.stride, op.padding
    x = activation(op.input, "input")
    weights, bias = constant(op.weights, "weights"), weighted.bias(op, channels)
    multiplier, shift = weighted.channel_multipliers(op, channels)
    ky, kx = te.reduce_axis((0, kernel_h), "ky"), te.reduce_axis((0, kernel_w), "kx")
    c = te.reduce_axis((0, depth), "c")

    def tap(b, oy, ox, o):
        ty, tx = oy + top - ky, ox + left - kx
        iy, ix = tirx.floordiv(ty, stride_h), tirx.floordiv(tx, stride_w)
        inside = tirx.all(ty >= 0, tx >= 0, tirx.floormod(ty, stride_h) == 0, tirx.floormod(tx, stride_w) == 0,
                          iy < height, ix < width)
        value = (x[b, iy, ix, c].astype("int32") - op.input.zero_point) * weights[o, ky, kx, c].astype("int32")
        return tirx.if_then_else(inside, value.astype(accumulator), tirx.const(0, accumulator))

    acc = te.compute(op.output.shape, lambda b, oy, ox, o: te.sum(tap(b, oy, ox, o), axis=[ky, kx, c]), name="acc")
    return requantized_kernel(op, x, acc, (weights, bias, multiplier, shift))
