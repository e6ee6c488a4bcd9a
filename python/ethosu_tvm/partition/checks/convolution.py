"""Checks of the operators with weights: convolutions, transposed convolutions, fully connected layers and
batch matrix products.
"""
from __future__ import annotations

import numpy as np

from ...qdq.match import Match
from ...qdq.values import Quant, const_value, dtype_of, is_const, quant_of, shape_of
from ...quantization import (
    conv_multipliers,
    fully_connected_multipliers,
    per_channel_scale_shift,
    reduced_scale_shift,
    shifts_in_range,
    widening_fully_connected,
)
from ..npu_view import transpose_conv_padding
from .arithmetic import centred_magnitude, scalar_scales, scale_range, wrapping_left_shifts
from .generic import Tensors, activation, feature_map, first, quantized_io, stride_limit

MAX_DILATED_KERNEL_HEIGHT = 64
MAX_DILATED_KERNEL_AREA = 64 * 64
MAX_WEIGHT_SUM = 127 * 65536
# Convolutions and fully connected layers: int8, or TFLite's 16x8 kernels (int16 activations, int8 weights).
WEIGHTED_DTYPES = ("int8", "int16")


def _weights(weights: np.ndarray, zero_point: np.ndarray, axes: tuple[int, ...]) -> str:
    """The sum of |w - zp| over one output channel must fit the NPU's accumulator limit."""
    centred = np.abs(weights.astype(np.int64) - zero_point.reshape(-1)[0])
    total = int(np.max(np.sum(centred, axis=axes)))
    if total > MAX_WEIGHT_SUM:
        return f"the sum of the weights is {total}; it cannot exceed {MAX_WEIGHT_SUM}"
    return ""


def _same_type(match: Match, widening: bool = False) -> str:
    """IFM and OFM of one type; `widening` also allows int8 → int16 (an integer LSTM's gates)."""
    types = dtype_of(match["ifm"]), dtype_of(match["quantize"])
    if types[0] == types[1] or (widening and widening_fully_connected(*types)):
        return ""
    return f"IFM type {types[0]} and OFM type {types[1]}; they must be the same"


def _worst_case(bound: np.ndarray, scale: np.ndarray, shift: np.ndarray, wide_product: bool) -> str:
    """Whether LiteRT's 16x8 arithmetic agrees with the NPU's exact one on every input, given per-channel bounds of
    |accumulator + bias|: LiteRT narrows the scaled value to int32, and with `wide_product` (fully connected)
    multiplies by the 32-bit multiplier in int64. (The NPU's 40-bit accumulators and bias field always hold the
    bound: at most MAX_WEIGHT_SUM · 2^15 plus an int32 bias.)"""
    bound = [int(b) for b in bound]
    rounded = [(b * int(m), 1 << int(s) >> 1, int(s)) for b, m, s in zip(bound, scale, shift)]
    if wide_product and max(product + half for product, half, _ in rounded) >= 1 << 63:
        return "the accumulators times the output multiplier could overflow LiteRT's 64-bit product"
    scaled = max((product + half) >> s for product, half, s in rounded)
    if scaled >= 1 << 31:
        return f"the scaled accumulators could reach magnitude {scaled}, beyond LiteRT's int32 result"
    return ""


def _accumulator_bounds(weights: np.ndarray, zero_point: np.ndarray, axes: tuple[int, ...], ifm, ifm_q: Quant,
                        bias=0) -> np.ndarray:
    """Per output channel, a bound of |accumulator + bias| of a matrix product with constant weights: the
    weights' centred magnitudes summed over `axes`, times the largest centred input (`ifm`), plus |bias|."""
    centred = np.sum(np.abs(weights.astype(np.int64) - int(zero_point.reshape(-1)[0])), axis=axes).reshape(-1)
    return centred * centred_magnitude(dtype_of(ifm), ifm_q.scalar_zero_point) + bias


def _int8_accumulators(match: Match, weights: np.ndarray, axes: tuple[int, ...], multipliers: np.ndarray) -> str:
    """`wrapping_left_shifts` of an int8 convolution or fully connected layer (16x8 ones: `_sixteen_by_eight`)."""
    if dtype_of(match["ifm"]) != "int8" or float(np.max(multipliers)) < 0.5:
        return ""
    bias_dq = match.get("bias_dq")
    bias = 0 if bias_dq is None else np.abs(np.asarray(const_value(bias_dq.args[0]), dtype=np.int64)).reshape(-1)
    bounds = _accumulator_bounds(weights, quant_of(match["weights_dq"]).zero_point, axes, match["ifm"],
                                 quant_of(match["ifm_dq"]), bias)
    return wrapping_left_shifts(bounds, multipliers)


