"""QUANTIZE between integer quantizations (int8, int16, uint8 from or to int8, the pairs TFLite Micro has, and from
int32), and RELU/RELU6/RELU_N1_TO_1: TFLite's requantization.

Both multiply (x − input_zp) by input_scale / output_scale with the double-rounding multiply, add output_zp and
clamp (the RELUs to their activation range). They differ in one detail that shows in the last bit: QUANTIZE
computes the scale ratio in double, the RELUs in float32 (LiteRT agrees, and disagrees with the other choice).
"""
from __future__ import annotations

from tvm import te

from ...quantization import table_multipliers
from ..fixed_point import multiply_by_quantized_multiplier
from ..spec import Relu, Requantize, op_name
from ..te_kernel import TeKernel, activation, require, require_dtype, saturate, tflite_multiplier

_DTYPES = ("int8", "uint8", "int16")


def define(op: Requantize | Relu) -> TeKernel:
    name = op_name(op)
    if isinstance(op, Relu):
        require_dtype(name, op.input, ("int8",))
        require_dtype(name, op.output, ("int8",))
        kind, clamp = "relu", op.clamp
    else:
        require_dtype(name, op.input, _DTYPES + ("int32",))
        require_dtype(name, op.output, _DTYPES)
        pair = (op.input.dtype, op.output.dtype)
        require("uint8" not in pair or "int8" in pair, name, f"{pair[0]} to {pair[1]} is not supported (uint8 pairs "
                "with int8 only, as in TFLite Micro)")
        kind, clamp = "requantize", None
    (ratio,) = table_multipliers(kind, op.input.scale, op.output.scale)
    multiplier, shift = tflite_multiplier(name, ratio)
    require(op.input.dtype != "int32" or (op.input.zero_point, max(shift, 0)) == (0, 0), name,
            "an int32 input needs zero point 0 and an input / output scale ratio below 1 (TFLite's int32"
            " arithmetic overflows on some inputs otherwise)")
    x = activation(op.input, "input", (op.input.size,))
    y = te.compute(x.shape, lambda i: saturate(multiply_by_quantized_multiplier(
        x[i].astype("int32") - op.input.zero_point, multiplier, shift), op.output, clamp), name="output")
    return TeKernel(inputs=(x,), output=y)
