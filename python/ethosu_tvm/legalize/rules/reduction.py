"""Rules of the reductions: MEAN, SUM, REDUCE_MAX, REDUCE_MIN, ARG_MAX and ARG_MIN."""
from __future__ import annotations

import numpy as np

from ...partition.npu_view import reduced_axes, reduction_window, sum_multiplier
from ...qdq.match import Match
from ...qdq.values import dtype_of, quant_of, shape_of
from ..lut import INT8_VALUES
from ..ops import (
    BinaryElementwise,
    Clamp,
    Concatenate,
    DepthwiseConv2D,
    Identity,
    NpuOp,
    Operand,
    Pooling,
    Tensor,
    Transpose,
)
from .operands import DTYPE_RANGES, INT32_CLAMP, operand_of, raw_of, requant_of, shifted, times_multiplier


def mean(match: Match, tensors: dict, ofm: Tensor, source: str) -> NpuOp | tuple[NpuOp, ...]:
    """int8 MEAN: a sum with MEAN's multiplier, as TFLite's QuantizedMeanOrSum (its reference kernels use it for
    every axis and scale); int16: a sum and a MUL (partitioning checks which)."""
    ifm = tensors[match["ifm"]]
    if ifm.dtype == "int16":
        return _requantized_mean(match, ifm, ofm, source)
    return reduce_sum(match, tensors, ofm, source)


def _requantized_mean(match: Match, ifm: Tensor, ofm: Tensor, source: str) -> tuple[NpuOp, ...]:
    """int16 MEAN over H and W as TFLite's kernel computes it (and Vela emits it): the centred sum of each channel
    (a depthwise convolution with unit weights into 32 bits), times the multiplier that folds 1/count into
    input / output scale (`sum_multiplier`, see `times_multiplier`)."""
    ifm_q, ofm_q = quant_of(match["ifm_dq"]), quant_of(match["quantize"])
    _, height, width, channels = ifm.shape
    multiplier, shift = sum_multiplier(match)
    total = Operand(Tensor(f"{ofm.name}_sum", (1, 1, 1, channels), "int32"), 0, 1.0)
    summed = DepthwiseConv2D(
        ifm=operand_of(ifm, ifm_q), ofm=total, weights=np.ones((channels, height, width, 1), dtype=np.int8),
        weight_zero_point=0, bias=np.zeros(channels, dtype=np.int64), requant=shifted(), clamp=INT32_CLAMP,
        source=source)
    return summed, times_multiplier(total, operand_of(ofm, ofm_q), multiplier, 31 - shift, source)


