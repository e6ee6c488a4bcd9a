"""Ethos-U55 operator constraints, as facts taken from Vela's supported-operator checks, in our own code: the table
of each NPU pattern kind's form (what the operator must be for the NPU to run it at all), its tensors, to which
the generic limits apply (:mod:`.checks.generic`), and its own check (one module of :mod:`.checks` per family).

Each check takes a :class:`Match` and returns the reason the operator must stay on the host, or "" when the NPU can
run it. Reasons are one line and name the limit, so the offload report explains itself.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from ..qdq.match import Match
from .checks.convolution import (
    batch_matmul_form,
    batch_matmul_tensors,
    check_batch_matmul,
    check_conv2d,
    check_depthwise_conv2d,
    check_fully_connected,
    check_transpose_conv,
    convolution_tensors,
    group_per_channel,
    transpose_conv_form,
    ungrouped,
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
    constant_operand,
    no_constant_operand,
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
    requantize_form,
    requantize_tensors,
    sigmoid_family_tensors,
    softmax_tensors,
)

Check = Callable[[Match], str]


class Constraint(NamedTuple):
    """One kind's constraints: its `form` when it has one, then the generic limits on its `tensors`, then its own
    `check`."""

    tensors: Callable[[Match], Tensors]
    check: Check
    form: Check | None = None


LOOKUP = Constraint(lookup_tensors, check_lookup)
BINARY = Constraint(binary_tensors, check_arithmetic, constant_operand)
MIN_MAX = Constraint(binary_tensors, check_min_max, constant_operand)

CONSTRAINTS: dict[str, Constraint] = {
    "conv2d": Constraint(convolution_tensors, check_conv2d, ungrouped),
    "depthwise_conv2d": Constraint(convolution_tensors, check_depthwise_conv2d, group_per_channel),
    "transpose_conv": Constraint(convolution_tensors, check_transpose_conv, transpose_conv_form),
    "fully_connected": Constraint(convolution_tensors, check_fully_connected),
    "avg_pool2d": Constraint(pool_tensors, check_avg_pool2d),
    "max_pool2d": Constraint(pool_tensors, check_max_pool2d),
    "add": BINARY,
    "subtract": BINARY,
    "multiply": BINARY,
    "minimum": MIN_MAX,
    "maximum": MIN_MAX,
    "mean": Constraint(reduction_tensors, check_mean),
    "sum": Constraint(reduction_tensors, check_sum),
    "reduce_max": Constraint(reduction_tensors, check_reduce_extreme),
    "reduce_min": Constraint(reduction_tensors, check_reduce_extreme),
    "arg_max": Constraint(arg_min_max_tensors, check_arg_min_max),
    "arg_min": Constraint(arg_min_max_tensors, check_arg_min_max),
    "cast": Constraint(cast_tensors, check_cast),
    "relu": LOOKUP,
    "clip": LOOKUP,
    "abs": LOOKUP,
    "leaky_relu": Constraint(leaky_relu_tensors, check_leaky_relu),
    "requantize": Constraint(requantize_tensors, check_requantize, requantize_form),
    "quantize_int32": Constraint(quantize_int32_tensors, check_quantize_int32),
    "tanh": Constraint(sigmoid_family_tensors, check_sigmoid_family),
    "logistic": Constraint(sigmoid_family_tensors, check_sigmoid_family),
    "exp": LOOKUP,
    "log": LOOKUP,
    "rsqrt": LOOKUP,
    "sqrt": LOOKUP,
    "neg": LOOKUP,
    "elu": LOOKUP,
    "gelu": LOOKUP,
    "gelu_tanh": LOOKUP,
    "hard_swish": LOOKUP,
    "reshape": Constraint(reshape_tensors, check_reshape),
    "prelu": Constraint(prelu_tensors, check_prelu),
    "squared_difference": Constraint(squared_difference_tensors, check_squared_difference, no_constant_operand),
    "softmax": Constraint(softmax_tensors, check_softmax),
    "concatenation": Constraint(concatenation_tensors, check_concatenation),
    "pack": Constraint(pack_tensors, check_pack),
    "pad": Constraint(pad_tensors, check_pad),
    "strided_slice": Constraint(strided_slice_tensors, check_strided_slice),
    "resize_nearest_neighbor": Constraint(resize_tensors, check_resize_nearest_neighbor),
    "resize_bilinear": Constraint(resize_tensors, check_resize_bilinear),
    "batch_matmul": Constraint(batch_matmul_tensors, check_batch_matmul, batch_matmul_form),
    "transpose": Constraint(transpose_tensors, check_transpose),
}
# Each kind's own check, whose docstring states its constraints (docs/operators.md lists them)
CHECKS: dict[str, Check] = {kind: constraint.check for kind, constraint in CONSTRAINTS.items()}


def check(match: Match) -> str:
    """The first constraint the matched operator breaks, or "": its kind's form, the generic limits on the tensors
    the kind declares (as Vela checks its generic constraints on every operator before the operator's own), then
    the kind's own check (each may rely on those before it)."""
    constraint = CONSTRAINTS[match.kind]
    return ((constraint.form(match) if constraint.form else "") or generic(constraint.tensors(match))
            or constraint.check(match))
