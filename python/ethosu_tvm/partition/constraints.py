"""Ethos-U55 operator constraints, as facts taken from Vela's supported-operator checks, in our own code: the table
of each NPU pattern kind's tensors, to which the generic limits apply (:mod:`.checks.generic`), and of its own
check (one module of :mod:`.checks` per operator family).

Each check takes a :class:`Match` and returns the reason the operator must stay on the host, or "" when the NPU can
run it. Reasons are one line and name the limit, so the offload report explains itself.
"""
from __future__ import annotations

from collections.abc import Callable

from ..qdq.match import Match
from .checks.convolution import (
    batch_matmul_tensors,
    check_batch_matmul,
    check_conv2d,
    check_depthwise_conv2d,
    check_fully_connected,
    check_transpose_conv,
    convolution_tensors,
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
    concatenation_tensors,
    pack_tensors,
    pad_tensors,
    reshape_tensors,
    resize_tensors,
    strided_slice_tensors,
    transpose_tensors,
)
from .checks.elementwise import (
    binary_tensors,
    check_arithmetic,
    check_min_max,
    check_prelu,
    check_squared_difference,
    prelu_tensors,
    squared_difference_tensors,
)
from .checks.generic import Tensors, generic
from .checks.pooling import check_avg_pool2d, check_max_pool2d, pool_tensors
from .checks.reduction import (
    arg_min_max_tensors,
    check_arg_min_max,
    check_mean,
    check_reduce_extreme,
    check_sum,
    reduction_tensors,
)
from .checks.unary import (
    cast_tensors,
    check_cast,
    check_leaky_relu,
    check_lookup,
    check_quantize_int32,
    check_requantize,
    check_sigmoid_family,
    check_softmax,
    leaky_relu_tensors,
    lookup_tensors,
    quantize_int32_tensors,
    requantize_tensors,
    sigmoid_family_tensors,
    softmax_tensors,
)

Check = Callable[[Match], str]
LOOKUP = (lookup_tensors, check_lookup)

CONSTRAINTS: dict[str, tuple[Callable[[Match], Tensors], Check]] = {
    "conv2d": (convolution_tensors, check_conv2d),
    "depthwise_conv2d": (convolution_tensors, check_depthwise_conv2d),
    "transpose_conv": (convolution_tensors, check_transpose_conv),
    "fully_connected": (convolution_tensors, check_fully_connected),
    "avg_pool2d": (pool_tensors, check_avg_pool2d),
    "max_pool2d": (pool_tensors, check_max_pool2d),
    "add": (binary_tensors, check_arithmetic),
    "subtract": (binary_tensors, check_arithmetic),
    "multiply": (binary_tensors, check_arithmetic),
    "minimum": (binary_tensors, check_min_max),
    "maximum": (binary_tensors, check_min_max),
    "mean": (reduction_tensors, check_mean),
    "sum": (reduction_tensors, check_sum),
    "reduce_max": (reduction_tensors, check_reduce_extreme),
    "reduce_min": (reduction_tensors, check_reduce_extreme),
    "arg_max": (arg_min_max_tensors, check_arg_min_max),
    "arg_min": (arg_min_max_tensors, check_arg_min_max),
    "cast": (cast_tensors, check_cast),
    "relu": LOOKUP,
    "clip": LOOKUP,
    "abs": LOOKUP,
    "leaky_relu": (leaky_relu_tensors, check_leaky_relu),
    "requantize": (requantize_tensors, check_requantize),
    "quantize_int32": (quantize_int32_tensors, check_quantize_int32),
    "tanh": (sigmoid_family_tensors, check_sigmoid_family),
    "logistic": (sigmoid_family_tensors, check_sigmoid_family),
    "exp": LOOKUP,
    "log": LOOKUP,
    "rsqrt": LOOKUP,
    "sqrt": LOOKUP,
    "neg": LOOKUP,
    "elu": LOOKUP,
    "gelu": LOOKUP,
    "gelu_tanh": LOOKUP,
    "hard_swish": LOOKUP,
    "reshape": (reshape_tensors, check_reshape),
    "prelu": (prelu_tensors, check_prelu),
    "squared_difference": (squared_difference_tensors, check_squared_difference),
    "softmax": (softmax_tensors, check_softmax),
    "concatenation": (concatenation_tensors, check_concatenation),
    "pack": (pack_tensors, check_pack),
    "pad": (pad_tensors, check_pad),
    "strided_slice": (strided_slice_tensors, check_strided_slice),
    "resize_nearest_neighbor": (resize_tensors, check_resize_nearest_neighbor),
    "resize_bilinear": (resize_tensors, check_resize_bilinear),
    "batch_matmul": (batch_matmul_tensors, check_batch_matmul),
    "transpose": (transpose_tensors, check_transpose),
}
# Each kind's own check, whose docstring states its constraints (docs/operators.md lists them)
CHECKS: dict[str, Check] = {kind: check for kind, (_, check) in CONSTRAINTS.items()}


def check(match: Match) -> str:
    """The first constraint the matched operator breaks, or "": the generic limits on the tensors its kind
    declares, then the kind's own check (which may rely on them)."""
    tensors, own = CONSTRAINTS[match.kind]
    return generic(tensors(match)) or own(match)
