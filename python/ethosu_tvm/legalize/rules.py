"""One rule per composite kind: read the matched QDQ expressions, return the NPU primitive with integer parameters.

A rule gets the :class:`Match` of the composite, the Tensor each composite parameter carries, and the output Tensor.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np
from tvm import relax

from ..partition.npu_view import (
    broadcast_side,
    pack_view,
    permutation_of,
    reduced_axes,
    reduction_window,
    resize_factor,
    softmax_beta,
    sum_multiplier,
    transpose_conv_padding,
    transposed_ofm_shape,
    transposed_view,
)
from ..qdq.match import Match
from ..qdq.values import (
    Quant,
    const_value,
    dtype_of,
    is_const,
    prim_float,
    quant_of,
    shape_of,
    slice_parameters,
    table_reals,
)
from ..quantization import (
    ELEMENTWISE_INPUT_SHIFT,
    add_multipliers,
    conv_multipliers,
    fully_connected_multipliers,
    mul_multiplier,
    multiply_by_quantized_multiplier,
    leaky_relu_extreme,
    narrowing_mul,
    npu_scale_shift,
    per_channel_scale_shift,
    prelu_multipliers,
    quantize_value,
    sigmoid_input_rescale,
    reduced_scale_shift,
    squared_difference_multipliers,
    npu_interpolation_lut,
    softmax_exp_lut,
    softmax_int16_input_scaling,
    softmax_int16_tables,
    widening_fully_connected,
)
from .ops import (
    BinaryElementwise,
    Clamp,
    Concatenate,
    Conv2D,
    DepthwiseConv2D,
    Identity,
    NpuOp,
    Operand,
    Pad,
    Padding,
    Pooling,
    Requantize,
    Slice,
    Softmax,
    Tensor,
    Transpose,
    TransposeConv2D,
    Upscale,
)
from .lut import INT8_VALUES, lookup_table

INT8_RANGE = (-128, 127)
DTYPE_RANGES = {"int8": INT8_RANGE, "uint8": (0, 255), "int16": (-(1 << 15), (1 << 15) - 1)}
INT32_CLAMP = Clamp(-(1 << 31), (1 << 31) - 1)

Rule = Callable[[Match, dict, Tensor, str], NpuOp | tuple[NpuOp, ...]]


def _operand(tensor: Tensor, quant: Quant) -> Operand:
    return Operand(tensor, quant.scalar_zero_point, quant.scalar_scale)


def _raw(tensor: Tensor) -> Operand:
    """Pools and reshapes work on the raw int8 values: the frontend keeps no quantization around them."""
    return Operand(tensor, 0, 1.0)


def _int_clamp(match: Match, dtype: str = "int8") -> Clamp:
    """Bounds of the integer clip the frontend writes for a fused activation, within the range of `dtype` (that
    range when there is none)."""
    low, high = DTYPE_RANGES[dtype]
    clip = match.get("clip")
    if clip is None:
        return Clamp(low, high)
    return Clamp(max(low, round(prim_float(clip.args[1]))), min(high, round(prim_float(clip.args[2]))))


def _float_clamp(match: Match, ofm: Quant, dtype: str = "int8") -> Clamp:
    """Bounds of a float-domain fused activation (relu, or clip for RELU6/RELU_N1_TO_1), quantized as TFLite does,
    within the range of `dtype`."""
    scale, zero_point = ofm.scalar_scale, ofm.scalar_zero_point
    low, high = DTYPE_RANGES[dtype]
    if match.get("relu") is not None:
        low = max(low, quantize_value(0.0, scale, zero_point))
    elif match.get("float_clip") is not None:
        clip = match["float_clip"]
        low = max(low, quantize_value(prim_float(clip.args[1]), scale, zero_point))
        high = min(high, quantize_value(prim_float(clip.args[2]), scale, zero_point))
    return Clamp(low, high)


def _bias(match: Match, channels: int) -> np.ndarray:
    bias_dq = match.get("bias_dq")
    if bias_dq is None:
        return np.zeros(channels, dtype=np.int64)
    return np.asarray(const_value(bias_dq.args[0]), dtype=np.int64).reshape(channels)


def _requant(multipliers: np.ndarray, channels: int, rounding: str) -> Requantize:
    scale, shift = per_channel_scale_shift(np.broadcast_to(multipliers, (channels,)))
    return Requantize(scale, shift, rounding)


def _scaled(scale: int, shift: int, rounding: str = "TFL") -> Requantize:
    """One (scale, right shift) for every channel."""
    return Requantize(np.array([scale], dtype=np.int64), np.array([shift], dtype=np.int64), rounding)


def _unit(shift: int = 0, rounding: str = "TFL") -> Requantize:
    """A division by 2^shift (none by default) with `rounding`."""
    return _scaled(1, shift, rounding)


def _conv_requant(multipliers: np.ndarray, channels: int, ifm: Tensor) -> Requantize:
    """TFLite's conv rounding: int8 rounds twice (TFL); 16x8 reduces the multiplier to 16 bits and rounds once,
    half up (NATURAL)."""
    if ifm.dtype == "int16":
        return Requantize(*reduced_scale_shift(np.broadcast_to(multipliers, (channels,))), "NATURAL")
    return _requant(multipliers, channels, "TFL")


def conv2d(match: Match, tensors: dict, ofm: Tensor, source: str) -> NpuOp | tuple[NpuOp, ...]:
    """CONV_2D and DEPTHWISE_CONV_2D, int8 or 16x8 (int16 feature maps, int8 weights, int64 bias)."""
    conv = match["conv"]
    raw = np.asarray(const_value(match["weights"]))
    depthwise = match.kind == "depthwise_conv2d"
    # Conv weights arrive HWIO (transposed at import); depthwise ones as TFLite's [1, H, W, C·M].
    weights = raw[0].transpose(2, 0, 1)[..., np.newaxis] if depthwise else raw.transpose(3, 0, 1, 2)
    attrs = conv.attrs
    top, left, bottom, right = (int(p) for p in attrs.padding)
    window = dict(strides=tuple(int(s) for s in attrs.strides), dilation=tuple(int(d) for d in attrs.dilation),
                  padding=Padding(top, left, bottom, right))
    if not depthwise:
        return _convolution(Conv2D, match, tensors, ofm, source, weights, **window)
    if tensors[match["ifm"]].shape[-1] == weights.shape[0]:
        return _convolution(DepthwiseConv2D, match, tensors, ofm, source, weights, **window)
    return _depth_multiplied(match, tensors, ofm, source, weights, window)


# IFM channels up to which a depth multiplier is one convolution with block-diagonal weights: in the cost model
# (3x3 kernels, multiplier 2 to 4, U55-32 and U55-128) it takes 0.6x the cycles of repeating the channels and a
# depthwise convolution at 3 and 8 channels, 1.2x at 16 and 3x at 32 (its MACs grow with C², the repeat's with C).
BLOCK_DIAGONAL_CHANNELS = 8


def _depth_multiplied(match: Match, tensors: dict, ofm: Tensor, source: str, weights: np.ndarray,
                      window: dict) -> NpuOp | tuple[NpuOp, ...]:
    """A depth multiplier M over C channels (output channel o reads IFM channel o // M; the NPU's DEPTHWISE needs
    IFM depth = OFM depth). Up to `BLOCK_DIAGONAL_CHANNELS`, a convolution whose other weights are the weight zero
    point (centred 0), so its sums are the depthwise ones (C = 1: the depthwise weights, OHWI with I = 1). Beyond,
    a 1x1 convolution with one-hot weights and unit scale repeats each IFM channel M times (one product each, the
    same zero point in and out: exact), then a depthwise convolution over the C·M channels; each keeps its own
    per-channel scale either way."""
    ifm = tensors[match["ifm"]]
    channels_in, channels = ifm.shape[-1], weights.shape[0]
    reads = np.arange(channels) // (channels // channels_in)
    if channels_in <= BLOCK_DIAGONAL_CHANNELS:
        full = np.full(weights.shape[:3] + (channels_in,), quant_of(match["weights_dq"]).scalar_zero_point,
                       dtype=weights.dtype)
        full[np.arange(channels), :, :, reads] = weights[..., 0]
        return _convolution(Conv2D, match, tensors, ofm, source, full, **window)
    one_hot = np.zeros((channels, 1, 1, channels_in), dtype=np.int8)
    one_hot[np.arange(channels), 0, 0, reads] = 1
    ifm_q = quant_of(match["ifm_dq"])
    repeated = Tensor(f"{ofm.name}_repeated", ifm.shape[:3] + (channels,), ifm.dtype)
    repeat = Conv2D(ifm=_operand(ifm, ifm_q), ofm=_operand(repeated, ifm_q), weights=one_hot, weight_zero_point=0,
                    bias=np.zeros(channels, dtype=np.int64), requant=_conv_requant(np.ones(1), channels, ifm),
                    clamp=Clamp(*DTYPE_RANGES[ifm.dtype]), source=source)
    return repeat, _convolution(DepthwiseConv2D, match, {**tensors, match["ifm"]: repeated}, ofm, source, weights,
                                **window)


def transpose_conv(match: Match, tensors: dict, ofm: Tensor, source: str) -> NpuOp:
    """A stride-1 convolution with the kernel reversed in height and width, over the IFM itself (stride 1) or the
    IFM upscaled by 2 with zeros (stride 2, or 1x2 over one row, whose one-row kernel reads only the upscaled first
    row; partitioning admits no other), padded as `transpose_conv_padding` says."""
    raw = np.asarray(const_value(match["weights"]))  # IOHW, transposed at import from TFLite's OHWI
    weights = raw.transpose(1, 2, 3, 0)[:, ::-1, ::-1, :]
    op_type = Conv2D if tuple(int(s) for s in match["conv"].attrs.strides) == (1, 1) else TransposeConv2D
    return _convolution(op_type, match, tensors, ofm, source, weights, strides=(1, 1), dilation=(1, 1),
                        padding=Padding(*transpose_conv_padding(match)))


def _convolution(op_type: type[Conv2D], match: Match, tensors: dict, ofm: Tensor, source: str, weights: np.ndarray,
                 **window) -> Conv2D:
    """A convolution primitive with OHWI `weights` and the requantization TFLite's CONV_2D does (_conv_requant);
    `window` holds its strides, dilation and padding."""
    ifm_q, w_q, ofm_q = quant_of(match["ifm_dq"]), quant_of(match["weights_dq"]), quant_of(match["quantize"])
    channels = weights.shape[0]
    return op_type(
        ifm=_operand(tensors[match["ifm"]], ifm_q),
        ofm=_operand(ofm, ofm_q),
        weights=np.ascontiguousarray(weights.astype(np.int8)),
        weight_zero_point=w_q.scalar_zero_point,
        bias=_bias(match, channels),
        requant=_conv_requant(conv_multipliers(ifm_q.scalar_scale, w_q.scale, ofm_q.scalar_scale), channels,
                              tensors[match["ifm"]]),
        clamp=_int_clamp(match, ofm.dtype),
        source=source,
        **window,
    )


def fully_connected(match: Match, tensors: dict, ofm: Tensor, source: str) -> NpuOp:
    """A 1x1 convolution over the (1, 1, batch, inputs) IFM; LiteRT's FC rounds once, so NATURAL rounding, with the
    32-bit multiplier for 16x8 too. An int8 → int16 one (an integer LSTM's gate) rounds twice (TFL), as TFLite
    Micro's LSTM does."""
    ifm_q, w_q, ofm_q = quant_of(match["ifm_dq"]), quant_of(match["weights_dq"]), quant_of(match["quantize"])
    raw = np.asarray(const_value(match["weights"]))  # TFLite [units, inputs]
    channels = raw.shape[0]
    multipliers = fully_connected_multipliers(ifm_q.scalar_scale, w_q.scale, ofm_q.scalar_scale)
    return Conv2D(
        ifm=_operand(tensors[match["ifm"]], ifm_q),
        ofm=_operand(ofm, ofm_q),
        weights=np.ascontiguousarray(raw.reshape(channels, 1, 1, raw.shape[1]).astype(np.int8)),
        weight_zero_point=w_q.scalar_zero_point,
        bias=_bias(match, channels),
        requant=_requant(multipliers, channels,
                         "TFL" if widening_fully_connected(tensors[match["ifm"]].dtype, ofm.dtype) else "NATURAL"),
        clamp=_int_clamp(match, ofm.dtype),
        source=source,
    )


def batch_matmul(match: Match, tensors: dict, ofm: Tensor, source: str) -> NpuOp | tuple[NpuOp, ...]:
    """A constant right-hand matrix (partitioning checks) as a 1x1 convolution over the left-hand rows (the NHWC
    view of [..., rows, depth] has a pixel per row); LiteRT's BATCH_MATMUL computes its multiplier in double and
    rounds twice, as its convolutions do."""
    lhs_q, rhs_q, ofm_q = quant_of(match["lhs_dq"]), quant_of(match["rhs_dq"]), quant_of(match["quantize"])
    if not is_const(match["rhs"]):
        return _run_time_batch_matmul(match, tensors, ofm, source)
    raw = np.asarray(const_value(match["rhs"]))
    matrix = raw.reshape(raw.shape[-2:])
    weights = matrix if match.get("rhs_t") is not None else matrix.T  # [columns, depth]
    channels = weights.shape[0]
    return Conv2D(
        ifm=_operand(tensors[match["lhs"]], lhs_q),
        ofm=_operand(ofm, ofm_q),
        weights=np.ascontiguousarray(weights.reshape(channels, 1, 1, weights.shape[1]).astype(np.int8)),
        weight_zero_point=rhs_q.scalar_zero_point,
        bias=np.zeros(channels, dtype=np.int64),
        requant=_requant(conv_multipliers(lhs_q.scalar_scale, rhs_q.scale, ofm_q.scalar_scale), channels, "TFL"),
        source=source,
    )


def _run_time_batch_matmul(match: Match, tensors: dict, ofm: Tensor, source: str) -> tuple[NpuOp, ...]:
    """Both operands at run time, as Vela runs it: per output column, the right-hand column (a slice, viewed as a
    row of depth values) times every left-hand row (IFM2 broadcast over the rows) into int32, the NPU subtracting
    both zero points; then a REDUCE_SUM over the depth scaled by LiteRT's multiplier (TFL rounding is its double
    rounding, see tests/sim/test_matmul_by_rows.py); the columns concatenated along the depth."""
    lhs_q, rhs_q, ofm_q = quant_of(match["lhs_dq"]), quant_of(match["rhs_dq"]), quant_of(match["quantize"])
    lhs, rhs = tensors[match["lhs"]], tensors[match["rhs"]]
    _, batches, rows, depth = lhs.shape
    transposed = match.get("rhs_t") is not None  # rhs is [columns, depth] (adj_y)
    columns = rhs.shape[2] if transposed else rhs.shape[3]
    unit = _unit()
    scaling = _single(float(conv_multipliers(lhs_q.scalar_scale, rhs_q.scale, ofm_q.scalar_scale)[0]))
    ops: list[NpuOp] = []
    sums = []
    for column in range(columns):
        name = f"{ofm.name}_column{column}"
        row = Tensor(f"{name}_rhs", (1, batches, 1, depth), rhs.dtype)
        if transposed:
            ops.append(Slice(ifm=_raw(rhs), ofm=_raw(row), begin=(0, 0, column, 0), source=source))
        else:  # the column's depth values, one per row, are the same bytes as one row of them
            strided = Tensor(f"{name}_rhs_column", (1, batches, depth, 1), rhs.dtype)
            ops.append(Slice(ifm=_raw(rhs), ofm=_raw(strided), begin=(0, 0, 0, column), source=source))
            ops.append(Identity(ifm=_raw(strided), ofm=_raw(row), source=source))
        products = Tensor(f"{name}_products", (1, batches, rows, depth), "int32")
        ops.append(BinaryElementwise(operator="MUL", ifm=_operand(lhs, lhs_q), ifm2=_operand(row, rhs_q),
                                     ofm=Operand(products, 0, 1.0), requant=unit, clamp=INT32_CLAMP,
                                     source=source))
        total = Operand(Tensor(f"{name}_sum", (1, batches, rows, 1), ofm.dtype), ofm_q.scalar_zero_point, 1.0)
        ops.append(Pooling(pooling_type="REDUCE_SUM", ifm=Operand(products, 0, 1.0), ofm=total, pool_shape=(1, 1),
                           clamp=_int_clamp(match, ofm.dtype), requant=scaling, source=source))
        sums.append(total)
    ops.append(Concatenate(inputs=tuple(_raw(t.tensor) for t in sums), ofm=_raw(ofm), axis=3, source=source))
    return tuple(ops)


def _pooling(pooling_type: str) -> Rule:
    def rule(match: Match, tensors: dict, ofm: Tensor, source: str) -> NpuOp:
        attrs = match["pool"].attrs
        top, left, bottom, right = (int(p) for p in attrs.padding)
        return Pooling(
            pooling_type=pooling_type,
            ifm=_raw(tensors[match["ifm"]]),
            ofm=_raw(ofm),
            pool_shape=tuple(int(k) for k in attrs.pool_size),
            strides=tuple(int(s) for s in attrs.strides),
            padding=Padding(top, left, bottom, right),
            clamp=_int_clamp(match, ofm.dtype),
            source=source,
        )

    return rule


def mean(match: Match, tensors: dict, ofm: Tensor, source: str) -> NpuOp | tuple[NpuOp, ...]:
    """int8 MEAN: a sum with MEAN's multiplier, as TFLite's QuantizedMeanOrSum (its reference kernels use it for
    every axis and scale); int16: a sum and a MUL (partitioning checks which)."""
    ifm = tensors[match["ifm"]]
    if ifm.dtype == "int16":
        return _requantized_mean(match, ifm, ofm, source)
    return reduce_sum(match, tensors, ofm, source)


def _times_multiplier(values: Operand, ofm: Operand, multiplier: int, shift: int, source: str) -> BinaryElementwise:
    """32-bit `values` times a 32-bit `multiplier` (a constant IFM2: the NPU applies only the right `shift` to a
    product of 32-bit operands), rounded as TFLite's MultiplyByQuantizedMultiplier (TFL), + the OFM zero point."""
    constant = Tensor(f"{ofm.tensor.name}_multiplier", (1, 1, 1, 1), "int32")
    return BinaryElementwise(
        operator="MUL", ifm=values, ifm2=Operand(constant, 0, 1.0), ofm=ofm, requant=_unit(shift),
        clamp=Clamp(*DTYPE_RANGES[ofm.tensor.dtype]), source=source,
        ifm2_constant=np.full((1, 1, 1, 1), multiplier, dtype=np.int32))


def _requantized_mean(match: Match, ifm: Tensor, ofm: Tensor, source: str) -> tuple[NpuOp, ...]:
    """int16 MEAN over H and W as TFLite's kernel computes it (and Vela emits it): the centred sum of each channel
    (a depthwise convolution with unit weights into 32 bits), times the multiplier that folds 1/count into
    input / output scale (`sum_multiplier`, see `_times_multiplier`)."""
    ifm_q, ofm_q = quant_of(match["ifm_dq"]), quant_of(match["quantize"])
    _, height, width, channels = ifm.shape
    multiplier, shift = sum_multiplier(match)
    total = Operand(Tensor(f"{ofm.name}_sum", (1, 1, 1, channels), "int32"), 0, 1.0)
    summed = DepthwiseConv2D(
        ifm=_operand(ifm, ifm_q), ofm=total, weights=np.ones((channels, height, width, 1), dtype=np.int8),
        weight_zero_point=0, bias=np.zeros(channels, dtype=np.int64), requant=_unit(), clamp=INT32_CLAMP,
        source=source)
    return summed, _times_multiplier(total, _operand(ofm, ofm_q), multiplier, 31 - shift, source)


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
        ops.append(Transpose(ifm=_raw(ifm), ofm=_raw(transposed), view=swap, source=source))
        ifm = transposed
    if view != ifm.shape or lut is not None:
        viewed = Tensor(f"{ofm.name}_ifm_view", view, ifm.dtype)
        ops.append(Identity(ifm=_raw(ifm), ofm=_raw(viewed), lut=lut, source=source))
        ifm = viewed
    result = ofm if reduced_view == ofm.shape and lut is None else Tensor(f"{ofm.name}_view", reduced_view,
                                                                          ofm.dtype)
    ops.append(core(ifm, result, kernel))
    if result is not ofm:
        ops.append(Identity(ifm=_raw(result), ofm=_raw(ofm), lut=lut, source=source))
    return tuple(ops)


def reduce_sum(match: Match, tensors: dict, ofm: Tensor, source: str) -> tuple[NpuOp, ...]:
    """SUM (and int8 MEAN) as TFLite's QuantizedMeanOrSum: the sum of the centred inputs
    (a depthwise convolution with unit weights over the window, the IFM zero point subtracted by the hardware),
    times TFLite's multiplier with its rounding (TFL), plus the output zero point."""
    ifm_q, ofm_q = quant_of(match["ifm_dq"]), quant_of(match["quantize"])
    multiplier, shift = sum_multiplier(match)
    requant = _scaled(multiplier, 31 - shift)

    def core(ifm: Tensor, result: Tensor, kernel: tuple[int, int]) -> NpuOp:
        channels = ifm.shape[3]
        return DepthwiseConv2D(
            ifm=_operand(ifm, ifm_q), ofm=_operand(result, ofm_q),
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
        return Pooling(pooling_type="MAX", ifm=_raw(ifm), ofm=_raw(result), pool_shape=kernel, source=source)

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
        zeros = BinaryElementwise(operator="MUL", ifm=shaped, ifm2=int16("nothing", (1, 1, 1, 1)), ofm=_raw(high),
                                  requant=_unit(), clamp=INT32_CLAMP, source=source, ifm2_scalar=0)
        words = (zeros, Concatenate(inputs=(_raw(indices), _raw(high)), ofm=_raw(ofm), axis=3, source=source))
    else:
        words = ()
    return (
        DepthwiseConv2D(ifm=Operand(ifm, ifm_zero_point, 1.0), ofm=packed,
                        weights=np.full((depth, 1, 1, 1), weight, np.int8), weight_zero_point=weight_zero_point,
                        bias=np.arange(depth - 1, -1, -1, dtype=np.int64), requant=_unit(), clamp=int16_clamp,
                        source=source),
        Identity(ifm=packed, ofm=rows_view, source=source),
        Pooling(pooling_type="MAX", ifm=rows_view, ofm=best, pool_shape=(1, depth), clamp=int16_clamp,
                source=source),
        Identity(ifm=best, ofm=shaped, source=source),
        DepthwiseConv2D(ifm=shaped, ofm=low, weights=np.ones((channels, 1, 1, 1), np.int8), weight_zero_point=0,
                        bias=np.zeros(channels, dtype=np.int64), requant=_unit(7, "TRUNCATE"), clamp=int16_clamp,
                        source=source),
        BinaryElementwise(operator="MUL", ifm=low, ifm2=int16("times", (1, 1, 1, 1)), ofm=scaled, requant=_unit(),
                          clamp=int16_clamp, source=source, ifm2_scalar=128),
        BinaryElementwise(operator="SUB", ifm=scaled, ifm2=Operand(shaped.tensor, depth - 1, 1.0),
                          ofm=_raw(indices), requant=_unit(), clamp=INT32_CLAMP, source=source),
        *words,
    )


def cast(match: Match, tensors: dict, ofm: Tensor, source: str) -> NpuOp:
    """A widening CAST (partitioning checks): the raw integers times 1 into the wider type."""
    ifm = _raw(tensors[match["ifm"]])
    one = Operand(Tensor(f"{ofm.name}_one", (1, 1, 1, 1), ifm.tensor.dtype), 0, 1.0)
    clamp = Clamp(*DTYPE_RANGES[ofm.dtype]) if ofm.dtype in DTYPE_RANGES else INT32_CLAMP
    return BinaryElementwise(operator="MUL", ifm=ifm, ifm2=one, ofm=_raw(ofm), requant=_unit(), clamp=clamp,
                             source=source, ifm2_scalar=1)


def _single(real: float) -> Requantize:
    return _scaled(*npu_scale_shift(real))


def _binary(operator: str) -> Rule:
    def rule(match: Match, tensors: dict, ofm: Tensor, source: str) -> NpuOp:
        lhs_q, rhs_q, ofm_q = quant_of(match["lhs_dq"]), quant_of(match["rhs_dq"]), quant_of(match["quantize"])
        s1, s2, so = (np.float64(q.scalar_scale) for q in (lhs_q, rhs_q, ofm_q))
        params: dict = dict(clamp=_float_clamp(match, ofm_q, ofm.dtype))
        if operator in ("ADD", "SUB"):
            input_shift = ELEMENTWISE_INPUT_SHIFT[ofm.dtype]
            lhs, rhs, total = add_multipliers(s1, s2, so, input_shift)
            params.update(ifm_requant=_single(lhs), ifm2_requant=_single(rhs), requant=_single(total),
                          input_shift=input_shift)
        elif operator == "MUL":
            in_double = narrowing_mul(dtype_of(match["lhs"]), ofm.dtype)
            params.update(requant=_single(mul_multiplier(s1, s2, so, in_double)))
        if is_const(match["lhs"]) or is_const(match["rhs"]):
            return _with_constant(operator, match, tensors, ofm, source, params)
        return BinaryElementwise(
            operator=operator,
            ifm=_operand(_tensor_of(match["lhs"], tensors), lhs_q),
            ifm2=_operand(_tensor_of(match["rhs"], tensors), rhs_q),
            ofm=_operand(ofm, ofm_q),
            source=source,
            **params,
        )

    return rule


def _with_constant(operator: str, match: Match, tensors: dict, ofm: Tensor, source: str, params: dict) -> NpuOp:
    """A constant operand as IFM2: one element as the NPU's IFM2 scalar, more as a tensor of the constant region.
    On the left it is IFM2 with reversed operands (each operand keeps its own rescaling)."""
    reversed_operands = is_const(match["lhs"])
    constant, feature_map = ("lhs", "rhs") if reversed_operands else ("rhs", "lhs")
    if reversed_operands and "ifm_requant" in params:
        params = dict(params, ifm_requant=params["ifm2_requant"], ifm2_requant=params["ifm_requant"])
    ifm = _tensor_of(match[feature_map], tensors)
    ifm2, constant_params = _constant_ifm2(np.asarray(const_value(match[constant])), ofm)
    return BinaryElementwise(
        operator=operator,
        ifm=_operand(ifm, quant_of(match[f"{feature_map}_dq"])),
        ifm2=_operand(ifm2, quant_of(match[f"{constant}_dq"])),
        ofm=_operand(ofm, quant_of(match["quantize"])),
        source=source,
        reversed_operands=reversed_operands,
        **params,
        **constant_params,
    )


def _constant_ifm2(value: np.ndarray, ofm: Tensor) -> tuple[Tensor, dict]:
    """The IFM2 tensor of a constant operand and the BinaryElementwise fields carrying its values: a one-element
    constant as the IFM2 scalar, a larger one (4-D) as a tensor of the constant region."""
    if value.size == 1:
        scalar = int(value.reshape(-1)[0])
        return Tensor(f"{ofm.name}_scalar", (1, 1, 1, 1), str(value.dtype)), dict(ifm2_scalar=scalar)
    shape = (1,) * (4 - value.ndim) + value.shape
    return Tensor(f"{ofm.name}_ifm2", shape, str(value.dtype)), dict(ifm2_constant=value.reshape(shape))


def prelu(match: Match, tensors: dict, ofm: Tensor, source: str) -> tuple[NpuOp, ...]:
    """PRELU as four int8 operations. TFLite: x ≥ zp_in gives (x − zp_in) requantized, below it gives
    (x − zp_in)·(alpha − zp_alpha) requantized; + zp_out. A table gives the first branch and −128 below zp_in;
    MIN(x, zp_in) times alpha gives the second (zp_out from x ≥ zp_in); their MAX is PRELU, as the first branch
    is at least zp_out where it applies."""
    ifm_q, alpha_q, ofm_q = quant_of(match["ifm_dq"]), quant_of(match["alpha_dq"]), quant_of(match["quantize"])
    ifm, zp_in, zp_out = tensors[match["ifm"]], ifm_q.scalar_zero_point, ofm_q.scalar_zero_point
    positive_real, negative_real = prelu_multipliers(ifm_q.scalar_scale, alpha_q.scalar_scale, ofm_q.scalar_scale)
    positive_values = np.clip(multiply_by_quantized_multiplier(INT8_VALUES - zp_in, positive_real) + zp_out,
                              *INT8_RANGE)
    table = np.where(INT8_VALUES >= zp_in, positive_values, INT8_RANGE[0]).astype(np.int8)
    positive, below, negative = (Tensor(f"{ofm.name}_{part}", ofm.shape, "int8")
                                 for part in ("positive", "below", "negative"))
    zero, zero_params = _constant_ifm2(np.array(zp_in, np.int8), below)
    alpha, alpha_params = _constant_ifm2(np.asarray(const_value(match["alpha"])), negative)
    return (
        Identity(ifm=_raw(ifm), ofm=_raw(positive), lut=table, source=source),
        BinaryElementwise(operator="MIN", ifm=_operand(ifm, ifm_q), ifm2=_operand(zero, ifm_q),
                          ofm=_operand(below, ifm_q), source=source, **zero_params),
        BinaryElementwise(operator="MUL", ifm=_operand(below, ifm_q), ifm2=_operand(alpha, alpha_q),
                          ofm=_operand(negative, ofm_q), requant=_single(negative_real), source=source,
                          **alpha_params),
        BinaryElementwise(operator="MAX", ifm=_operand(positive, ofm_q), ifm2=_operand(negative, ofm_q),
                          ofm=_operand(ofm, ofm_q), source=source),
    )


def squared_difference(match: Match, tensors: dict, ofm: Tensor, source: str) -> tuple[NpuOp, ...]:
    """SQUARED_DIFFERENCE as five operations on 32-bit intermediates, TFLite's arithmetic step by step: each operand
    centred, times 2^7 (an IFM2 scalar 127 of zero point −1) and rescaled (TFL rounding is TFLite's
    MultiplyByQuantizedMultiplier); their difference; its square; that times the output multiplier (a 32-bit constant
    IFM2, see `_times_multiplier`) shifted, + zp_out."""
    lhs_q, rhs_q, ofm_q = quant_of(match["lhs_dq"]), quant_of(match["rhs_dq"]), quant_of(match["quantize"])
    lhs_real, rhs_real, out_real = squared_difference_multipliers(lhs_q.scalar_scale, rhs_q.scalar_scale,
                                                                 ofm_q.scalar_scale)
    unit = _unit()

    def int32(name: str, shape) -> Operand:
        return Operand(Tensor(f"{ofm.name}_{name}", shape, "int32"), 0, 1.0)

    def rescaled(role: str, real: float) -> BinaryElementwise:
        ifm = _tensor_of(match[role], tensors)
        shift = Operand(Tensor(f"{ofm.name}_{role}_shift", (1, 1, 1, 1), "int8"), -1, 1.0)  # 127 − (−1) = 2^7
        return BinaryElementwise(operator="MUL", ifm=_operand(ifm, quant_of(match[f"{role}_dq"])), ifm2=shift,
                                 ofm=int32(role, ifm.shape), requant=_single(real), clamp=INT32_CLAMP, source=source,
                                 ifm2_scalar=127)

    lhs, rhs = rescaled("lhs", lhs_real), rescaled("rhs", rhs_real)
    difference = BinaryElementwise(operator="SUB", ifm=lhs.ofm, ifm2=rhs.ofm, ofm=int32("difference", ofm.shape),
                                   requant=unit, clamp=INT32_CLAMP, source=source)
    square = BinaryElementwise(operator="MUL", ifm=difference.ofm, ifm2=difference.ofm,
                               ofm=int32("square", ofm.shape), requant=unit, clamp=INT32_CLAMP, source=source)
    output = _times_multiplier(square.ofm, _operand(ofm, ofm_q), *npu_scale_shift(out_real), source)
    return lhs, rhs, difference, square, output


def _tensor_of(expr, tensors: dict) -> Tensor:
    if isinstance(expr, relax.Var) and expr in tensors:
        return tensors[expr]
    raise LegalizeError(f"elementwise operand {type(expr).__name__} is not a feature map (partitioning rejects these)")


class LegalizeError(ValueError):
    """A composite the legalizer cannot turn into an NPU primitive (partitioning should have kept it on the host)."""


def npu_shape(shape: tuple[int, ...]) -> tuple[int, int, int, int]:
    """The 4-D NHWC shape the NPU uses for a tensor of rank ≤ 4 (leading 1s)."""
    if len(shape) > 4:
        raise LegalizeError(f"a {len(shape)}-D tensor cannot be an NPU feature map")
    return (1,) * (4 - len(shape)) + tuple(shape)


def reshape(match: Match, tensors: dict, ofm: Tensor, source: str) -> NpuOp:
    return Identity(ifm=_raw(tensors[match["ifm"]]), ofm=_raw(ofm), source=source)


def requantize(match: Match, tensors: dict, ofm: Tensor, source: str) -> NpuOp:
    """int8 QUANTIZE is a table; int16 and uint8 ones a 1x1 average pool of the centred IFM, scaled by TFLite's
    multiplier of input / output scale (computed in double) with its double rounding (TFL)."""
    if ofm.dtype == tensors[match["ifm"]].dtype == "int8":
        return table(match, tensors, ofm, source)
    ifm_q, ofm_q = quant_of(match["ifm_dq"]), quant_of(match["quantize"])
    return Pooling(
        pooling_type="AVG",
        ifm=_operand(tensors[match["ifm"]], ifm_q),
        ofm=_operand(ofm, ofm_q),
        pool_shape=(1, 1),
        clamp=Clamp(*DTYPE_RANGES[ofm.dtype]),
        source=source,
        requant=_single(np.float64(ifm_q.scalar_scale) / np.float64(ofm_q.scalar_scale)),
    )


def table(match: Match, tensors: dict, ofm: Tensor, source: str) -> NpuOp:
    """A unary int8 function as an identity through a lookup table (the table holds all the arithmetic)."""
    return Identity(ifm=_raw(tensors[match["ifm"]]), ofm=_raw(ofm), lut=lookup_table(match), source=source)


def leaky_relu(match: Match, tensors: dict, ofm: Tensor, source: str) -> NpuOp | tuple[NpuOp, ...]:
    """int8: a table. int16: the input times 1 (an IFM2 scalar) requantized by each branch's multiplier, then the
    MAX or MIN of the two, which partitioning checked is TFLite's choice by sign on every int16 value; as Vela,
    with equal scales the identity branch is the input itself."""
    if ofm.dtype == "int8":
        return table(match, tensors, ofm, source)
    ofm_q = quant_of(match["quantize"])
    ifm = _operand(tensors[match["ifm"]], quant_of(match["ifm_dq"]))
    identity, negative = table_reals(match)
    clamp = Clamp(*DTYPE_RANGES["int16"])

    def branch(name: str, real: float) -> BinaryElementwise:
        one = Operand(Tensor(f"{ofm.name}_{name}_one", (1, 1, 1, 1), "int16"), 0, 1.0)
        return BinaryElementwise(operator="MUL", ifm=ifm, ifm2=one,
                                 ofm=_operand(Tensor(f"{ofm.name}_{name}", ofm.shape, "int16"), ofm_q),
                                 requant=_single(real), clamp=clamp, source=source, ifm2_scalar=1)

    alpha = branch("alpha", negative)
    if identity == 1.0:
        ops, kept = (alpha,), _operand(ifm.tensor, ofm_q)
    else:
        kept_op = branch("identity", identity)
        ops, kept = (alpha, kept_op), kept_op.ofm
    return (*ops, BinaryElementwise(operator=leaky_relu_extreme(identity, negative), ifm=kept, ifm2=alpha.ofm,
                                    ofm=_operand(ofm, ofm_q), clamp=clamp, source=source))


BUILT_IN_FUNCTIONS = {"tanh": "TANH", "logistic": "SIGMOID"}


def sigmoid_family(match: Match, tensors: dict, ofm: Tensor, source: str) -> NpuOp:
    """int8 TANH and LOGISTIC are tables; int16 ones the NPU's built-in functions of the input rescaled as TFLite
    rescales it (one rounding, half up)."""
    if ofm.dtype == "int8":
        return table(match, tensors, ofm, source)
    ifm_q = quant_of(match["ifm_dq"])
    multiplier, shift = sigmoid_input_rescale(ifm_q.scalar_scale)
    return Identity(
        ifm=_operand(tensors[match["ifm"]], ifm_q),
        ofm=_operand(ofm, quant_of(match["quantize"])),
        source=source,
        function=BUILT_IN_FUNCTIONS[match.kind],
        input_scale=_scaled(multiplier, shift),
    )


def softmax(match: Match, tensors: dict, ofm: Tensor, source: str) -> NpuOp:
    """int8: the exps as a table over the input differences; the rest of the algorithm is fixed (see ops.Softmax).
    int16: TFLite's two interpolation tables as NPU LUTs and the input differences' rescale."""
    ifm_q = quant_of(match["ifm_dq"])
    ifm, ofm_operand = _operand(tensors[match["ifm"]], ifm_q), _operand(ofm, quant_of(match["quantize"]))
    beta = softmax_beta(match)
    if ifm.tensor.dtype != "int16":
        return Softmax(ifm=ifm, ofm=ofm_operand, exp_lut=softmax_exp_lut(beta, ifm_q.scalar_scale), source=source)
    multiplier, left_shift = softmax_int16_input_scaling(beta, ifm_q.scalar_scale)
    exps, reciprocals = softmax_int16_tables()
    return Softmax(ifm=ifm, ofm=ofm_operand, exp_lut=npu_interpolation_lut(exps), source=source,
                   input_rescale=(multiplier, 31 - left_shift), reciprocal_lut=npu_interpolation_lut(reciprocals))


def concatenation(match: Match, tensors: dict, ofm: Tensor, source: str) -> NpuOp:
    """The inputs share the output's quantization (partitioning checks), so the raw integers are copied; the axis
    is counted in the 4-D NHWC shape (leading 1s)."""
    concat = match["concat"]
    rank = len(shape_of(concat))
    count = len(concat.args[0].fields)
    return Concatenate(
        inputs=tuple(_raw(tensors[match[f"input{i}"]]) for i in range(count)),
        ofm=_raw(ofm),
        axis=int(concat.attrs.axis) % rank + 4 - rank,
        source=source,
    )


def ofm_type(match: Match, var: relax.Var) -> tuple[tuple[int, int, int, int], str]:
    """The 4-D shape and element type a composite's output is written in (the same bytes): PACK's view of its OFM
    (see `pack_view`); int64 ARG_MAX indices as int32 pairs, each index then 0 (little-endian, as the NPU writes no
    64-bit values); a TRANSPOSE's with its batch merged into its height (`transposed_ofm_shape`); other outputs' own
    shapes in NHWC."""
    if match.kind == "transpose":
        return transposed_ofm_shape(shape_of(var)), dtype_of(var)
    if match.kind == "pack":
        concat = match["concat"]
        return pack_view(shape_of(concat), int(concat.attrs.axis) % len(shape_of(concat)))[0], dtype_of(var)
    if match.kind in ("arg_max", "arg_min") and dtype_of(var) == "int64":
        return npu_shape(shape_of(var) + (2,)), "int32"
    return npu_shape(shape_of(var)), dtype_of(var)


def pack(match: Match, tensors: dict, ofm: Tensor, source: str) -> tuple[NpuOp, ...]:
    """A concatenation along the new axis of the inputs seen with that axis (extent 1), in the OFM's view: an input
    whose own 4-D shape differs is first copied into that shape (the same bytes)."""
    concat = match["concat"]
    rank = len(shape_of(concat))
    _, axis = pack_view(shape_of(concat), int(concat.attrs.axis) % rank)
    slot = tuple(1 if i == axis else extent for i, extent in enumerate(ofm.shape))
    reshapes, inputs = [], []
    for i in range(len(concat.args[0].fields)):
        tensor = tensors[match[f"input{i}"]]
        if tensor.shape != slot:
            viewed = Tensor(f"{ofm.name}_input{i}", slot, tensor.dtype)
            reshapes.append(Identity(ifm=_raw(tensor), ofm=_raw(viewed), source=source))
            tensor = viewed
        inputs.append(_raw(tensor))
    return (*reshapes, Concatenate(inputs=tuple(inputs), ofm=_raw(ofm), axis=axis, source=source))


def pad(match: Match, tensors: dict, ofm: Tensor, source: str) -> NpuOp:
    """PAD and PADV2 (constant mode: partitioning checks) on the raw integers; the padding before each axis, in the
    4-D NHWC shape."""
    call = match["pad"]
    widths = [int(w) for w in call.attrs.pad_width]
    before = (0,) * (4 - len(widths) // 2) + tuple(widths[0::2])
    return Pad(ifm=_raw(tensors[match["ifm"]]), ofm=_raw(ofm), before=before, value=int(float(call.attrs.pad_value)),
               source=source)


def strided_slice(match: Match, tensors: dict, ofm: Tensor, source: str) -> NpuOp | tuple[NpuOp, ...]:
    """SLICE, STRIDED_SLICE and the outputs of SPLIT, SPLIT_V and UNPACK (strides on height and width only:
    partitioning checks), in 4-D NHWC. When axes shrink or appear, the sliced box is the OFM's bytes in another
    shape: the slice writes it, and a reshape copies it, unless both shapes are the same in 4-D."""
    call = match["slice"]
    _, begin, strides = slice_parameters(call)
    sliced = npu_shape(shape_of(call))
    ifm = tensors[match["ifm"]]
    begin_4d = (0,) * (4 - len(begin)) + begin
    strides_hw = ((1,) * (4 - len(strides)) + strides)[1:3]
    if sliced == ofm.shape:
        return Slice(ifm=_raw(ifm), ofm=_raw(ofm), begin=begin_4d, strides=strides_hw, source=source)
    box = Tensor(f"{ofm.name}_sliced", sliced, ofm.dtype)
    return (Slice(ifm=_raw(ifm), ofm=_raw(box), begin=begin_4d, strides=strides_hw, source=source),
            Identity(ifm=_raw(box), ofm=_raw(ofm), source=source))


def _upscaled(ifm: Tensor, factor: int, name: str, source: str) -> tuple[list[NpuOp], Tensor]:
    """The NPU's NEAREST upscaling by 2 repeated: `ifm` with each element in a `factor` x `factor` block."""
    ops, upscaled = [], ifm
    _, height, width, depth = ifm.shape
    while upscaled.shape[1] < factor * height:
        scale = 2 * upscaled.shape[1] // height
        previous, upscaled = upscaled, Tensor(f"{name}_upscaled{scale}", (1, scale * height, scale * width, depth),
                                              ifm.dtype)
        ops.append(Upscale(ifm=_raw(previous), ofm=_raw(upscaled), source=source))
    return ops, upscaled


def _resize(match: Match, tensors: dict, ofm: Tensor) -> tuple[Tensor, str, int]:
    """The IFM, the coordinate transformation and the factor k the partitioning admitted."""
    ifm = tensors[match["ifm"]]
    transform = str(match["resize"].attrs.coordinate_transformation_mode)
    return ifm, transform, resize_factor(ifm.shape, ofm.shape, transform == "align_corners")


def _broadcast(ifm: Tensor, ofm: Tensor, source: str) -> tuple[NpuOp, ...]:
    """A 1x1 IFM resized to the OFM's size, every output its one pixel (TFLite's nearest neighbour, and its bilinear
    weights summing to one): the pixel upscaled until it covers the OFM, then the OFM's box of it."""
    upscales, upscaled = _upscaled(ifm, broadcast_side(ofm.shape), ofm.name, source)
    if upscaled.shape == ofm.shape:
        return (*upscales[:-1], replace(upscales[-1], ofm=_raw(ofm)))
    return (*upscales, Slice(ifm=_raw(upscaled), ofm=_raw(ofm), begin=(0, 0, 0, 0), source=source))


def resize_nearest_neighbor(match: Match, tensors: dict, ofm: Tensor, source: str) -> NpuOp | tuple[NpuOp, ...]:
    """By k = 2, 4 or 8 (partitioning checks): output (y, x) reads (y // k, x // k), with and without half-pixel
    centres: the IFM upscaled by k. With corners aligned it reads round(y / k), ties up: the IFM upscaled by k
    from row and column k / 2 on. The same size is a copy; a 1x1 IFM is broadcast."""
    ifm, transform, factor = _resize(match, tensors, ofm)
    if factor == 0:
        return _broadcast(ifm, ofm, source)
    if factor == 1:
        return Identity(ifm=_raw(ifm), ofm=_raw(ofm), source=source)
    if transform != "align_corners":
        upscales, _ = _upscaled(ifm, factor // 2, ofm.name, source)
        last = upscales[-1].ofm.tensor if upscales else ifm
        return (*upscales, Upscale(ifm=_raw(last), ofm=_raw(ofm), source=source))
    upscales, upscaled = _upscaled(ifm, factor, ofm.name, source)
    half = factor // 2
    return (*upscales, Slice(ifm=_raw(upscaled), ofm=_raw(ofm), begin=(0, half, half, 0), source=source))


def resize_bilinear(match: Match, tensors: dict, ofm: Tensor, source: str) -> NpuOp | tuple[NpuOp, ...]:
    """Bilinear by k = 2, 4 or 8, or to (H-1)·k+1 x (W-1)·k+1 with corners aligned (partitioning checks), as an
    average pool of the IFM upscaled by NEAREST, on the raw integers: the pool's rounding (half away from zero) is
    TFLite's, and padding is no tap, so at the edges the input's last row and column are averaged alone, as TFLite
    clamps to them. The same size is a copy; a 1x1 IFM is broadcast.

    Output y weighs pixel y // k by 1 − j/k and the next by j/k (j = y mod k): a k x k pool of stride 1 over the IFM
    upscaled by k, with k − 1 rows and columns of padding after it (none with corners aligned, whose last output is
    the last pixel). With half-pixel centres (k = 2), by a quarter and three quarters: a 4x4 pool of stride 2 over
    the IFM upscaled by 4, from one row and column before it. The pool reads the last doubling itself (`upscale`),
    so only the copies before it take memory: none by 2."""
    ifm, transform, factor = _resize(match, tensors, ofm)
    if factor == 0:
        return _broadcast(ifm, ofm, source)
    if factor == 1:
        return Identity(ifm=_raw(ifm), ofm=_raw(ofm), source=source)
    if transform == "half_pixel":
        upscales, upscaled = _upscaled(ifm, 2, ofm.name, source)
        pool_shape, strides, padding = (4, 4), (2, 2), Padding(1, 1, 1, 1)
    else:
        upscales, upscaled = _upscaled(ifm, factor // 2, ofm.name, source)
        after = 0 if transform == "align_corners" else factor - 1
        pool_shape, strides, padding = (factor, factor), (1, 1), Padding(bottom=after, right=after)
    return (*upscales, Pooling(pooling_type="AVG", ifm=_raw(upscaled), ofm=_raw(ofm), pool_shape=pool_shape,
                               strides=strides, padding=padding, source=source, upscale=True))


def transpose(match: Match, tensors: dict, ofm: Tensor, source: str) -> NpuOp:
    """A permutation that keeps the order of the axes longer than 1 is a reshape; others swap rows and columns of
    their (A, B, C) view (partitioning checks there is one)."""
    ifm = tensors[match["ifm"]]
    view = transposed_view(shape_of(match["ifm"]), permutation_of(match))
    if view[:2] == (1, 1):
        return Identity(ifm=_raw(ifm), ofm=_raw(ofm), source=source)
    return Transpose(ifm=_raw(ifm), ofm=_raw(ofm), view=view, source=source)


RULES: dict[str, Rule] = {
    "conv2d": conv2d,
    "depthwise_conv2d": conv2d,
    "transpose_conv": transpose_conv,
    "fully_connected": fully_connected,
    "avg_pool2d": _pooling("AVG"),
    "max_pool2d": _pooling("MAX"),
    "add": _binary("ADD"),
    "subtract": _binary("SUB"),
    "multiply": _binary("MUL"),
    "minimum": _binary("MIN"),
    "maximum": _binary("MAX"),
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
