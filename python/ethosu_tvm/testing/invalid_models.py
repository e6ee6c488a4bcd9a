"""Small TFLite models the compiler must refuse with a clear error: float arithmetic, dynamic or empty shapes, an
output declared with another shape than its operator computes, an operator no kernel computes."""
from __future__ import annotations

import numpy as np
import tflite

from .tflite_builder import ModelBuilder, Quantization


def float_model() -> bytes:
    """c = a + b in float32 (tensors 'a', 'b', 'c')."""
    builder = ModelBuilder()
    a = builder.add_tensor("a", (1, 4), np.float32)
    b = builder.add_tensor("b", (1, 4), np.float32)
    c = builder.add_tensor("c", (1, 4), np.float32)
    builder.add_operator(tflite.BuiltinOperator.ADD, [a, b], [c], "AddOptions", {})
    return builder.build([a, b], [c], ["a", "b"], ["c"])


def dynamic_shape_model(shape=(1, -1, 8)) -> bytes:
    """An int8 RELU over 'x' of `shape` (a dynamic one by default)."""
    builder = ModelBuilder()
    quant = Quantization((0.1,), (0,))
    x = builder.add_tensor("x", shape, np.int8, quantization=quant)
    y = builder.add_tensor("y", shape, np.int8, quantization=quant)
    builder.add_operator(tflite.BuiltinOperator.RELU, [x], [y])
    return builder.build([x], [y], ["x"], ["y"])


def sin_model() -> bytes:
    """An int8 SIN over 'x' (1, 8): it imports, but neither the NPU nor a host kernel computes it."""
    builder = ModelBuilder()
    x = builder.add_tensor("x", (1, 8), np.int8, quantization=Quantization((0.05,), (-128,)))
    y = builder.add_tensor("y", (1, 8), np.int8, quantization=Quantization((0.02,), (-128,)))
    builder.add_operator(tflite.BuiltinOperator.SIN, [x], [y])
    return builder.build([x], [y], ["x"], ["y"])


def misdeclared_output_model(kind: str, in_shape, out_shape) -> bytes:
    """An int8 RELU or ADD (of 'x' with itself) over 'x' of `in_shape` whose output 'y' declares `out_shape`."""
    builder = ModelBuilder()
    quant = Quantization((0.1,), (0,))
    x = builder.add_tensor("x", in_shape, np.int8, quantization=quant)
    y = builder.add_tensor("y", out_shape, np.int8, quantization=quant)
    if kind == "RELU":
        builder.add_operator(tflite.BuiltinOperator.RELU, [x], [y])
    else:
        builder.add_operator(tflite.BuiltinOperator.ADD, [x, x], [y], "AddOptions", {})
    return builder.build([x], [y], ["x"], ["y"])