def _sixteen_by_eight(match: Match, weights: np.ndarray, axes: tuple[int, ...], multipliers: np.ndarray,
                      reduced: bool) -> str:
    """TFLite's 16x8 kernels: int16 activations (zero point 0), int8 weights, an int64 bias (imported as int32:
    the frontend refuses larger values). Conv and depthwise conv requantize with a 16-bit multiplier (`reduced`),
    fully connected with the 32-bit one; both round once, half up (the NPU's NATURAL rounding). Nothing to check
    for int8 IFMs."""
    if dtype_of(match["ifm"]) != "int16":
        return ""
    w_q = quant_of(match["weights_dq"])
    channels = int(np.prod(weights.shape)) // int(np.prod([weights.shape[a] for a in axes]))
    bias_dq = match.get("bias_dq")
    bias = 0 if bias_dq is None else np.abs(np.asarray(const_value(bias_dq.args[0]), dtype=np.int64))
    centred = np.sum(np.abs(weights.astype(np.int64) - w_q.zero_point.reshape(-1)[0]), axis=axes)
    scale, shift = (reduced_scale_shift if reduced else per_channel_scale_shift)(
        np.broadcast_to(multipliers, (channels,)))
    return first(
        lambda: "" if str(weights.dtype) == "int8" else f"weights have data type {weights.dtype}; 16x8 needs int8",
        lambda: "" if shifts_in_range(shift) else
        f"effective output scale {float(np.max(multipliers)):.3g} is outside what the NPU's 16x8 scale can represent",
        lambda: _worst_case(centred.reshape(channels) * (1 << 15) + np.reshape(bias, -1), scale, shift,
                            wide_product=not reduced),
    )


def _requant_quants(match: Match) -> tuple[Quant, Quant, Quant]:
    return quant_of(match["ifm_dq"]), quant_of(match["weights_dq"]), quant_of(match["quantize"])


def _conv_common(match: Match, weight_axes: tuple[int, ...], channel_sum_axes: tuple[int, ...],
                 kernel: tuple[int, int] | None = None) -> str:
    """Limits every convolution shares; `kernel` (height, width) defaults to the first two weight axes (HWIO)."""
    conv = match["conv"]
    attrs = conv.attrs
    kernel_h, kernel_w = kernel or shape_of(conv.args[1])[:2]
    dil_h, dil_w = (int(d) for d in attrs.dilation)
    dilated_h, dilated_w = dil_h * (kernel_h - 1) + 1, dil_w * (kernel_w - 1) + 1
    ifm_q, w_q, ofm_q = _requant_quants(match)
    weights = const_value(match["weights"])
    multipliers = conv_multipliers(ifm_q.scalar_scale, w_q.scale, ofm_q.scalar_scale)
    return first(
        lambda: _same_type(match),
        lambda: "" if str(attrs.data_layout) == "NHWC" else f"data layout {attrs.data_layout} is not NHWC",
        lambda: stride_limit([int(s) for s in attrs.strides], shape_of(conv)),
        lambda: "" if dilated_h <= MAX_DILATED_KERNEL_HEIGHT else
        f"dilated kernel height is {dilated_h}; it must be in the range [1, {MAX_DILATED_KERNEL_HEIGHT}]",
        lambda: "" if dilated_h * dilated_w <= MAX_DILATED_KERNEL_AREA else
        f"dilated kernel area is {dilated_h * dilated_w}; it must be in the range [1, {MAX_DILATED_KERNEL_AREA}]",
        # The NPU's weight encoding takes dilations 1 and 2 only.
        lambda: "" if max(dil_h, dil_w) <= 2 else f"dilation {dil_h}x{dil_w}; each must be 1 or 2",
        lambda: _weights(weights, w_q.zero_point, weight_axes),
        lambda: _sixteen_by_eight(match, weights, channel_sum_axes, multipliers, reduced=True),
        lambda: scale_range(multipliers),
        lambda: _int8_accumulators(match, weights, channel_sum_axes, multipliers),
    )


def ungrouped(match: Match) -> str:
    groups = int(match["conv"].attrs.groups)
    return "" if groups == 1 else f"grouped convolution (groups={groups}) is not supported"


