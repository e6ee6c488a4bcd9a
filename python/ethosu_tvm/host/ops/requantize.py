"""QUANTIZE between integer quantizations (int8, int16, uint8 from or to int8, the pairs TFLite Micro has, and from
or to int32), and RELU/RELU6/RELU_N1_TO_1: TFLite's requantization.

Both multiply (x − input_zp) by input_scale / output_scale with the double-rounding multiply, add output_zp and
clamp (the RELUs to their activation range). They differ in one detail that shows in the last bit: QUANTIZE
computes the scale ratio in double, the RELUs in float32 (LiteRT agrees, and disagrees with the other choice).
"""
from __future__ import annotations

from tvm import te

from ...quantization import table_multipliers
from ...quantization.fixed_point import multiply_by_quantized_multiplier_int
from ..fixed_point import INT32_MAX, INT32_MIN, multiply_by_quantized_multiplier
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
        require_dtype(name, op.output, _DTYPES + ("int32",))
        pair = (op.input.dtype, op.output.dtype)
        require("uint8" not in pair or "int8" in pair, name, f"{pair[0]} to {pair[1]} is not supported (uint8 pairs "
                "with int8 only, as in TFLite Micro)")
        require(pair[1] != "int32" or pair[0] in ("int8", "int16"), name, f"{pair[0]} to int32 is not supported "
                "(TFLite Micro requantizes int8 and int16 to int32)")
        kind, clamp = "requantize", None
    (ratio,) = table_multipliers(kind, op.input.scale, op.output.scale)
    multiplier, shift = tflite_multiplier(name, ratio)
    require(op.input.dtype != "int32" or (op.input.zero_point, max(shift, 0)) == (0, 0), name,
            "an int32 input needs zero point 0 and an input / output scale ratio below 1 (TFLite's int32"
            " arithmetic overflows on some inputs otherwise)")
    problem = _undefined_int32_output(op, multiplier, shift) if op.output.dtype == "int32" else ""
    require(not problem, name, problem)
    x = activation(op.input, "input", (op.input.size,))
    y = te.compute(x.shape, lambda i: saturate(multiply_by_quantized_multiplier(
        x[i].astype("int32") - op.input.zero_point, multiplier, shift), op.output, clamp), name="output")
    return TeKernel(inputs=(x,), output=y)


def _undefined_int32_output(op: Requantize, multiplier: int, shift: int) -> str:
    """Why TFLite's int32 arithmetic is undefined on some input of this requantization to int32, or "": the centred
    input shifted left (a real multiplier of 1 or more) and the requantized value plus the output zero point must
    stay in int32. Both grow with the input, so the input type's extremes decide."""
    centred = [limit - op.input.zero_point for limit in op.input.limits]
    left = max(shift, 0)
    for value in centred:
        if not INT32_MIN <= value << left <= INT32_MAX:
            return (f"{op.input.dtype} inputs centred to {value} and shifted left by {left} bits leave int32, where "
                    "TFLite's int32 arithmetic is undefined")
    for value in centred:
        result = multiply_by_quantized_multiplier_int(value, multiplier, shift) + op.output.zero_point
        if not INT32_MIN <= result <= INT32_MAX:
            return (f"output zero point {op.output.zero_point} takes requantized values to {result}, beyond int32, "
                    "where TFLite's int32 arithmetic is undefined")
    return ""
