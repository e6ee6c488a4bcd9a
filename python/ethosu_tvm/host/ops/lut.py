"""LOGISTIC, TANH, EXP, LOG, ELU, ABS, RSQRT, SQRT, NEG and HARD_SWISH int8 as a 256-entry lookup table (LOGISTIC
and TANH int16: sigmoid_int16).

An int8 function is fully described by its 256 values. LiteRT's BUILTIN_REF LOGISTIC, TANH, EXP, LOG and ELU evaluate a
table TFLite builds from the float function in float32; ABS's, HARD_SWISH's, RSQRT's and NEG's kernels run integer
algorithms and SQRT's float32 arithmetic per element, whose value for each input is the table entry. The table is
computed at compile time and passed as a constant.
"""
from __future__ import annotations

import numpy as np
from tvm import te

from ...quantization import (
    FLOAT32_FUNCTIONS,
    abs_lut,
    float32_lut,
    hard_swish_lut,
    neg_lut,
    rsqrt_lut,
    sqrt_lut,
    table_multipliers,
)
from ..spec import Abs, FloatFunction, HardSwish, Logistic, Neg, Rsqrt, Sqrt, Tanh, UnsupportedHostOp, op_name
from ..te_kernel import TeKernel, activation, constant, require_dtype, tflite_multiplier
from . import sigmoid_int16


def _logistic(x: np.ndarray) -> np.ndarray:
    """1 / (1 + exp(-x)) with float32 operations (exp rounded to float32 from double)."""
    return np.float32(1.0) / (np.float32(1.0) + np.exp(-x.astype(np.float64)).astype(np.float32))


def _tanh(x: np.ndarray) -> np.ndarray:
    return np.tanh(x.astype(np.float64)).astype(np.float32)


_FUNCTIONS = {Logistic: _logistic, Tanh: _tanh}


_INTEGER_TABLES = {Abs: abs_lut, HardSwish: hard_swish_lut, Rsqrt: rsqrt_lut, Sqrt: sqrt_lut, Neg: neg_lut}


def _table(op: Logistic | Tanh | FloatFunction | Abs | Rsqrt | Sqrt | Neg | HardSwish) -> np.ndarray:
    if isinstance(op, Abs):  # TFLite requantizes |x − zp| by the scale ratio's multiplier
        tflite_multiplier(op_name(op), table_multipliers("abs", op.input.scale, op.output.scale)[0])
    if type(op) in _INTEGER_TABLES:
        return _INTEGER_TABLES[type(op)](op.input.scale, op.input.zero_point, op.output.scale,
                                         op.output.zero_point)
    function = FLOAT32_FUNCTIONS[op.function] if isinstance(op, FloatFunction) else _FUNCTIONS[type(op)]
    return float32_lut(function, op.input.scale, op.input.zero_point, op.output.scale,
                       op.output.zero_point, op.input.dtype)


def define(op: Logistic | Tanh | FloatFunction | Abs | Rsqrt | Sqrt | Neg | HardSwish) -> TeKernel:
    name = op_name(op)
    require_dtype(name, op.input, ("int8", "int16") if isinstance(op, (Logistic, Tanh)) else ("int8",))
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
