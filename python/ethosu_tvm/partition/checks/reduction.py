"""Checks of the reductions: MEAN, SUM, REDUCE_MAX, REDUCE_MIN, ARG_MAX and ARG_MIN."""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...qdq.match import Match
from ...qdq.values import dtype_of, quant_of, shape_of
from ...quantization import MAX_NPU_SHIFT, shifts_in_range
from ..npu_view import reduced_axes, reduction_count, reduction_window, sum_multiplier
from .arithmetic import centred_magnitude, wrapping_left_shift
from .generic import COPY_DTYPES, SUPPORTED_DTYPES, TENSOR_DIM_RANGE, Tensors, feature_map, first, quantized_io
from .pooling import average_kernel, pool_kernel


def reduction_tensors(match: Match) -> Tensors:
    """A reduction's IFM has batch 1, its OFM any: SUM's are 8- or 16-bit, int8 MEAN's IFM is int8 (its sum of
    either width), int16 MEAN's are int16, REDUCE_MAX's and REDUCE_MIN's int8."""
    if match.kind == "mean" and dtype_of(match["ifm"]) == "int16":
        return quantized_io(match, ("int16",), (True, False))
    if match.kind == "mean":
        return quantized_io(match, SUPPORTED_DTYPES, (True, False), COPY_DTYPES)
    return quantized_io(match, COPY_DTYPES if match.kind == "sum" else SUPPORTED_DTYPES, (True, False))


def _reduction(match: Match, kernel_check: Callable[[int, int], str]) -> str:
    """What every reduction on the NPU needs beyond its tensors: a window whose view and kernel the NPU takes."""
    view, (kernel_h, kernel_w), _ = reduction_window(shape_of(match["ifm"]), reduced_axes(match))
    low, high = TENSOR_DIM_RANGE
    if not all(low <= d <= high for d in view):
        return f"{match.kind.upper()} viewed as {view}; each extent must be in the range [{low}, {high}]"
    return kernel_check(kernel_h, kernel_w)


def _depthwise_kernel(kernel_h: int, kernel_w: int) -> str:
    """A sum runs as a depthwise convolution with unit weights: its kernel limits apply (those of the average pools
    that run as one)."""
    return average_kernel(kernel_h, kernel_w, "reduction window", "elements")


def check_sum(match: Match) -> str:
    """SUM (8- and 16-bit), and int8 MEAN: a depthwise convolution with unit weights over the
    reduction window, the centred sum requantized by TFLite's multiplier (the NPU's 6-bit shift must hold it)."""

    def scale() -> str:
        multiplier, shift = sum_multiplier(match)
        if multiplier == 0 or not shifts_in_range(31 - shift):
            return (f"{match.kind.upper()} multiplier {multiplier} · 2^({shift} − 31); the NPU's right shift must be"
                    f" in the range [0, {MAX_NPU_SHIFT}]")
        centred = centred_magnitude(dtype_of(match["ifm"]), quant_of(match["ifm_dq"]).scalar_zero_point)
        return wrapping_left_shift(reduction_count(match) * centred, shift, multiplier * 2.0**(shift - 31))

    return first(lambda: _reduction(match, _depthwise_kernel), scale)


def check_mean(match: Match) -> str:
    """int8 MEAN is a sum (see `check_sum`) whatever its axes and scales: TFLite's reference kernels (LiteRT's and
    TFLite Micro's) requantize the centred sum with 1/count folded into the multiplier, rounding twice, which an
    average pool's single rounding of sum / count does not reproduce (7x7 windows differ). int16 MEAN is a sum by
    depthwise convolution, requantized by a MUL (see `check_int16_mean`)."""
    if dtype_of(match["ifm"]) == "int16":
        return check_int16_mean(match)
    return check_sum(match)


def _mean_axes(match: Match) -> str:
    shape, axes = shape_of(match["ifm"]), list(reduced_axes(match))
    if len(shape) != 4 or axes != [1, 2]:
        return f"MEAN over axes {axes} of a {len(shape)}-D tensor; only height and width of a 4-D one"
    return ""


def check_int16_mean(match: Match) -> str:
    """int16 MEAN over height and width: the 32-bit sum of each channel times TFLite's multiplier of
    input / output scale with 1/count folded in (its right shift is at most 62). A left shift, which TFLite applies
    to the sum before multiplying, must keep the largest sum within 32 bits."""
    ifm_q, ofm_q = quant_of(match["ifm_dq"]), quant_of(match["quantize"])
    shape = shape_of(match["ifm"])

    def scale() -> str:
        count = shape[1] * shape[2]
        _, shift = sum_multiplier(match)
        if shift > 0 and (count << (15 + shift)) >= 1 << 31:
            real = np.float64(ifm_q.scalar_scale) / np.float64(ofm_q.scalar_scale)
            return (f"MEAN of {count} values with effective scale {real:.6g}; TFLite's left shift of the sum by"
                    f" {shift} could overflow 32 bits")
        return ""

    return first(
        lambda: _mean_axes(match),
        lambda: average_kernel(shape[1], shape[2]),
        scale,
    )


def check_reduce_extreme(match: Match) -> str:
    """REDUCE_MAX (REDUCE_MIN: of the inputs' bitwise complements, a table) is a max pool over the reduction
    window of the raw int8 values; TFLite requires the output to keep the input's quantization."""
    ifm_q, ofm_q = quant_of(match["ifm_dq"]), quant_of(match["quantize"])

    def same_quant() -> str:
        if (ifm_q.scalar_scale, ifm_q.scalar_zero_point) != (ofm_q.scalar_scale, ofm_q.scalar_zero_point):
            return f"{match.kind.upper()} with different input and output quantizations"
        return ""

    return first(lambda: _reduction(match, pool_kernel), same_quant)


ARG_MAX_DEPTH = 127  # the reversed index takes the low 7 bits below the value


def arg_min_max_tensors(match: Match) -> Tensors:
    """The int8 values (the indices are the NPU's own integers)."""
    yield feature_map(match["ifm"], "IFM")


def check_arg_min_max(match: Match) -> str:
    """int8 ARG_MAX (and ARG_MIN, on the values' complement) over the depth axis into int32 or int64 indices: each
    value shifted left by 7 bits with its reversed index below (so ties go to the first index), a max pool over the
    depth, and the index recovered from the low bits (int64 ones written as int32 pairs, the high word 0)."""
    shape = shape_of(match["ifm"])
    axis, index_dtype = int(match["arg"].attrs.axis) % len(shape), dtype_of(match["cast"])
    name = match.kind.upper()

    if axis != len(shape) - 1:
        return f"{name} over axis {axis} of a {len(shape)}-D tensor; only over the last (depth) axis"
    if shape[-1] > ARG_MAX_DEPTH:
        return f"{name} over {shape[-1]} values; the IFM depth must be at most {ARG_MAX_DEPTH}"
    if index_dtype not in ("int32", "int64"):
        return f"{name} with {index_dtype} indices; the NPU writes int32 ones (int64 as int32 pairs)"
    rows, high = int(np.prod(shape[:-1])), TENSOR_DIM_RANGE[1]
    return "" if rows <= high else f"{name} over {rows} rows (all but the depth axis); at most {high}"
