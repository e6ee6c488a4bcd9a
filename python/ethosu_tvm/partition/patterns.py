"""The NPU's patterns: the QDQ builders of :mod:`ethosu_tvm.qdq.patterns` named ``ethos-u.<kind>``.

The text before the first '.' of a pattern name becomes the Codegen attribute of the merged functions, so every
NPU composite is ``ethos-u.<kind>`` and every merged NPU function has ``Codegen="ethos-u"``.
"""
from __future__ import annotations

import functools
from collections.abc import Iterable

import tvm
from tvm import relax

from ..qdq.patterns import (
    UNARY_CORES,
    CompositePattern,
    arg_min_max,
    batch_matmul,
    called_functions,
    cast,
    concatenation,
    hard_swish,
    pack,
    pad,
    prelu,
    quantize_int32,
    reduction,
    reshape,
    resize,
    softmax,
    squared_difference,
    strided_slice,
    transpose,
    transpose_conv,
    unary,
    weighted_and_elementwise,
)
from .checks.generic import COPY_DTYPES

CODEGEN = "ethos-u"


def npu_patterns(concat_arities: Iterable[int] = ()) -> list[CompositePattern]:
    """All patterns, most specific first (FuseOpsByPattern gives earlier patterns priority); concatenation and pack
    once per input count in `concat_arities`."""
    return list(_npu_patterns(tuple(sorted(set(concat_arities)))))


@functools.lru_cache(maxsize=None)
def _npu_patterns(concat_arities: tuple[int, ...]) -> tuple[CompositePattern, ...]:
    """The patterns, built once per set of arities: legalization re-matches every composite call with them."""
    return (
        quantize_int32(f"{CODEGEN}.quantize_int32"),  # refused, for the report's reason
        *weighted_and_elementwise(CODEGEN),
        transpose_conv(f"{CODEGEN}.transpose_conv"),
        reduction(f"{CODEGEN}.mean", "relax.mean"),
        reduction(f"{CODEGEN}.sum", "relax.sum"),
        reduction(f"{CODEGEN}.reduce_max", "relax.max"),
        reduction(f"{CODEGEN}.reduce_min", "relax.min"),
        arg_min_max(f"{CODEGEN}.arg_max", "relax.argmax"),
        arg_min_max(f"{CODEGEN}.arg_min", "relax.argmin"),
        *(unary(f"{CODEGEN}.{kind}", core) for kind, core in UNARY_CORES.items()),
        hard_swish(f"{CODEGEN}.hard_swish"),
        prelu(f"{CODEGEN}.prelu"),
        squared_difference(f"{CODEGEN}.squared_difference"),
        strided_slice(f"{CODEGEN}.strided_slice"),  # before reshape: it takes the reshape of shrunk axes
        reshape(f"{CODEGEN}.reshape", COPY_DTYPES),
        softmax(f"{CODEGEN}.softmax"),
        pad(f"{CODEGEN}.pad"),
        resize(f"{CODEGEN}.resize_bilinear", qdq=True),  # before nearest neighbour, which takes any resize2d
        resize(f"{CODEGEN}.resize_nearest_neighbor", qdq=False),
        transpose(f"{CODEGEN}.transpose"),
        batch_matmul(f"{CODEGEN}.batch_matmul"),
        *(pattern for n in concat_arities
          for pattern in (concatenation(f"{CODEGEN}.concatenation", n), pack(f"{CODEGEN}.pack", n, COPY_DTYPES))),
        cast(f"{CODEGEN}.cast"),  # after every pattern with an astype of its own; CAST operators only
    )


def npu_functions(mod: tvm.IRModule) -> list[tuple[str, relax.Function]]:
    """The merged NPU functions of a partitioned module, as (global name, function), in main's call order."""
    return [(name, func) for name, func in called_functions(mod, "Codegen", CODEGEN)
            if str(func.attrs["Codegen"]) == CODEGEN]
