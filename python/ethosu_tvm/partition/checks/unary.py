"""Checks of the unary operators: lookup tables, the NPU's built-in functions, requantizations, casts and
SOFTMAX.
"""
from __future__ import annotations

import numpy as np

from ...qdq.match import Match
from ...qdq.values import REQUANTIZING_TABLES, const_value, dtype_of, quant_of, shape_of, table_reals
from ...quantization import leaky_relu_extreme, sigmoid_input_rescale, softmax_int16_input_scaling
from ..npu_view import softmax_beta
from .arithmetic import centred_magnitude, defined_left_shifts, scalar_scales, wrapping_left_shifts
from .generic import COPY_DTYPES, SUPPORTED_DTYPES, TENSOR_DIM_RANGE, Tensors, feature_map, first, quantized_io

CAST_WIDENS = {"int8": ("int8", "int16", "int32"), "int16": ("int16", "int32")}


def cast_tensors(match: Match) -> Tensors:
    """The raw integers: an 8- or 16-bit IFM, an OFM of up to 32 bits."""
    yield feature_map(match["ifm"], "IFM", dtypes=COPY_DTYPES)
    yield feature_map(match["cast"], "OFM", dtypes=("int8", "int16", "int32"))


def check_cast(match: Match) -> str:
    """CAST of the raw integers to as many bits or more (a MUL by 1 into the wider type); narrowing wraps in C,
    where the NPU saturates."""
    ifm_type, ofm_type = dtype_of(match["ifm"]), dtype_of(match["cast"])

    if ofm_type not in CAST_WIDENS.get(ifm_type, ()):
        return f"CAST from {ifm_type} to {ofm_type}; the NPU saturates where narrowing wraps"
    return ""


def lookup_tensors(match: Match) -> Tensors:
    """A table maps int8 feature maps of any batch."""
    return quantized_io(match, SUPPORTED_DTYPES, (False, False))


def _int16(match: Match) -> bool:
    return dtype_of(match["ifm"]) == "int16"


def check_lookup(match: Match) -> str:
    """Unary int8 functions become a 256-entry table: only the feature maps and their quantization matter (and
    that TFLite's requantization defines the table)."""
    return defined_left_shifts(table_reals(match)) if match.kind in REQUANTIZING_TABLES else ""


def leaky_relu_tensors(match: Match) -> Tensors:
    """int16 feature maps of batch 1, or a table's."""
    return quantized_io(match, ("int16",)) if _int16(match) else lookup_tensors(match)


def check_leaky_relu(match: Match) -> str:
    """int8 LEAKY_RELU is a table (`check_lookup`); int16 the MAX (or MIN) of the input requantized by each
    branch's multiplier, two MULs by 1 the NPU computes as TFLite does where no left shift leaves int32: zero
    points 0 (TFLite requires them), alpha ≥ 0 (the NPU's scales are positive), and the MAX or MIN equal to
    TFLite's choice on every int16 value (`leaky_relu_extreme`)."""
    if not _int16(match):
        return check_lookup(match)
    ifm_q, ofm_q = quant_of(match["ifm_dq"]), quant_of(match["quantize"])
    alpha = float(match["core"].attrs.alpha)

    def form() -> str:
        if (ifm_q.scalar_zero_point, ofm_q.scalar_zero_point) != (0, 0):
            return (f"input zero point {ifm_q.scalar_zero_point}, output zero point {ofm_q.scalar_zero_point};"
                    " int16 needs zero points 0")
        return f"alpha {alpha:.6g} is negative; the NPU's scales are positive" if alpha < 0 else ""

    def extreme() -> str:
        if leaky_relu_extreme(*table_reals(match)) is None:
            return (f"alpha {alpha:.6g}: rounding orders the two branches otherwise than TFLite's choice by sign for"
                    " some input, so neither their MAX nor their MIN is LEAKY_RELU")
        return ""

    return first(
        form,
        lambda: defined_left_shifts(table_reals(match)),
        lambda: scalar_scales(table_reals(match)),
        lambda: wrapping_left_shifts(centred_magnitude("int16", 0), table_reals(match)),
        extreme,
    )


INT16_SIGMOID_OUTPUT = (1.0 / 32768.0, 0)  # TFLite fixes the int16 TANH and LOGISTIC output quantization


def sigmoid_family_tensors(match: Match) -> Tensors:
    """int16 feature maps of any batch, or a table's."""
    return quantized_io(match, ("int16",), (False, False)) if _int16(match) else lookup_tensors(match)


def check_sigmoid_family(match: Match) -> str:
    """int8 TANH and LOGISTIC are tables (`check_lookup`); int16 ones the NPU's built-in functions, whose input
    scaling must not exceed 16 bits (TFLite's 32-bit product of input and multiplier would wrap)."""
    if not _int16(match):
        return check_lookup(match)
    ifm_q, ofm_q = quant_of(match["ifm_dq"]), quant_of(match["quantize"])

    def quantization() -> str:
        found = (ofm_q.scalar_scale, ofm_q.scalar_zero_point)
        if ifm_q.scalar_zero_point != 0 or found != INT16_SIGMOID_OUTPUT:
            return (f"input zero point {ifm_q.scalar_zero_point}, output quantization {found}; int16 needs zero"
                    " points 0 and output scale 1/32768")
        return ""

    def input_scale() -> str:
        multiplier, _ = sigmoid_input_rescale(ifm_q.scalar_scale)
        return "" if multiplier < 1 << 16 else (f"input scale {ifm_q.scalar_scale:.6g}; the int16 function's input"
                                                " multiplier must stay below 2^16")

    return first(
        quantization,
        input_scale,
    )


