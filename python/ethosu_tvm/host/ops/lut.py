"""LOGISTIC, TANH, EXP and HARD_SWISH int8 as a 256-entry lookup table (LOGISTIC and TANH int16: sigmoid_int16).

An int8 function is fully described by its 256 values. LiteRT's BUILTIN_REF LOGISTIC, TANH and EXP evaluate a
table TFLite builds from the float function in float32; HARD_SWISH's kernel runs a 16-bit fixed-point algorithm,
whose value for each input is the table entry. The table is computed at compile time and passed as a constant.
"""
from __future__ import annotations

import numpy as np
from tvm import te

from ...quantization import float32_exp, float32_lut, hard_swish_lut
from ..spec import Exp, HardSwish, Logistic, Tanh, UnsupportedHostOp, op_name
from ..te_kernel import TeKernel, activation, constant, require_dtype
from . import sigmoid_int16


def _logistic(x: np.ndarray) -> np.ndarray:
    """1 / (1 + exp(-x)) with float32 operations (exp rounded to float32 from double)."""
    return np.float32(1.0) / (np.float32(1.0) + np.exp(-x.astype(np.float64)).astype(np.float32))


def _tanh(x: np.ndarray) -> np.ndarray:
    return np.tanh(x.astype(np.float64)).astype(np.float32)


_FUNCTIONS = {Logistic: _logistic, Tanh: _tanh, Exp: float32_exp}


def _table(op: Logistic | Tanh | Exp | HardSwish) -> np.ndarray:
    if isinstance(op, HardSwish):
        return hard_swish_lut(op.input.scale, op.input.zero_point, op.output.scale, op.output.zero_point)
    return float32_lut(_FUNCTIONS[type(op)], op.input.scale, op.input.zero_point, op.output.scale,
                       op.output.zero_point, op.input.dtype)


def define(op: Logistic | Tanh | Exp | HardSwish) -> TeKernel:
    name = op_name(op)
    require_dtype(name, op.input, ("int8",) if isinstance(op, (Exp, HardSwish)) else ("int8", "int16"))
    if op.output.dtype != op.input.dtype:
        raise UnsupportedHostOp(f"{name}: the output must be {op.input.dtype} like the input")
    if op.input.dtype == "int16":
        return sigmoid_int16.define(op)
    table = _table(op)
    x = activation(op.input, "input", (op.input.size,))
    lut = constant(table, "table")
    offset = -int(np.iinfo(op.input.dtype).min)
    y = te.compute(x.shape, lambda i: lut[x[i].astype("int32") + offset], name="output")
    return TeKernel(inputs=(x,), output=y, constants=(lut,))