def check_conv2d(match: Match) -> str:
    """CONV_2D, int8 or 16x8, ungrouped: feature maps of batch 1 up to 4-D, NHWC, strides up to 3, dilated kernels
    up to 64 high and 64x64 in area, dilations 1 or 2, per-channel weight sums within the accumulator's limit, and
    scales the NPU's requantization (and TFLite's int32 arithmetic) express exactly."""
    return _conv_common(match, weight_axes=(0, 1, 2), channel_sum_axes=(0, 1, 2))  # HWIO: sum over H, W, I


def group_per_channel(match: Match) -> str:
    channels_in = shape_of(match["ifm"])[3]
    groups = int(match["conv"].attrs.groups)
    if groups != channels_in:
        return f"grouped convolution (groups={groups}, {channels_in} input channels) is not supported"
    return ""


def check_depthwise_conv2d(match: Match) -> str:
    """DEPTHWISE_CONV_2D with one group per input channel; otherwise the limits of `check_conv2d`."""
    # TFLite [1, H, W, C·M]: each output channel sums over H and W
    return _conv_common(match, weight_axes=(0, 1, 3), channel_sum_axes=(0, 1, 2))


def transpose_conv_form(match: Match) -> str:
    """TFLite's TRANSPOSE_CONV as the frontend writes it."""
    attrs = match["conv"].attrs
    layouts = (str(attrs.data_layout), str(attrs.kernel_layout), str(attrs.out_layout))
    if layouts != ("NHWC", "IOHW", "NHWC") or int(attrs.groups) != 1:
        return f"TRANSPOSE_CONV with layouts {layouts} and groups={int(attrs.groups)}; only NHWC/IOHW, one group"
    if tuple(int(d) for d in attrs.dilation) != (1, 1) or any(int(p) for p in attrs.output_padding):
        return "TRANSPOSE_CONV with dilation or output padding; TFLite's has neither"
    return ""


def check_transpose_conv(match: Match) -> str:
    """As Vela: strides 1x1 (a convolution) or 2x2 (one over the IFM the NPU upscales with zeros), or 1x2 over one
    row with a one-row kernel (which reads only the upscaled IFM's first row), and an output whose window stays
    within a kernel of padding on each side of the (upscaled) IFM, which TFLite's SAME and VALID give unless the
    kernel is smaller than the stride."""
    conv = match["conv"]
    kernel_h, kernel_w = shape_of(conv.args[1])[2:]
    strides = tuple(int(s) for s in conv.attrs.strides)

    def stride() -> str:
        one_row = strides == (1, 2) and shape_of(match["ifm"])[1] == 1 and kernel_h == 1
        if strides not in ((1, 1), (2, 2)) and not one_row:
            return (f"TRANSPOSE_CONV stride HxW is {strides[0]}x{strides[1]}; it must be 1x1 or 2x2, or 1x2 with an"
                    " IFM and kernel height of 1")
        return ""

    def padding() -> str:
        pads = transpose_conv_padding(match)
        limits = (kernel_h, kernel_w) * 2
        if not all(0 <= pad < limit for pad, limit in zip(pads, limits)):
            (_, height, width, _), (_, out_h, out_w, _) = shape_of(match["ifm"]), shape_of(conv)
            return (f"TRANSPOSE_CONV from {height}x{width} to {out_h}x{out_w} with kernel {kernel_h}x{kernel_w} and"
                    f" stride {strides[0]}x{strides[1]} needs IFM padding (top, left, bottom, right) {pads}; each"
                    " must be in the range [0, kernel size - 1]")
        return ""

    # IOHW: each output channel sums over I, H and W (int8, or 16x8 as CONV_2D: `_conv_common`).
    return first(lambda: _conv_common(match, weight_axes=(0, 2, 3), channel_sum_axes=(0, 2, 3),
                                      kernel=(kernel_h, kernel_w)),
                 stride, padding)


def check_fully_connected(match: Match) -> str:
    """FULLY_CONNECTED, int8, 16x8 or int8 into int16 (an LSTM's gates), over a 2-D IFM of any batch: the weight
    sums and scales of `check_conv2d`."""
    ifm_q, w_q, ofm_q = _requant_quants(match)
    weights = const_value(match["weights"])  # TFLite [units, inputs]
    multipliers = fully_connected_multipliers(ifm_q.scalar_scale, w_q.scale, ofm_q.scalar_scale)
    return first(
        lambda: "" if len(shape_of(match["ifm"])) == 2 else f"IFM is {len(shape_of(match['ifm']))}-D, expected 2-D",
        lambda: _same_type(match, widening=True),
        lambda: _weights(weights, w_q.zero_point, (1,)),
        lambda: _sixteen_by_eight(match, weights, (1,), multipliers, reduced=False),
        lambda: scale_range(multipliers),
        lambda: _int8_accumulators(match, weights, (1,), multipliers),
    )


