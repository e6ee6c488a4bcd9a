"""The host's patterns: what partitioning leaves in ``main`` is grouped into ``host.<kind>`` composites.

The builders are the NPU's (:mod:`ethosu_tvm.qdq.patterns`): the host runs the same QDQ forms, plus int16 and the
operators the NPU lacks, so both sides agree on what one TFLite operator looks like in Relax.
"""
from __future__ import annotations

from collections.abc import Iterable

from tvm import relax

from ..qdq.patterns import (
    UNARY_CORES,
    CompositePattern,
    concatenation,
    pad,
    reshape,
    softmax,
    squared_difference,
    unary,
    weighted_and_elementwise,
)
from ..qdq.values import bound_values

HOST = "host"
# Composite attributes fuse_host_ops writes and host_spec reads.
QUANT_ATTR = "ethosu.quantization"  # the TFLite quantization of a raw-integer op's tensors (JSON [scale, zp])
SOURCE_ATTR = "ethosu.source_op"  # the source operator, for messages
_UNARY_KINDS = ("relu", "clip", "leaky_relu", "requantize", "tanh", "logistic")


def host_patterns(concat_arities: Iterable[int] = ()) -> list[CompositePattern]:
    """Every host pattern, most specific first; concatenation once per input count in `concat_arities`."""
    return [
        squared_difference(f"{HOST}.squared_difference"),
        *weighted_and_elementwise(HOST),
        softmax(f"{HOST}.softmax"),
        *(unary(f"{HOST}.{kind}", UNARY_CORES[kind]) for kind in _UNARY_KINDS),
        reshape(f"{HOST}.reshape", ("int8", "int16")),
        pad(f"{HOST}.pad"),
        *(concatenation(f"{HOST}.concatenation", n) for n in sorted(set(concat_arities))),
    ]


def concat_arities(func: relax.Function) -> set[int]:
    """The input counts of the concatenations in `func` (each needs a pattern of its own)."""
    return {len(value.args[0].fields) for value in bound_values(func).values()
            if isinstance(value, relax.Call) and getattr(value.op, "name", "") == "relax.concat"
            and isinstance(value.args[0], relax.Tuple)}
