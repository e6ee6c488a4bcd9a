"""QUANTIZE from a float32 model input and DEQUANTIZE to a float32 model output, as TFLite's reference kernels.

QUANTIZE: q = clamp(round(x / scale) + zero_point), the division in float32 and the rounding half away from zero
(C's roundf, TFLite's TfLiteRound). DEQUANTIZE: TFLite computes scale · (q − zero_point) in double and rounds it to
float32; the product of a float32 scale and a 17-bit integer is exact in double, so one float32 multiplication
rounds to the same value.
"""
from __future__ import annotations

import numpy as np
from tvm import te, tirx

from ..fixed_point import clamp
from ..spec import Dequantize, FloatQuantize, op_name
from ..te_kernel import TeKernel, activation, constant, require, require_dtype

# TFLite Micro's types: QUANTIZE from float32 gives int8 and int16 only, DEQUANTIZE reads uint8 too.
_QUANTIZE_DTYPES = ("int8", "int16")
_DEQUANTIZE_DTYPES = ("int8", "uint8", "int16")


def _scale(value: float):
    """The scale as a one-element constant array: TVM prints float immediates with 7 digits, which do not give
    every float32 back."""
    return constant(np.array([value], dtype=np.float32), "scale")


def define_quantize(op: FloatQuantize) -> TeKernel:
    require(op.output.dtype != "uint8", op_name(op), "float32 to uint8 is not supported (TFLite Micro's QUANTIZE "
            "has no float32 to uint8)")
    require_dtype(op_name(op), op.output, _QUANTIZE_DTYPES)
    size = op.output.size
    x = te.placeholder((size,), "float32", name="input")
    scale = _scale(op.output.scale)
    low, high = op.output.limits
    # Clamped in float first: a float beyond the int32 range has no defined conversion in C.
    bound = tirx.const(float(2**24), "float32")
    y = te.compute((size,), lambda i: clamp(
        clamp(tirx.call_pure_extern("float32", "roundf", x[i] / scale[0]), -bound, bound).astype("int32")
        + op.output.zero_point, low, high).astype(op.output.dtype), name="output")
    return TeKernel(inputs=(x,), output=y, constants=(scale,))


def define_dequantize(op: Dequantize) -> TeKernel:
    require_dtype(op_name(op), op.input, _DEQUANTIZE_DTYPES)
    x = activation(op.input, "input", (op.input.size,))
    scale = _scale(op.input.scale)
    y = te.compute(x.shape, lambda i: (x[i].astype("int32") - op.input.zero_point).astype("float32") * scale[0],
                   name="output")
    return TeKernel(inputs=(x,), output=y, constants=(scale,))