def check_batch_matmul(match: Match) -> str:
    """BATCH_MATMUL with a constant right-hand matrix (one for every batch): a fully connected layer over the
    left-hand rows, which Vela runs so too. With both operands computed at run time: per output column an
    elementwise MUL and a sum over the depth (see legalize), as Vela does."""
    lhs_q, rhs_q, ofm_q = quant_of(match["lhs_dq"]), quant_of(match["rhs_dq"]), quant_of(match["quantize"])
    rhs_shape = shape_of(match["rhs"])
    if not is_const(match["rhs"]):
        return _check_run_time_batch_matmul(match)
    depth_axis = (1,) if match.get("rhs_t") is not None else (0,)

    def matrix() -> np.ndarray:  # once `batch_matmul_form` holds
        return np.asarray(const_value(match["rhs"])).reshape(rhs_shape[-2:])

    def multipliers() -> np.ndarray:  # once the scales are checked
        return conv_multipliers(lhs_q.scalar_scale, rhs_q.scale, ofm_q.scalar_scale)

    return first(
        lambda: _weights(matrix(), rhs_q.zero_point, depth_axis),
        lambda: scale_range(multipliers()),
        lambda: wrapping_left_shifts(_accumulator_bounds(matrix(), rhs_q.zero_point, depth_axis, match["lhs"],
                                                          lhs_q), multipliers()),
    )


def batch_matmul_form(match: Match) -> str:
    """Both BATCH_MATMUL forms read the left-hand rows from a feature map as they are; a constant right-hand
    matrix is one for every batch, operands computed at run time have the same batch axes."""
    lhs_shape, rhs_shape = shape_of(match["lhs"]), shape_of(match["rhs"])
    if is_const(match["lhs"]) or match.get("lhs_t") is not None:
        return "a constant or transposed (adj_x) left operand; the NPU reads the left-hand rows as they are"
    if is_const(match["rhs"]) and any(d != 1 for d in rhs_shape[:-2]):
        return f"the constant has shape {rhs_shape}; the NPU takes one matrix for every batch"
    if not is_const(match["rhs"]) and lhs_shape[:-2] != rhs_shape[:-2]:
        return f"batch axes {lhs_shape[:-2]} and {rhs_shape[:-2]} differ; the NPU does not broadcast them"
    return ""


def _check_run_time_batch_matmul(match: Match) -> str:
    lhs_q, rhs_q, ofm_q = quant_of(match["lhs_dq"]), quant_of(match["rhs_dq"]), quant_of(match["quantize"])
    lhs_shape = shape_of(match["lhs"])  # [..., rows, depth] (no adj_x)
    products = (centred_magnitude(dtype_of(match["lhs"]), lhs_q.scalar_zero_point)
                * centred_magnitude(dtype_of(match["rhs"]), rhs_q.scalar_zero_point))  # bound of each term

    return first(
        lambda: scalar_scales(conv_multipliers(lhs_q.scalar_scale, rhs_q.scale, ofm_q.scalar_scale)),
        lambda: wrapping_left_shifts(lhs_shape[-1] * products,
                                      conv_multipliers(lhs_q.scalar_scale, rhs_q.scale, ofm_q.scalar_scale)),
    )


def convolution_tensors(match: Match) -> Tensors:
    """Convolutions read and write feature maps of batch 1, fully connected layers of any batch."""
    batch_one = match.kind != "fully_connected"
    return quantized_io(match, WEIGHTED_DTYPES, (batch_one, batch_one))


def batch_matmul_tensors(match: Match) -> Tensors:
    """The left-hand rows, the right-hand matrix when computed at run time, and the product."""
    constant = is_const(match["rhs"])
    yield feature_map(match["lhs"], "IFM")
    if not constant:
        yield feature_map(match["rhs"], "IFM2")
    yield feature_map(match["quantize"], "OFM")
    yield activation(match["lhs_dq"], "IFM")
    yield activation(match["rhs_dq"], "the constant" if constant else "IFM2")
    yield activation(match["quantize"], "OFM")
