"""LOGISTIC and TANH int16: TFLite's reference fixed-point kernels, interpolating a 256-entry sigmoid table.

The input is rescaled to units of 1/12288 (multiplier and shift chosen at compile time as TFLite chooses them);
|input| indexes the table of sigmoid(h/24) in Q0.16 (for tanh(x) = 2·sigmoid(2x) − 1, at twice the resolution)
with linear interpolation on the remaining bits; negative inputs use the function's symmetry; output is Q0.15.
The table entries are the samples corrected by half the interpolation error at each segment's midpoint, and the
last entry is the 16-bit maximum: established by probing LiteRT on every int16 input.
"""
from __future__ import annotations

from tvm import te, tirx

from ...quantization import SIGMOID_SEGMENTS, sigmoid_input_rescale, sigmoid_table
from ..fixed_point import select
from ..spec import Logistic, Tanh, UnsupportedHostOp, op_name
from ..te_kernel import TeKernel, activation, attach, constant


def _logistic(value, interpolated):
    """Q0.25 sigmoid of |value| → Q0.15 sigmoid(value), using sigmoid(-x) = 1 − sigmoid(x)."""
    return select(value >= 0, interpolated + (1 << 9), (1 << 25) - interpolated + (1 << 9) - 1) >> 10


def _tanh(value, interpolated):
    """Q0.24 sigmoid(2|value|) → Q0.15 tanh(value) = 2·sigmoid(2·value) − 1."""
    return select(value >= 0, interpolated - (1 << 23) + (1 << 7), (1 << 23) - interpolated + (1 << 7) - 1) >> 8


# per function: bits of |input| below the table index, the saturated interpolation, and the output rounding
_VARIANTS = {"SIGMOID": (9, 0x7FFF << 10, _logistic), "TANH": (8, 0xFFFF << 8, _tanh)}
_FUNCTIONS = {Logistic: "SIGMOID", Tanh: "TANH"}


def sigmoid_int16(function: str, value, table: te.Tensor):
    """The int16 result of SIGMOID (LOGISTIC) or TANH of an int32 input in units of 1/(3·4096), interpolating
    `table` (the NPU's built-in functions compute the same)."""
    bits, saturated, finish = _VARIANTS[function]
    magnitude = select(value >= 0, value, -value)
    segment = magnitude >> bits
    index = tirx.min(segment, SIGMOID_SEGMENTS - 1)  # a valid index even where the result saturates
    low, high = table[index].astype("int32"), table[index + 1].astype("int32")
    fraction = magnitude & ((1 << bits) - 1)
    interpolated = select(segment >= SIGMOID_SEGMENTS, saturated, (low << bits) + fraction * (high - low))
    return finish(value, interpolated).astype("int16")


def define(op: Logistic | Tanh) -> TeKernel:
    name = op_name(op)
    if (op.input.zero_point, op.output.zero_point, op.output.scale) != (0, 0, 1.0 / 32768.0):
        raise UnsupportedHostOp(f"{name}: int16 needs zero points 0 and output scale 1/32768 (as TFLite requires)")
    multiplier, shift = sigmoid_input_rescale(op.input.scale)
    table = constant(sigmoid_table(), "sigmoid_table")
    x = activation(op.input, "input", (op.input.size,))
    # x·multiplier wraps around in 32 bits as in TFLite, but without C's signed-overflow undefined behaviour
    rescaled = te.compute(x.shape, lambda i: ((x[i].astype("uint32") * multiplier + ((1 << shift) >> 1))
                                              .astype("int32") >> shift), name="rescaled")
    y = te.compute(x.shape, lambda i: sigmoid_int16(_FUNCTIONS[type(op)], rescaled[i], table), name="output")
    return TeKernel(inputs=(x,), output=y, constants=(table,),
                    schedule=lambda sch: attach(sch, "rescaled", "output", 1))
