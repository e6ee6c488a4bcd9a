"""LOGISTIC and TANH int16: TFLite's reference fixed-point kernels, interpolating a 256-entry sigmoid table.

The input is rescaled to units of 1/12288 (multiplier and shift chosen at compile time as TFLite chooses them);
|input| indexes the table of sigmoid(h/24) in Q0.16 (for tanh(x) = 2·sigmoid(2x) − 1, at twice the resolution)
with linear interpolation on the remaining bits; negative inputs use the function's symmetry; output is Q0.15.
The table entries are the samples corrected by half the interpolation error at each segment's midpoint, and the
last entry is the 16-bit maximum: established by probing LiteRT on every int16 input.
"""
from __future__ import annotations

import math

import numpy as np
from tvm import te, tirx

from ...quantization import round_half_away
from ..fixed_point import select
from ..spec import Logistic, Tanh, UnsupportedHostOp, op_name
from ..te_kernel import TeKernel, activation, attach, constant

_SEGMENTS = 255  # |input| beyond 255 table segments saturates


def sigmoid_table() -> np.ndarray:
    """sigmoid(h/24)·2^16 for h = 0..255, each biased by half the linear-interpolation error of its segment."""

    def sample(h: float) -> float:
        return 65536.0 / (1.0 + math.exp(-h / 24.0))

    table = [round_half_away(sample(h) - ((sample(h) + sample(h + 1)) / 2 - sample(h + 0.5)) / 2)
             for h in range(_SEGMENTS)]
    return np.array(table + [65535], dtype=np.uint16)


def input_rescale(scale: float) -> tuple[int, int]:
    """(multiplier, right shift) taking input integers to units of 1/(3·4096), the multiplier above 2^14."""
    multiplier, shift = scale * 4096.0 * 3.0, 0
    while multiplier <= 32767.0 / 2.0 and shift <= 30:
        shift += 1
        multiplier *= 2.0
    return int(multiplier), shift


def _logistic(value, interpolated):
    """Q0.25 sigmoid of |value| → Q0.15 sigmoid(value), using sigmoid(-x) = 1 − sigmoid(x)."""
    return select(value >= 0, interpolated + (1 << 9), (1 << 25) - interpolated + (1 << 9) - 1) >> 10


def _tanh(value, interpolated):
    """Q0.24 sigmoid(2|value|) → Q0.15 tanh(value) = 2·sigmoid(2·value) − 1."""
    return select(value >= 0, interpolated - (1 << 23) + (1 << 7), (1 << 23) - interpolated + (1 << 7) - 1) >> 8


# per op: bits of |input| below the table index, the saturated interpolation, and the output rounding
_VARIANTS = {Logistic: (9, 0x7FFF << 10, _logistic), Tanh: (8, 0xFFFF << 8, _tanh)}


def define(op: Logistic | Tanh) -> TeKernel:
    name = op_name(op)
    if (op.input.zero_point, op.output.zero_point, op.output.scale) != (0, 0, 1.0 / 32768.0):
        raise UnsupportedHostOp(f"{name}: int16 needs zero points 0 and output scale 1/32768 (as TFLite requires)")
    bits, saturated, finish = _VARIANTS[type(op)]
    multiplier, shift = input_rescale(op.input.scale)
    table = constant(sigmoid_table(), "sigmoid_table")
    x = activation(op.input, "input", (op.input.size,))
    # x·multiplier wraps around in 32 bits as in TFLite, but without C's signed-overflow undefined behaviour
    rescaled = te.compute(x.shape, lambda i: ((x[i].astype("uint32") * multiplier + ((1 << shift) >> 1))
                                              .astype("int32") >> shift), name="rescaled")

    def output(i):
        value = rescaled[i]
        magnitude = select(value >= 0, value, -value)
        segment = magnitude >> bits
        index = tirx.min(segment, _SEGMENTS - 1)  # a valid index even where the result saturates
        low, high = table[index].astype("int32"), table[index + 1].astype("int32")
        fraction = magnitude & ((1 << bits) - 1)
        interpolated = select(segment >= _SEGMENTS, saturated, (low << bits) + fraction * (high - low))
        return finish(value, interpolated).astype("int16")

    y = te.compute(x.shape, output, name="output")
    return TeKernel(inputs=(x,), output=y, constants=(table,),
                    schedule=lambda sch: attach(sch, "rescaled", "output", 1))
