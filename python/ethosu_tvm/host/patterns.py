"""The host's patterns: what partitioning leaves in ``main`` is grouped into ``host.<kind>`` composites.

The builders are the NPU's (:mod:`ethosu_tvm.qdq.patterns`): the host runs the same QDQ forms, plus int16 and the
operators the NPU lacks, so both sides agree on what one TFLite operator looks like in Relax.
"""
from __future__ import annotations

from collections.abc import Iterable

from tvm.relax.dpl import has_dtype, wildcard

from ..qdq.patterns import (
    COMPARISON_OPS,
    REDUCTION_OPS,
    UNARY_CORES,
    CompositePattern,
    add_n,
    arg_min_max,
    binary,
    batch_matmul,
    cast,
    comparison,
    broadcast_to,
    concatenation,
    dequantized,
    fill,
    gather_nd,
    hard_swish,
    l2_normalization,
    log_softmax,
    pack,
    pad,
    prelu,
    quantize_int32,
    quantized,
    reduction,
    reshape,
    resize,
    select,
    softmax,
    transpose_conv,
    strided_slice,
    transpose,
    squared_difference,
    unary,
    weighted_and_elementwise,
)

HOST = "host"
# Composite attributes fuse_host_ops writes and host_spec reads.
QUANT_ATTR = "ethosu.quantization"  # the TFLite quantization of a raw-integer op's tensors (JSON [scale, zp])
SOURCE_ATTR = "ethosu.source_op"  # the source operator, for messages
_UNARY_KINDS = ("relu", "clip", "leaky_relu", "requantize", "tanh", "logistic", "exp", "log", "rsqrt",
                "abs", "elu", "sqrt", "neg", "gelu", "gelu_tanh")


def host_patterns(concat_arities: Iterable[int] = ()) -> list[CompositePattern]:
    """Every host pattern, most specific first; concatenation and pack once per input count in
    `concat_arities`."""
    return [
        quantize_int32(f"{HOST}.quantize_int32"),
        squared_difference(f"{HOST}.squared_difference"),
        *weighted_and_elementwise(HOST),
        binary(f"{HOST}.div", "relax.divide"),  # the NPU has no DIV
        transpose_conv(f"{HOST}.transpose_conv"),
        batch_matmul(f"{HOST}.batch_matmul"),
        *(comparison(f"{HOST}.{kind}", relax_op) for kind, relax_op in COMPARISON_OPS.items()),
        select(f"{HOST}.select_v2"),
        fill(f"{HOST}.fill"),
        gather_nd(f"{HOST}.gather_nd"),  # before cast: it holds the cast of its indices
        arg_min_max(f"{HOST}.arg_max", "relax.argmax"),
        arg_min_max(f"{HOST}.arg_min", "relax.argmin"),
        softmax(f"{HOST}.softmax"),
        log_softmax(f"{HOST}.log_softmax"),
        l2_normalization(f"{HOST}.l2_normalization"),
        prelu(f"{HOST}.prelu"),
        *(reduction(f"{HOST}.{kind}", relax_op) for kind, relax_op in REDUCTION_OPS.items()),
        resize(f"{HOST}.resize_bilinear", qdq=True),
        resize(f"{HOST}.resize_nearest_neighbor", qdq=False),
        *(unary(f"{HOST}.{kind}", UNARY_CORES[kind]) for kind in _UNARY_KINDS),
        hard_swish(f"{HOST}.hard_swish"),
        strided_slice(f"{HOST}.strided_slice"),  # before reshape: it takes the reshape that follows a slice
        transpose(f"{HOST}.transpose"),
        broadcast_to(f"{HOST}.broadcast_to"),
        reshape(f"{HOST}.reshape", ("int8", "int16", "uint8")),
        pad(f"{HOST}.pad"),
        *(pattern for n in sorted(set(concat_arities))
          for pattern in (add_n(f"{HOST}.add_n", n), concatenation(f"{HOST}.concatenation", n),
                          pack(f"{HOST}.pack", n))),  # ADD_N first: its concatenation of new axes is a PACK
        cast(f"{HOST}.cast"),  # after every pattern with an astype of its own
        *float_io(),
    ]


def float_io() -> list[CompositePattern]:
    """QUANTIZE from a float32 model input and DEQUANTIZE to a float32 model output: last, so that they only take
    the quantize and dequantize calls no operator's pattern holds."""
    ifm = has_dtype("float32", wildcard())
    quantize = quantized(ifm)
    raw = wildcard()
    dequantize = dequantized(raw)
    return [CompositePattern(f"{HOST}.float_quantize", quantize, dict(ifm=ifm, quantize=quantize)),
            CompositePattern(f"{HOST}.dequantize", dequantize, dict(ifm=raw, ifm_dq=dequantize))]
