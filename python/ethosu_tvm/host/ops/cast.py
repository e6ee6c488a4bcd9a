"""CAST between int8, int16 and int32: each stored integer converted as C converts it (a narrowing keeps the low
bits, as TFLite's static_cast does on the two's-complement targets it runs on); quantization plays no part."""
from __future__ import annotations

import math

from tvm import te

from ..spec import Cast
from ..te_kernel import TeKernel, require

_DTYPES = ("int8", "int16", "int32")


def define(op: Cast) -> TeKernel:
    require(op.input_dtype in _DTYPES and op.output_dtype in _DTYPES, "cast",
            f"{op.input_dtype} to {op.output_dtype} (supported: {', '.join(_DTYPES)})")
    size = math.prod(op.shape)
    x = te.placeholder((size,), op.input_dtype, name="input")
    return TeKernel(inputs=(x,), output=te.compute((size,), lambda i: x[i].astype(op.output_dtype), name="output"))
