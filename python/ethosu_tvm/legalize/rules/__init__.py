"""The legalize rules, one module per operator family (the families of :mod:`ethosu_tvm.partition.checks`), and
their table: one rule per composite kind.

A rule reads the matched QDQ expressions and returns the NPU primitives with integer parameters. It gets the
:class:`Match` of the composite, the Tensor each composite parameter carries, and the output Tensor.
"""
from __future__ import annotations

from .convolution import batch_matmul, conv2d, fully_connected, transpose_conv
from .data_movement import (
    concatenation,
    pack,
    pad,
    reshape,
    resize_bilinear,
    resize_nearest_neighbor,
    strided_slice,
    transpose,
)
from .elementwise import binary, prelu, squared_difference
from .operands import Rule
from .pooling import pooling
from .reduction import arg_min_max, mean, reduce_extreme, reduce_sum
from .unary import cast, leaky_relu, requantize, sigmoid_family, softmax, table

RULES: dict[str, Rule] = {
    "conv2d": conv2d,
    "depthwise_conv2d": conv2d,
    "transpose_conv": transpose_conv,
    "fully_connected": fully_connected,
    "avg_pool2d": pooling("AVG"),
    "max_pool2d": pooling("MAX"),
    "add": binary("ADD"),
    "subtract": binary("SUB"),
    "multiply": binary("MUL"),
    "minimum": binary("MIN"),
    "maximum": binary("MAX"),
    "mean": mean,
    "sum": reduce_sum,
    "reduce_max": reduce_extreme,
    "reduce_min": reduce_extreme,
    "arg_max": arg_min_max,
    "arg_min": arg_min_max,
    "cast": cast,
    "relu": table,
    "clip": table,
    "abs": table,
    "leaky_relu": leaky_relu,
    "requantize": requantize,
    "tanh": sigmoid_family,
    "logistic": sigmoid_family,
    "exp": table,
    "log": table,
    "rsqrt": table,
    "sqrt": table,
    "neg": table,
    "elu": table,
    "gelu": table,
    "gelu_tanh": table,
    "hard_swish": table,
    "reshape": reshape,
    "prelu": prelu,
    "squared_difference": squared_difference,
    "softmax": softmax,
    "concatenation": concatenation,
    "pack": pack,
    "pad": pad,
    "strided_slice": strided_slice,
    "resize_nearest_neighbor": resize_nearest_neighbor,
    "resize_bilinear": resize_bilinear,
    "batch_matmul": batch_matmul,
    "transpose": transpose,
}
