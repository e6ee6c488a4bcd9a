"""SELECT_V2 (int8, int16): x where the bool condition holds, else y, the three broadcast against each other by
NumPy's rules (TFLite's BroadcastSelect). The integers are copied whatever the quantizations: LiteRT's and TFLite
Micro's kernels do not requantize either.
"""
from __future__ import annotations

import numpy as np
from tvm import te, tirx

from ..spec import Select
from ..te_kernel import Constant, TeKernel, constant, require
from .binary import broadcast_reader


def _operand(shape: tuple[int, ...], dtype: str, values, name: str):
    """A kernel input, or the kernel constant of a model constant; a scalar is viewed as shape (1,)."""
    shape = shape or (1,)
    if values is None:
        return te.placeholder(shape, dtype, name=name)
    return constant(np.asarray(values, dtype).reshape(shape), name)


def define(op: Select) -> TeKernel:
    require(op.dtype in ("int8", "int16"), "select_v2", f"{op.dtype} values (supported: int8, int16)")
    shapes = (op.condition_shape, op.x_shape, op.y_shape)
    try:
        broadcast = tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        broadcast = None
    require(broadcast == op.output_shape, "select_v2", f"{' and '.join(map(str, shapes))} do not broadcast to "
            f"{op.output_shape}")
    values = (op.condition_values, op.x_values, op.y_values)
    require(any(v is None for v in values), "select_v2", "every operand is a constant")
    operands = [_operand(shape, dtype, v, name) for shape, dtype, v, name in
                zip(shapes, ("bool", op.dtype, op.dtype), values, ("condition", "x", "y"))]
    shape = op.output_shape or (1,)
    condition, x, y = (broadcast_reader(t, s or (1,), len(shape)) for t, s in zip(operands, shapes))
    output = te.compute(shape, lambda *i: tirx.if_then_else(condition(*i), x(*i), y(*i)), name="output")
    return TeKernel(inputs=tuple(t for t in operands if not isinstance(t, Constant)), output=output,
                    constants=tuple(t for t in operands if isinstance(t, Constant)))