def _types(match: Match) -> tuple[str, str]:
    return dtype_of(match["ifm"]), dtype_of(match["quantize"])


def _mixed(types: tuple[str, str]) -> bool:
    """A QUANTIZE from or to uint8, or between int8 and int16."""
    return "uint8" in types or sorted(types) == ["int16", "int8"]


def requantize_form(match: Match) -> str:
    """TFLite Micro requantizes uint8 from or to int8 only."""
    types = _types(match)
    if _mixed(types) and "int8" not in types:
        return f"{types[0]} to {types[1]}; uint8 is requantized from or to int8 only"
    return ""


def requantize_tensors(match: Match) -> Tensors:
    """Feature maps of batch 1 of their own types when mixed, int16 ones, or a table's."""
    types = _types(match)
    if _mixed(types):
        return quantized_io(match, types)
    return quantized_io(match, ("int16",)) if types[0] == "int16" else lookup_tensors(match)


def check_requantize(match: Match) -> str:
    """int8 QUANTIZE is a table (`check_lookup`); int16 to int16 a scaled 1x1 average pool, and int8 from or to
    uint8 or int16 too (`_check_mixed_requantize`). TFLite shifts the centred int16 input left before its multiply,
    so effective scales from 2^15 on could overflow its 32 bits."""
    types = _types(match)
    if _mixed(types):
        return _check_mixed_requantize(match, types)
    if types[0] != "int16":
        return check_lookup(match)
    ifm_q, ofm_q = quant_of(match["ifm_dq"]), quant_of(match["quantize"])
    real = np.float64(ifm_q.scalar_scale) / np.float64(ofm_q.scalar_scale)
    return first(
        lambda: "" if real < 1 << 15 else f"effective scale {real:.6g}; int16 requantization needs it below 2^15",
        lambda: scalar_scales([real]),
    )


def quantize_int32_tensors(match: Match) -> Tensors:
    yield feature_map(match["quantize"], "OFM", batch_one=False, dtypes=("int8", "int16"))


def check_quantize_int32(match: Match) -> str:
    """QUANTIZE to int32 stays on the CPU, as in Vela: the NPU requantizes into int8 and int16 only here."""
    return ""


def _check_mixed_requantize(match: Match, types: tuple[str, str]) -> str:
    """QUANTIZE between int8 and uint8 (the only uint8 pairs TFLite Micro has) or int16: a scaled 1x1 average
    pool, as Vela runs it, where TFLite's left shift of the centred input must stay in its 32 bits
    (`wrapping_left_shifts`)."""
    ifm_q, ofm_q = quant_of(match["ifm_dq"]), quant_of(match["quantize"])
    real = np.float64(ifm_q.scalar_scale) / np.float64(ofm_q.scalar_scale)
    return first(
        lambda: wrapping_left_shifts(centred_magnitude(types[0], ifm_q.scalar_zero_point), [real]),
        lambda: scalar_scales([real]),
    )


SOFTMAX_OUTPUT = {"int8": (1.0 / 256.0, -128), "int16": (1.0 / 32768.0, 0)}  # TFLite fixes the output quantization
# int16: the rescaled input differences (up to 65535 · 2^left shift) must fit the 32-bit OFM of the scaled SUB
MAX_SOFTMAX_INT16_LEFT_SHIFT = 15


def softmax_tensors(match: Match) -> Tensors:
    """8- or 16-bit feature maps of batch 1, the OFM of the IFM's type."""
    return quantized_io(match, COPY_DTYPES, ofm_dtypes=(dtype_of(match["ifm"]),))


def check_softmax(match: Match) -> str:
    """int8 or int16 SOFTMAX over the last axis, as a sequence of NPU operations (bit-exact with TFLite's kernels).
    The rows are the NPU's height and width, so their number is limited like a dimension (Vela's own limit)."""
    shape = shape_of(match["ifm"])
    dtype = dtype_of(match["ifm"])

    def axis() -> str:
        value = int(match["core"].attrs.axis)
        return "" if value in (-1, len(shape) - 1) else f"softmax over axis {value}; only the last axis is supported"

    def beta() -> str:
        value = match.get("beta")
        size = 1 if value is None else np.asarray(const_value(value)).size
        return "" if size == 1 else f"beta has {size} values; it must be a scalar"

    def output() -> str:
        ofm = quant_of(match["quantize"])
        found = (ofm.scalar_scale, ofm.scalar_zero_point)
        needed = "(1/256, -128)" if dtype == "int8" else "(1/32768, 0)"
        return "" if found == SOFTMAX_OUTPUT[dtype] else (f"OFM quantization (scale, zero point) is {found}; "
                                                          f"{dtype} softmax needs {needed}")

    def int16_rescale() -> str:
        # TFLite's multiplier has a left shift of at most 15 below scale · beta = 5 (and a right one of at most 31)
        if dtype != "int16":
            return ""
        scale, beta = quant_of(match["ifm_dq"]).scalar_scale, softmax_beta(match)
        _, left_shift = softmax_int16_input_scaling(beta, scale)
        scale_beta = float(np.float32(scale) * np.float32(beta))
        return "" if left_shift <= MAX_SOFTMAX_INT16_LEFT_SHIFT else (
            f"input scale · beta is {scale_beta:.4g}; int16 softmax needs it below 5 (the rescaled input "
            "differences must fit 32 bits)")

    def rows() -> str:
        count = int(np.prod(shape[:-1])) if len(shape) > 1 else 1
        high = TENSOR_DIM_RANGE[1]
        return "" if count <= high else (f"IFM has {count} rows (product of all but the last dimension); "
                                         f"softmax rows must be at most {high}")

    return first(
        axis,
        beta,
        output,
        int16_rescale,
        rows,
    )
