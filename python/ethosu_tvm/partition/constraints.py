"""Ethos-U55 operator constraints, as facts taken from Vela's supported-operator checks, in our own code: the table of
each NPU pattern kind's check, the checks themselves in :mod:`.checks`, one module per operator family.

Each check takes a :class:`Match` and returns the reason the operator must stay on the host, or "" when the NPU can
run it. Reasons are one line and name the limit, so the offload report explains itself.
"""
from __future__ import annotations

from collections.abc import Callable

from ..qdq.match import Match
from .checks.convolution import (
    check_batch_matmul,
    check_conv2d,
    check_depthwise_conv2d,
    check_fully_connected,
    check_transpose_conv,
)
from .checks.data_movement import (
    check_concatenation,
    check_pack,
    check_pad,
    check_reshape,
    check_resize_bilinear,
    check_resize_nearest_neighbor,
    check_strided_slice,
    check_transpose,
)
from .checks.elementwise import check_arithmetic, check_min_max, check_prelu, check_squared_difference
from .checks.pooling import check_avg_pool2d, check_max_pool2d
from .checks.reduction import check_arg_min_max, check_mean, check_reduce_extreme, check_sum
from .checks.unary import (
    check_cast,
    check_leaky_relu,
    check_lookup,
    check_quantize_int32,
    check_requantize,
    check_sigmoid_family,
    check_softmax,
)

CHECKS: dict[str, Callable[[Match], str]] = {
    "conv2d": check_conv2d,
    "depthwise_conv2d": check_depthwise_conv2d,
    "transpose_conv": check_transpose_conv,
    "fully_connected": check_fully_connected,
    "avg_pool2d": check_avg_pool2d,
    "max_pool2d": check_max_pool2d,
    "add": check_arithmetic,
    "subtract": check_arithmetic,
    "multiply": check_arithmetic,
    "minimum": check_min_max,
    "maximum": check_min_max,
    "mean": check_mean,
    "sum": check_sum,
    "reduce_max": check_reduce_extreme,
    "reduce_min": check_reduce_extreme,
    "arg_max": check_arg_min_max,
    "arg_min": check_arg_min_max,
    "cast": check_cast,
    "relu": check_lookup,
    "clip": check_lookup,
    "abs": check_lookup,
    "leaky_relu": check_leaky_relu,
    "requantize": check_requantize,
    "quantize_int32": check_quantize_int32,
    "tanh": check_sigmoid_family,
    "logistic": check_sigmoid_family,
    "exp": check_lookup,
    "log": check_lookup,
    "rsqrt": check_lookup,
    "sqrt": check_lookup,
    "neg": check_lookup,
    "elu": check_lookup,
    "gelu": check_lookup,
    "gelu_tanh": check_lookup,
    "hard_swish": check_lookup,
    "reshape": check_reshape,
    "prelu": check_prelu,
    "squared_difference": check_squared_difference,
    "softmax": check_softmax,
    "concatenation": check_concatenation,
    "pack": check_pack,
    "pad": check_pad,
    "strided_slice": check_strided_slice,
    "resize_nearest_neighbor": check_resize_nearest_neighbor,
    "resize_bilinear": check_resize_bilinear,
    "batch_matmul": check_batch_matmul,
    "transpose": check_transpose,
}