def _reduction(match: Match, tensors: dict, ofm: Tensor, source: str, core, lut: np.ndarray | None = None
               ) -> tuple[NpuOp, ...]:
    """A reduction over its window (see `reduction_window`): `core(ifm, ofm, kernel)` reduces the IFM's view into the
    OFM's; a transpose first when the window needs one, copies (through `lut` when given) reshape the IFM into its
    view and the result into the OFM where their shapes differ, or where a table applies."""
    ifm = tensors[match["ifm"]]
    view, kernel, swap = reduction_window(shape_of(match["ifm"]), reduced_axes(match))
    reduced_view = (1, view[1] // kernel[0], view[2] // kernel[1], view[3])
    ops = []
    if swap is not None:
        transposed = Tensor(f"{ofm.name}_transposed", (1, swap[1], swap[0], swap[2]), ifm.dtype)
        ops.append(Transpose(ifm=raw_of(ifm), ofm=raw_of(transposed), view=swap, source=source))
        ifm = transposed
    if view != ifm.shape or lut is not None:
        viewed = Tensor(f"{ofm.name}_ifm_view", view, ifm.dtype)
        ops.append(Identity(ifm=raw_of(ifm), ofm=raw_of(viewed), lut=lut, source=source))
        ifm = viewed
    result = ofm if reduced_view == ofm.shape and lut is None else Tensor(f"{ofm.name}_view", reduced_view,
                                                                          ofm.dtype)
    ops.append(core(ifm, result, kernel))
    if result is not ofm:
        ops.append(Identity(ifm=raw_of(result), ofm=raw_of(ofm), lut=lut, source=source))
    return tuple(ops)


def reduce_sum(match: Match, tensors: dict, ofm: Tensor, source: str) -> tuple[NpuOp, ...]:
    """SUM (and int8 MEAN) as TFLite's QuantizedMeanOrSum: the sum of the centred inputs
    (a depthwise convolution with unit weights over the window, the IFM zero point subtracted by the hardware),
    times TFLite's multiplier with its rounding (TFL), plus the output zero point."""
    ifm_q, ofm_q = quant_of(match["ifm_dq"]), quant_of(match["quantize"])
    multiplier, shift = sum_multiplier(match)
    requant = requant_of(multiplier, 31 - shift)

    def core(ifm: Tensor, result: Tensor, kernel: tuple[int, int]) -> NpuOp:
        channels = ifm.shape[3]
        return DepthwiseConv2D(
            ifm=operand_of(ifm, ifm_q), ofm=operand_of(result, ofm_q),
            weights=np.ones((channels, *kernel, 1), dtype=np.int8), weight_zero_point=0,
            bias=np.zeros(channels, dtype=np.int64), requant=requant, clamp=Clamp(*DTYPE_RANGES[ofm.dtype]),
            source=source)

    return _reduction(match, tensors, ofm, source, core)


# REDUCE_MIN is the complement of the REDUCE_MAX of the complements: ~x = −1 − x reverses the order of int8 values.
_COMPLEMENT = (-1 - INT8_VALUES).astype(np.int8)


def reduce_extreme(match: Match, tensors: dict, ofm: Tensor, source: str) -> tuple[NpuOp, ...]:
    """REDUCE_MAX as a max pool of the raw values over the window; REDUCE_MIN the same between two tables of the
    bitwise complement."""

    def core(ifm: Tensor, result: Tensor, kernel: tuple[int, int]) -> NpuOp:
        return Pooling(pooling_type="MAX", ifm=raw_of(ifm), ofm=raw_of(result), pool_shape=kernel, source=source)

    return _reduction(match, tensors, ofm, source, core, _COMPLEMENT if match.kind == "reduce_min" else None)


def arg_min_max(match: Match, tensors: dict, ofm: Tensor, source: str) -> tuple[NpuOp, ...]:
    """int8 ARG_MAX over depth C ≤ 127 (partitioning checks) in seven operations on 16-bit values. A 1x1
    depthwise convolution packs v = 128·(x + 128) + (C − 1 − i) (IFM zero point −128, weight 127 of zero point
    −1, bias the reversed index): v orders as x does, equal values by lowest index. A copy views v as (rows, C), a
    max pool takes each row's m, a copy gives it the OFM's shape. m = 128·q + C − 1 − i with q = ⌊m / 128⌋ (a
    division by 2^7 with truncation, m ≥ 0), so i = 128·q − (m − (C − 1)): a MUL by 128, then a SUB whose IFM2
    zero point is C − 1, written as int32. int64 indices (an OFM of int32 pairs, see `ofm_type`) are those int32
    ones concatenated with zeros along the pairs' axis (a MUL by 0). ARG_MIN packs 128·(127 − x) instead (IFM zero
    point 127, weight −128): the first largest of the complement is the first smallest x."""
    ifm = tensors[match["ifm"]]
    depth = ifm.shape[3]
    rows = ifm.shape[1] * ifm.shape[2]
    int16_clamp = Clamp(*DTYPE_RANGES["int16"])
    pairs = dtype_of(match["cast"]) == "int64"
    indices = Tensor(f"{ofm.name}_low", ofm.shape[:3] + (1,), "int32") if pairs else ofm
    # (x − zero point)·(weight − its zero point): 128·(x + 128) for ARG_MAX, 128·(127 − x) for ARG_MIN
    ifm_zero_point, weight, weight_zero_point = (-128, 127, -1) if match.kind == "arg_max" else (127, -128, 0)

    def int16(name: str, shape: tuple[int, ...]) -> Operand:
        return Operand(Tensor(f"{ofm.name}_{name}", shape, "int16"), 0, 1.0)

    packed, rows_view, best, shaped, low, scaled = (
        int16("packed", ifm.shape), int16("rows", (1, rows, depth, 1)), int16("best", (1, rows, 1, 1)),
        int16("best_shaped", indices.shape), int16("quotient", indices.shape), int16("scaled", indices.shape))
    channels = indices.shape[3]
    if pairs:
        high = Tensor(f"{ofm.name}_high", indices.shape, "int32")
        zeros = BinaryElementwise(operator="MUL", ifm=shaped, ifm2=int16("nothing", (1, 1, 1, 1)), ofm=raw_of(high),
                                  requant=shifted(), clamp=INT32_CLAMP, source=source, ifm2_scalar=0)
        words = (zeros, Concatenate(inputs=(raw_of(indices), raw_of(high)), ofm=raw_of(ofm), axis=3, source=source))
    else:
        words = ()
    return (
        DepthwiseConv2D(ifm=Operand(ifm, ifm_zero_point, 1.0), ofm=packed,
                        weights=np.full((depth, 1, 1, 1), weight, np.int8), weight_zero_point=weight_zero_point,
                        bias=np.arange(depth - 1, -1, -1, dtype=np.int64), requant=shifted(), clamp=int16_clamp,
                        source=source),
        Identity(ifm=packed, ofm=rows_view, source=source),
        Pooling(pooling_type="MAX", ifm=rows_view, ofm=best, pool_shape=(1, depth), clamp=int16_clamp,
                source=source),
        Identity(ifm=best, ofm=shaped, source=source),
        DepthwiseConv2D(ifm=shaped, ofm=low, weights=np.ones((channels, 1, 1, 1), np.int8), weight_zero_point=0,
                        bias=np.zeros(channels, dtype=np.int64), requant=shifted(7, "TRUNCATE"), clamp=int16_clamp,
                        source=source),
        BinaryElementwise(operator="MUL", ifm=low, ifm2=int16("times", (1, 1, 1, 1)), ofm=scaled, requant=shifted(),
                          clamp=int16_clamp, source=source, ifm2_scalar=128),
        BinaryElementwise(operator="SUB", ifm=scaled, ifm2=Operand(shaped.tensor, depth - 1, 1.0),
                          ofm=raw_of(indices), requant=shifted(), clamp=INT32_CLAMP, source=source),
        *words,
    )
