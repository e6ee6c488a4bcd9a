"""EQUAL, NOT_EQUAL, GREATER, GREATER_EQUAL, LESS, LESS_EQUAL (int8) as TFLite's reference kernel, broadcasting.

Each operand is offset by its zero point, shifted left by 8 bits and multiplied by its own scale as a quantized
multiplier (TFLite's ComparisonWithScaling); the two results are compared. Scales of 1 or more, where TFLite's
rescaling would shift by a negative amount, are refused.
"""
from __future__ import annotations

import numpy as np
from tvm import te

from ...quantization import quantize_multiplier
from ..fixed_point import multiply_by_quantized_multiplier
from ..spec import Comparison, QuantTensor
from ..te_kernel import Constant, TeKernel, require, require_dtype
from .binary import broadcast_reader, operand

_LEFT_SHIFT = 8
_COMPARE = {"equal": lambda a, b: a == b, "not_equal": lambda a, b: a != b, "greater": lambda a, b: a > b,
            "greater_equal": lambda a, b: a >= b, "less": lambda a, b: a < b, "less_equal": lambda a, b: a <= b}


def _scaled(tensor: QuantTensor, value):
    multiplier, shift = quantize_multiplier(tensor.scale)
    return multiply_by_quantized_multiplier((value.astype("int32") - tensor.zero_point) * (1 << _LEFT_SHIFT),
                                            multiplier, shift)


def define(op: Comparison) -> TeKernel:
    for tensor in (op.lhs, op.rhs):
        require_dtype(op.kind, tensor, ("int8",))
        require(tensor.scale < 1.0, op.kind, f"an operand scale of {tensor.scale:g} (TFLite's kernel needs < 1)")
    try:
        broadcast = tuple(np.broadcast_shapes(op.lhs.shape, op.rhs.shape))
    except ValueError:
        broadcast = None
    require(broadcast == op.output_shape, op.kind, f"{op.lhs.shape} and {op.rhs.shape} do not broadcast to "
            f"{op.output_shape}")
    require(op.lhs_values is None or op.rhs_values is None, op.kind, "both operands are constants")
    (lhs, lhs_shape), (rhs, rhs_shape) = operand(op.lhs, op.lhs_values, "lhs"), operand(op.rhs, op.rhs_values, "rhs")
    shape = op.output_shape or (1,)
    a, b = broadcast_reader(lhs, lhs_shape, len(shape)), broadcast_reader(rhs, rhs_shape, len(shape))
    y = te.compute(shape, lambda *i: _COMPARE[op.kind](_scaled(op.lhs, a(*i)), _scaled(op.rhs, b(*i))),
                   name="output")
    return TeKernel(inputs=tuple(t for t in (lhs, rhs) if not isinstance(t, Constant)), output=y,
                    constants=tuple(t for t in (lhs, rhs) if isinstance(t, Constant)))
