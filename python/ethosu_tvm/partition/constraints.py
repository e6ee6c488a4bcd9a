"""Ethos-U55 operator constraints, as facts taken from Vela's supported-operator checks, in our own code.

Each check takes a :class:`Match` and returns the reason the operator must stay on the host, or "" when the NPU can
run it. Reasons are one line and name the limit, so the offload report explains itself.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..arch import MAX_EXTENT
from ..qdq.match import Match
from ..qdq.values import (
    REQUANTIZING_TABLES,
    Quant,
    const_value,
    dtype_of,
    is_const,
    quant_of,
    shape_of,
    slice_parameters,
    table_reals,
)
from ..quantization import (
    ELEMENTWISE_INPUT_SHIFT,
    MAX_NPU_SHIFT,
    SQUARED_DIFFERENCE_LEFT_SHIFT,
    add_multipliers,
    add_output_refusal,
    conv_multipliers,
    fully_connected_multipliers,
    leaky_relu_extreme,
    mean_multiplier,
    mul_multiplier,
    narrowing_mul,
    per_channel_scale_shift,
    prelu_multipliers,
    quantize_multiplier,
    reduced_scale_shift,
    shifts_in_range,
    softmax_int16_input_scaling,
    sigmoid_input_rescale,
    squared_difference_multipliers,
    undefined_left_shift,
    widening_fully_connected,
)

TENSOR_DIM_RANGE = (1, MAX_EXTENT)
STRIDE_RANGE = (1, 3)
MAX_DILATED_KERNEL_HEIGHT = 64
MAX_DILATED_KERNEL_AREA = 64 * 64
MAX_WEIGHT_SUM = 127 * 65536
MAX_PADDED_AVG_POOL_KERNEL = 8
MAX_POOL_KERNEL_HEIGHT = 256
MAX_POOL_KERNEL_AREA = 256 * 256
# Unpadded average pools whose IFM block does not fit in SHRAM run as depthwise convolutions, so their kernels
# stay within the depthwise limits (Vela instead splits larger pools, which we do not do yet).
MAX_AVG_KERNEL_HEIGHT = MAX_DILATED_KERNEL_HEIGHT
MAX_AVG_KERNEL_AREA = MAX_DILATED_KERNEL_AREA
# An unpadded average pool multiplies the window sum by a 32-bit 1/N. For 16-bit sums that equals TFLite's division
# (rounded half away from zero) for every N up to 504 taps; 505 is the first count where it differs (checked over
# every int16 window sum). Padded pools divide in hardware, exactly.
MAX_INT16_AVG_TAPS = 504
# Vela takes an operation's clamp as real values, (q - zero point) · scale in float32; with |q - zero point| up to
# 65535 (int16), larger scales overflow it.
MAX_ACTIVATION_SCALE = float(np.finfo(np.float32).max) / 65535
SUPPORTED_DTYPES = ("int8",)
ELEMENTWISE_DTYPES = ("int8", "int16")  # binary elementwise operators
# Convolutions and fully connected layers: int8, or TFLite's 16x8 kernels (int16 activations, int8 weights).
WEIGHTED_DTYPES = ("int8", "int16")
# Copies (data movement) move the integers unchanged: a 1x1 max pool does so for 16-bit feature maps too.
COPY_DTYPES = ("int8", "int16")
# Pools take the raw integers of either width: MAX compares them, AVERAGE divides their sum by the tap count.
POOL_DTYPES = ("int8", "int16")


def _first(*reasons: Callable[[], str]) -> str:
    """Evaluate checks in order and return the first failure (later checks may rely on earlier ones)."""
    for reason in reasons:
        text = reason()
        if text:
            return text
    return ""


def _feature_map(expr, what: str, batch_one: bool = True, dtypes: tuple[str, ...] = SUPPORTED_DTYPES) -> str:
    return _feature_map_shape(shape_of(expr), dtype_of(expr), what, batch_one, dtypes)


def _feature_map_shape(shape: tuple[int, ...], dtype: str, what: str, batch_one: bool = True,
                       dtypes: tuple[str, ...] = SUPPORTED_DTYPES) -> str:
    if dtype not in dtypes:
        return f"{what} has data type {dtype}; tensors must be of type {', '.join(dtypes)}"
    if len(shape) > 4:
        return f"{what} is {len(shape)}-D; tensors must not be greater than 4-D"
    low, high = TENSOR_DIM_RANGE
    if not all(low <= d <= high for d in shape):
        return f"{what} has shape {shape}; tensor dimensions must be in the range [{low}, {high}]"
    if batch_one and len(shape) == 4 and shape[0] != 1:
        return f"{what} has batch size {shape[0]}; the IFM batch size must be 1"
    return ""


def _feature_map_input(expr, what: str, batch_one: bool = True, dtypes: tuple[str, ...] = COPY_DTYPES) -> str:
    """An input a copy reads: a feature map, not a model constant (the frontend leaves those to fold, or to the
    operator that takes them, such as a fully connected layer's transposed weights)."""
    if is_const(expr):
        return f"{what} is a constant; the NPU copies feature maps"
    return _feature_map(expr, what, batch_one, dtypes)


def _activation_quant(quant: Quant, what: str) -> str:
    if quant.per_axis:
        return f"{what} has per-axis quantization; per-axis quantization is only supported on weights"
    if not np.all(np.isfinite(quant.scale)) or not np.all(quant.scale > 0):
        return f"{what} has scale {quant.scale.tolist()}; quantization scales must be finite and positive"
    if np.any(quant.scale > MAX_ACTIVATION_SCALE):
        return (f"{what} has scale {float(np.max(quant.scale)):.3g}; the NPU's clamps are given to Vela as real "
                f"values in float32, which overflow above a scale of {MAX_ACTIVATION_SCALE:.3g}")
    return ""


def _strides(strides, ofm_shape: tuple[int, ...]) -> str:
    """Stride limits apply only along axes with more than one output element (Vela's rule too)."""
    low, high = STRIDE_RANGE
    out_hw = ofm_shape[1:3]
    if not all(low <= s <= high or extent == 1 for s, extent in zip(strides, out_hw)):
        return f"stride HxW is {strides[0]}x{strides[1]}; stride values must be in the range [{low}, {high}]"
    return ""


def _scale_range(multipliers: np.ndarray) -> str:
    _, shift = per_channel_scale_shift(multipliers)
    if not shifts_in_range(shift):
        return (f"effective output scale {float(np.max(multipliers)):.3g} is outside what the NPU's 32-bit scale and"
                " 6-bit shift can represent")
    return ""


def _scalar_scales(reals) -> str:
    """`_scale_range` of the requantizations an elementwise or pooling operation takes as one immediate scale.
    Below 2^-32 TFLite's multiplier is 0 and the result a constant, which TE folds, losing the operation's reads
    that code generation needs (per-channel scales are read from a constant and not folded): host."""
    reals = np.asarray(reals, dtype=np.float64).reshape(-1)
    flushed = next((float(r) for r in reals if quantize_multiplier(float(r))[0] == 0), None)
    if flushed is not None:
        return (f"effective scale {flushed:.3g} is below 2^-32, where TFLite's multiplier is 0: a constant result, "
                "which the NPU operations are not generated for")
    return _scale_range(reals)


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


def _centred_magnitude(dtype: str, zero_point: int) -> int:
    """The largest |x − zero_point| of a `dtype` value."""
    info = np.iinfo(dtype)
    return max(int(zero_point) - int(info.min), int(info.max) - int(zero_point))


def _wrapping_left_shift(bound: int, shift: int, real: float) -> str:
    """TFLite requantizes an int32 value v by a real multiplier of 1 or more with a left shift first, v · 2^shift in
    int32: where that can leave int32 (|v| ≤ `bound`), LiteRT's product wraps (undefined in C; x86-64 builds wrap,
    and the host kernels do too) while the NPU computes it exactly, so they would differ; such an operator stays
    on the host."""
    if shift > 0 and int(bound) << shift >= 1 << 31:
        return (f"effective output scale {real:.3g} shifts values of magnitude up to {int(bound)} left by {shift}"
                " bits, beyond TFLite's int32 arithmetic (LiteRT's product wraps there; the NPU's does not)")
    return ""


def _wrapping_left_shifts(bounds, reals) -> str:
    """`_wrapping_left_shift` per channel (`bounds` and `reals` per channel or one for all), with the shifts of
    TFLite's QuantizeMultiplier."""
    reals = np.asarray(reals, dtype=np.float64).reshape(-1)
    if reals.size == 0 or float(np.max(reals)) < 0.5:  # no left shift below 1 (a mantissa rounding up reaches 1)
        return ""
    bounds, reals = np.broadcast_arrays(np.asarray(bounds, dtype=object).reshape(-1), reals)
    return next(filter(None, (_wrapping_left_shift(bound, quantize_multiplier(float(real))[1], real)
                              for bound, real in zip(bounds, reals))), "")


def _accumulator_bounds(weights: np.ndarray, zero_point: np.ndarray, axes: tuple[int, ...], ifm, ifm_q: Quant,
                        bias=0) -> np.ndarray:
    """Per output channel, a bound of |accumulator + bias| of a matrix product with constant weights: the
    weights' centred magnitudes summed over `axes`, times the largest centred input (`ifm`), plus |bias|."""
    centred = np.sum(np.abs(weights.astype(np.int64) - int(zero_point.reshape(-1)[0])), axis=axes).reshape(-1)
    return centred * _centred_magnitude(dtype_of(ifm), ifm_q.scalar_zero_point) + bias


def _int8_accumulators(match: Match, weights: np.ndarray, axes: tuple[int, ...], multipliers: np.ndarray) -> str:
    """`_wrapping_left_shifts` of an int8 convolution or fully connected layer (16x8 ones: `_sixteen_by_eight`)."""
    if dtype_of(match["ifm"]) != "int8" or float(np.max(multipliers)) < 0.5:
        return ""
    bias_dq = match.get("bias_dq")
    bias = 0 if bias_dq is None else np.abs(np.asarray(const_value(bias_dq.args[0]), dtype=np.int64)).reshape(-1)
    bounds = _accumulator_bounds(weights, quant_of(match["weights_dq"]).zero_point, axes, match["ifm"],
                                 quant_of(match["ifm_dq"]), bias)
    return _wrapping_left_shifts(bounds, multipliers)


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
    return _first(
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
    return _first(
        lambda: _feature_map(match["ifm"], "IFM", dtypes=WEIGHTED_DTYPES),
        lambda: _feature_map(match["quantize"], "OFM", dtypes=WEIGHTED_DTYPES),
        lambda: _same_type(match),
        lambda: "" if str(attrs.data_layout) == "NHWC" else f"data layout {attrs.data_layout} is not NHWC",
        lambda: _activation_quant(ifm_q, "IFM"),
        lambda: _activation_quant(ofm_q, "OFM"),
        lambda: _strides([int(s) for s in attrs.strides], shape_of(conv)),
        lambda: "" if dilated_h <= MAX_DILATED_KERNEL_HEIGHT else
        f"dilated kernel height is {dilated_h}; it must be in the range [1, {MAX_DILATED_KERNEL_HEIGHT}]",
        lambda: "" if dilated_h * dilated_w <= MAX_DILATED_KERNEL_AREA else
        f"dilated kernel area is {dilated_h * dilated_w}; it must be in the range [1, {MAX_DILATED_KERNEL_AREA}]",
        # The NPU's weight encoding takes dilations 1 and 2 only.
        lambda: "" if max(dil_h, dil_w) <= 2 else f"dilation {dil_h}x{dil_w}; each must be 1 or 2",
        lambda: _weights(weights, w_q.zero_point, weight_axes),
        lambda: _sixteen_by_eight(match, weights, channel_sum_axes, multipliers, reduced=True),
        lambda: _scale_range(multipliers),
        lambda: _int8_accumulators(match, weights, channel_sum_axes, multipliers),
    )


def check_conv2d(match: Match) -> str:
    """CONV_2D, int8 or 16x8, ungrouped: feature maps of batch 1 up to 4-D, NHWC, strides up to 3, dilated kernels
    up to 64 high and 64x64 in area, dilations 1 or 2, per-channel weight sums within the accumulator's limit, and
    scales the NPU's requantization (and TFLite's int32 arithmetic) express exactly."""
    conv = match["conv"]
    if int(conv.attrs.groups) != 1:
        return f"grouped convolution (groups={int(conv.attrs.groups)}) is not supported"
    return _conv_common(match, weight_axes=(0, 1, 2), channel_sum_axes=(0, 1, 2))  # HWIO: sum over H, W, I


def check_depthwise_conv2d(match: Match) -> str:
    """DEPTHWISE_CONV_2D with one group per input channel; otherwise the limits of `check_conv2d`."""
    conv = match["conv"]
    channels_in = shape_of(match["ifm"])[3]
    groups = int(conv.attrs.groups)
    if groups != channels_in:
        return f"grouped convolution (groups={groups}, {channels_in} input channels) is not supported"
    # TFLite [1, H, W, C·M]: each output channel sums over H and W
    return _conv_common(match, weight_axes=(0, 1, 3), channel_sum_axes=(0, 1, 2))


def transpose_conv_padding(match: Match) -> tuple[int, int, int, int]:
    """(top, left, bottom, right) padding of the zero-upscaled IFM that a stride-1 convolution with the kernel
    reversed reads for TRANSPOSE_CONV: output row o sums input rows i with i·stride + k − before = o, k the tap;
    reversed, that is the upscaled row o + k' − (K − 1 − before), so K − 1 − before rows go above, and below what
    the output's last window reaches past the stride·H upscaled rows (their last stride − 1 are zeros already)."""
    conv = match["conv"]
    (_, height, width, _), (_, out_h, out_w, _) = shape_of(match["ifm"]), shape_of(conv)
    kernel_h, kernel_w = shape_of(conv.args[1])[2:]
    stride_h, stride_w = (int(s) for s in conv.attrs.strides)
    before_h, before_w = (int(p) for p in conv.attrs.padding[:2])
    top, left = kernel_h - 1 - before_h, kernel_w - 1 - before_w
    return (top, left, out_h + kernel_h - 1 - top - stride_h * height, out_w + kernel_w - 1 - left - stride_w * width)


def check_transpose_conv(match: Match) -> str:
    """As Vela: strides 1x1 (a convolution) or 2x2 (one over the IFM the NPU upscales with zeros), or 1x2 over one
    row with a one-row kernel (which reads only the upscaled IFM's first row), and an output whose window stays
    within a kernel of padding on each side of the (upscaled) IFM, which TFLite's SAME and VALID give unless the
    kernel is smaller than the stride."""
    conv = match["conv"]
    attrs = conv.attrs
    layouts = (str(attrs.data_layout), str(attrs.kernel_layout), str(attrs.out_layout))
    kernel_h, kernel_w = shape_of(conv.args[1])[2:]
    strides = tuple(int(s) for s in attrs.strides)

    def form() -> str:
        if layouts != ("NHWC", "IOHW", "NHWC") or int(attrs.groups) != 1:
            return f"TRANSPOSE_CONV with layouts {layouts} and groups={int(attrs.groups)}; only NHWC/IOHW, one group"
        if tuple(int(d) for d in attrs.dilation) != (1, 1) or any(int(p) for p in attrs.output_padding):
            return "TRANSPOSE_CONV with dilation or output padding; TFLite's has neither"
        return ""

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
    return _first(form,
                  lambda: _conv_common(match, weight_axes=(0, 2, 3), channel_sum_axes=(0, 2, 3),
                                       kernel=(kernel_h, kernel_w)),
                  stride, padding)


def check_fully_connected(match: Match) -> str:
    """FULLY_CONNECTED, int8, 16x8 or int8 into int16 (an LSTM's gates), over a 2-D IFM of any batch: the weight
    sums and scales of `check_conv2d`."""
    ifm_q, w_q, ofm_q = _requant_quants(match)
    weights = const_value(match["weights"])  # TFLite [units, inputs]
    multipliers = fully_connected_multipliers(ifm_q.scalar_scale, w_q.scale, ofm_q.scalar_scale)
    return _first(
        lambda: _feature_map(match["ifm"], "IFM", batch_one=False, dtypes=WEIGHTED_DTYPES),
        lambda: "" if len(shape_of(match["ifm"])) == 2 else f"IFM is {len(shape_of(match['ifm']))}-D, expected 2-D",
        lambda: _feature_map(match["quantize"], "OFM", batch_one=False, dtypes=WEIGHTED_DTYPES),
        lambda: _same_type(match, widening=True),
        lambda: _activation_quant(ifm_q, "IFM"),
        lambda: _activation_quant(ofm_q, "OFM"),
        lambda: _weights(weights, w_q.zero_point, (1,)),
        lambda: _sixteen_by_eight(match, weights, (1,), multipliers, reduced=False),
        lambda: _scale_range(multipliers),
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

    def operands() -> str:
        if any(d != 1 for d in rhs_shape[:-2]):
            return f"the constant has shape {rhs_shape}; the NPU takes one matrix for every batch"
        return ""

    depth_axis = (1,) if match.get("rhs_t") is not None else (0,)

    def matrix() -> np.ndarray:  # once `operands` holds
        return np.asarray(const_value(match["rhs"])).reshape(rhs_shape[-2:])

    def multipliers() -> np.ndarray:  # once the scales are checked
        return conv_multipliers(lhs_q.scalar_scale, rhs_q.scale, ofm_q.scalar_scale)

    return _first(
        lambda: _left_operand(match),
        operands,
        lambda: _feature_map_input(match["lhs"], "IFM", dtypes=SUPPORTED_DTYPES),
        lambda: _feature_map(match["quantize"], "OFM"),
        lambda: _activation_quant(lhs_q, "IFM"),
        lambda: _activation_quant(rhs_q, "the constant"),
        lambda: _activation_quant(ofm_q, "OFM"),
        lambda: _weights(matrix(), rhs_q.zero_point, depth_axis),
        lambda: _scale_range(multipliers()),
        lambda: _wrapping_left_shifts(_accumulator_bounds(matrix(), rhs_q.zero_point, depth_axis, match["lhs"],
                                                          lhs_q), multipliers()),
    )


def _left_operand(match: Match) -> str:
    """Both BATCH_MATMUL forms read the left-hand rows from a feature map as they are."""
    if is_const(match["lhs"]) or match.get("lhs_t") is not None:
        return "a constant or transposed (adj_x) left operand; the NPU reads the left-hand rows as they are"
    return ""


def _check_run_time_batch_matmul(match: Match) -> str:
    lhs_q, rhs_q, ofm_q = quant_of(match["lhs_dq"]), quant_of(match["rhs_dq"]), quant_of(match["quantize"])
    lhs_shape, rhs_shape = shape_of(match["lhs"]), shape_of(match["rhs"])  # lhs [..., rows, depth] (no adj_x)
    products = (_centred_magnitude(dtype_of(match["lhs"]), lhs_q.scalar_zero_point)
                * _centred_magnitude(dtype_of(match["rhs"]), rhs_q.scalar_zero_point))  # bound of each term

    def batches() -> str:
        if lhs_shape[:-2] != rhs_shape[:-2]:
            return f"batch axes {lhs_shape[:-2]} and {rhs_shape[:-2]} differ; the NPU does not broadcast them"
        return ""

    return _first(
        lambda: _left_operand(match),
        batches,
        lambda: _feature_map_input(match["lhs"], "IFM", dtypes=SUPPORTED_DTYPES),
        lambda: _feature_map_input(match["rhs"], "IFM2", dtypes=SUPPORTED_DTYPES),
        lambda: _feature_map(match["quantize"], "OFM"),
        lambda: _activation_quant(lhs_q, "IFM"),
        lambda: _activation_quant(rhs_q, "IFM2"),
        lambda: _activation_quant(ofm_q, "OFM"),
        lambda: _scalar_scales(conv_multipliers(lhs_q.scalar_scale, rhs_q.scale, ofm_q.scalar_scale)),
        lambda: _wrapping_left_shifts(lhs_shape[-1] * products,
                                      conv_multipliers(lhs_q.scalar_scale, rhs_q.scale, ofm_q.scalar_scale)),
    )


def _pool_common(match: Match) -> str:
    """8- or 16-bit NHWC feature maps of batch 1, no ceil mode, strides up to 3."""
    attrs = match["pool"].attrs
    return _first(
        lambda: _feature_map(match["ifm"], "IFM", dtypes=POOL_DTYPES),
        lambda: _feature_map(match["out"], "OFM", dtypes=POOL_DTYPES),
        lambda: "" if str(attrs.layout) == "NHWC" else f"layout {attrs.layout} is not NHWC",
        lambda: "" if not bool(attrs.ceil_mode) else "ceil_mode pooling is not supported",
        lambda: _strides([int(s) for s in attrs.strides], shape_of(match["pool"])),
    )


def check_avg_pool2d(match: Match) -> str:
    """AVERAGE_POOL_2D: 8- or 16-bit NHWC feature maps of batch 1, strides up to 3, padded kernels up to 8x8 (the
    NPU divides exactly), unpadded ones up to 64 high and 64x64 (a depthwise convolution), int16 ones of at most
    504 taps (where the NPU's 1/N scale stops matching TFLite's division)."""
    attrs = match["pool"].attrs
    kernel_h, kernel_w = (int(k) for k in attrs.pool_size)
    padded = any(int(p) for p in attrs.padding)
    limit = MAX_PADDED_AVG_POOL_KERNEL

    def kernel() -> str:
        if padded and not (kernel_h <= limit and kernel_w <= limit):
            return f"padded average pool kernel HxW is {kernel_h}x{kernel_w}; it must be in the range [1, {limit}]"
        if not padded and dtype_of(match["ifm"]) == "int16" and kernel_h * kernel_w > MAX_INT16_AVG_TAPS:
            return (f"int16 average pool of {kernel_h}x{kernel_w} taps; the NPU's 1/N scale is exact for int16 up to"
                    f" {MAX_INT16_AVG_TAPS} taps")
        return _average_kernel(kernel_h, kernel_w)

    return _first(
        lambda: _pool_common(match),
        lambda: "count_include_pad average pooling is not supported" if bool(attrs.count_include_pad) else "",
        kernel,
    )


def _average_kernel(kernel_h: int, kernel_w: int, what: str = "average pool kernel", unit: str = "taps") -> str:
    if kernel_h > MAX_AVG_KERNEL_HEIGHT or kernel_h * kernel_w > MAX_AVG_KERNEL_AREA:
        return (f"{what} HxW is {kernel_h}x{kernel_w}; at most {MAX_AVG_KERNEL_HEIGHT} high and"
                f" {MAX_AVG_KERNEL_AREA} {unit} are supported")
    return ""


def _pool_kernel(kernel_h: int, kernel_w: int) -> str:
    if kernel_h > MAX_POOL_KERNEL_HEIGHT:
        return f"pool kernel height is {kernel_h}; it must be in the range [1, {MAX_POOL_KERNEL_HEIGHT}]"
    if kernel_h * kernel_w > MAX_POOL_KERNEL_AREA:
        return f"pool kernel area is {kernel_h * kernel_w}; it must be in the range [1, {MAX_POOL_KERNEL_AREA}]"
    return ""


def check_max_pool2d(match: Match) -> str:
    """MAX_POOL_2D: 8- or 16-bit NHWC feature maps of batch 1, strides up to 3, a kernel up to 256 high and
    256x256 in area."""
    kernel_h, kernel_w = (int(k) for k in match["pool"].attrs.pool_size)
    return _first(lambda: _pool_common(match), lambda: _pool_kernel(kernel_h, kernel_w))


def _broadcast(lhs: tuple[int, ...], rhs: tuple[int, ...], out: tuple[int, ...]) -> str:
    if out not in (lhs, rhs):
        return f"operand shapes {lhs} and {rhs}; at least one operand's shape must match the OFM's shape {out}"
    size = min(len(lhs), len(rhs))
    for a, b, o in zip(lhs[len(lhs) - size:], rhs[len(rhs) - size:], out[len(out) - size:]):
        if not (a == b or a == 1 or b == 1) or o != max(a, b):
            return (f"operand shapes {lhs} and {rhs}; broadcasting is only allowed for dimensions of size 1, from"
                    " either operand")
    return ""


# Scalars that make the result independent of the IFM (code generation finds the IFM through its reads):
# a MUL by real 0, a MINIMUM with the dtype's minimum, a MAXIMUM with its maximum.
_ABSORBING = {"multiply": lambda value, zero_point, info: value == zero_point,
              "minimum": lambda value, zero_point, info: value == info.min,
              "maximum": lambda value, zero_point, info: value == info.max}


def _constant_operand(match: Match) -> str:
    """A one-element constant operand is the NPU's IFM2 scalar (operands reversed when it is the left one), a larger
    one a tensor in the constant region (IFM2, or the IFM when the feature map is the operand that broadcasts)."""
    roles = [role for role in ("lhs", "rhs") if is_const(match[role])]
    if len(roles) == 2:
        return "both operands are constants"
    if not roles:
        return ""
    constant = match[roles[0]]
    if int(np.prod(shape_of(constant))) != 1:
        return ""
    value = int(np.asarray(const_value(constant)).reshape(-1)[0])
    absorbing = _ABSORBING.get(match.kind, lambda *_: False)
    if absorbing(value, quant_of(match[f"{roles[0]}_dq"]).scalar_zero_point, np.iinfo(dtype_of(constant))):
        return f"a constant operand {value} that makes the result independent of the IFM"
    return ""


def _binary(match: Match, same_quant: bool) -> str:
    """The limits `check_arithmetic` and `check_min_max` share; `same_quant`: inputs quantized as the OFM."""
    lhs_q, rhs_q, ofm_q = quant_of(match["lhs_dq"]), quant_of(match["rhs_dq"]), quant_of(match["quantize"])

    def matching() -> str:
        if same_quant and not all(
            q.scalar_scale == ofm_q.scalar_scale and q.scalar_zero_point == ofm_q.scalar_zero_point
            for q in (lhs_q, rhs_q)
        ):
            return "both input quantization parameters must match the OFM quantization parameters"
        return ""

    def same_type() -> str:
        types = [dtype_of(match[role]) for role in ("lhs", "rhs", "quantize")]
        if len(set(types)) == 1 or (match.kind == "multiply" and types[0] == types[1] and narrowing_mul(*types[1:])):
            return ""
        return f"operand and result types {', '.join(types)}; they must be the same"

    def scales() -> str:
        """The scales legalization gives ADD/SUB (each operand's and the sum's) and MUL must fit the NPU's."""
        s1, s2, so = lhs_q.scalar_scale, rhs_q.scalar_scale, ofm_q.scalar_scale
        ofm_dtype = dtype_of(match["quantize"])
        if match.kind in ("add", "subtract"):
            reals = add_multipliers(s1, s2, so, ELEMENTWISE_INPUT_SHIFT[ofm_dtype])
            return add_output_refusal(reals[2]) or _scalar_scales(reals)
        if match.kind == "multiply":
            real = mul_multiplier(s1, s2, so, narrowing_mul(dtype_of(match["lhs"]), ofm_dtype))
            lhs, rhs = (_centred_magnitude(dtype_of(match[role]), q.scalar_zero_point)
                        for role, q in (("lhs", lhs_q), ("rhs", rhs_q)))
            return _scalar_scales([real]) or _wrapping_left_shifts(lhs * rhs, real)
        return ""

    return _first(
        lambda: _constant_operand(match),
        lambda: "" if is_const(match["lhs"]) else _feature_map(match["lhs"], "IFM", dtypes=ELEMENTWISE_DTYPES),
        lambda: "" if is_const(match["rhs"]) else _feature_map(match["rhs"], "IFM2", dtypes=ELEMENTWISE_DTYPES),
        lambda: _feature_map(match["quantize"], "OFM", dtypes=ELEMENTWISE_DTYPES),
        same_type,
        lambda: _activation_quant(lhs_q, "IFM"),
        lambda: _activation_quant(rhs_q, "IFM2"),
        lambda: _activation_quant(ofm_q, "OFM"),
        lambda: _broadcast(shape_of(match["lhs"]), shape_of(match["rhs"]), shape_of(match["quantize"])),
        matching,
        scales,
    )


def check_arithmetic(match: Match) -> str:
    """ADD, SUB and MUL: 8- or 16-bit feature maps of batch 1 (or one and a constant) of one type (MUL may narrow),
    broadcasting size-1 dimensions, each operand and the result quantized freely within the NPU's scales."""
    return _binary(match, same_quant=False)


def check_min_max(match: Match) -> str:
    """MINIMUM and MAXIMUM: as ADD (`check_arithmetic`), but the NPU compares the raw integers, so both inputs
    must be quantized as the OFM."""
    return _binary(match, same_quant=True)


def reduced_axes(match: Match) -> tuple[int, ...]:
    """The axes a MEAN, SUM, REDUCE_MAX or REDUCE_MIN reduces, non-negative and sorted (None in Relax: all)."""
    rank = len(shape_of(match["ifm"]))
    axis = match["reduce"].attrs.axis
    return tuple(range(rank)) if axis is None else tuple(sorted({int(a) % rank for a in axis}))


def reduction_window(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[
        tuple[int, int, int, int], tuple[int, int], tuple[int, int, int] | None]:
    """The NPU's form of a reduction of a tensor of batch 1: (4-D IFM view, kernel (height, width), swap), one
    window covering the reduced elements of each output element. Height and width are reduced in place. Otherwise
    the reduced axes (extent-1 axes aside) are made adjacent: when they are the first and the last of three, the
    tensor, seen as (A, B, C), is first transposed to (B, A, C) (`swap` is then (A, B, C)). The tensor is then seen
    as (1, outer, reduced, inner) and reduced along its width."""
    full = (1,) * (4 - len(shape)) + tuple(shape)
    axes = tuple(a + 4 - len(shape) for a in axes)
    wide = [a for a in axes if full[a] != 1]
    if all(a in (1, 2) for a in wide):  # (no wide axis at all included)
        return full, (full[1] if 1 in wide else 1, full[2] if 2 in wide else 1), None
    kept = [a for a in range(wide[0], wide[-1] + 1) if full[a] != 1 and a not in wide]
    if kept:  # at most three axes are wider than 1: the middle one is kept
        swap = (full[wide[0]], full[kept[0]], full[wide[-1]])
        return (1, swap[1], swap[0] * swap[2], 1), (1, swap[0] * swap[2]), swap
    outer, reduced, inner = (int(np.prod(part)) for part in (full[:wide[0]], full[wide[0]:wide[-1] + 1],
                                                             full[wide[-1] + 1:]))
    return (1, outer, reduced, inner), (1, reduced), None


def _reduction(match: Match, kernel_check: Callable[[int, int], str], dtypes: tuple[str, ...]) -> str:
    """What every reduction on the NPU needs: feature maps (batch 1), per-tensor quantization, and a window whose
    view and kernel the NPU takes."""
    shape, axes = shape_of(match["ifm"]), reduced_axes(match)
    what = match.kind.upper()

    def window() -> str:
        view, (kernel_h, kernel_w), _ = reduction_window(shape, axes)
        low, high = TENSOR_DIM_RANGE
        if not all(low <= d <= high for d in view):
            return f"{what} viewed as {view}; each extent must be in the range [{low}, {high}]"
        return kernel_check(kernel_h, kernel_w)

    return _first(
        lambda: _feature_map(match["ifm"], "IFM", dtypes=dtypes),
        lambda: _feature_map(match["quantize"], "OFM", batch_one=False, dtypes=dtypes),
        lambda: _activation_quant(quant_of(match["ifm_dq"]), "IFM"),
        lambda: _activation_quant(quant_of(match["quantize"]), "OFM"),
        window,
    )


def _depthwise_kernel(kernel_h: int, kernel_w: int) -> str:
    """A sum runs as a depthwise convolution with unit weights: its kernel limits apply (those of the average pools
    that run as one)."""
    return _average_kernel(kernel_h, kernel_w, "reduction window", "elements")


def reduction_count(match: Match) -> int:
    """How many input elements each output element of a reduction reduces."""
    shape = shape_of(match["ifm"])
    return int(np.prod([shape[a] for a in reduced_axes(match)]))


def sum_multiplier(match: Match) -> tuple[int, int]:
    """TFLite's (multiplier, left shift) of a SUM or an int8 MEAN, for the centred sum:
    input scale / output scale in double, with MEAN's 1/count folded in."""
    ifm_q, ofm_q = quant_of(match["ifm_dq"]), quant_of(match["quantize"])
    real = float(np.float64(ifm_q.scalar_scale) / np.float64(ofm_q.scalar_scale))
    if match.kind == "mean":
        return mean_multiplier(real, reduction_count(match))
    return quantize_multiplier(real)


def check_sum(match: Match) -> str:
    """SUM (8- and 16-bit), and int8 MEAN: a depthwise convolution with unit weights over the
    reduction window, the centred sum requantized by TFLite's multiplier (the NPU's 6-bit shift must hold it)."""

    def scale() -> str:
        multiplier, shift = sum_multiplier(match)
        if multiplier == 0 or not shifts_in_range(31 - shift):
            return (f"{match.kind.upper()} multiplier {multiplier} · 2^({shift} − 31); the NPU's right shift must be"
                    f" in the range [0, {MAX_NPU_SHIFT}]")
        centred = _centred_magnitude(dtype_of(match["ifm"]), quant_of(match["ifm_dq"]).scalar_zero_point)
        return _wrapping_left_shift(reduction_count(match) * centred, shift, multiplier * 2.0**(shift - 31))

    return _first(lambda: _reduction(match, _depthwise_kernel, COPY_DTYPES), scale)


def check_mean(match: Match) -> str:
    """int8 MEAN is a sum (see `check_sum`) whatever its axes and scales: TFLite's reference kernels (LiteRT's and
    TFLite Micro's) requantize the centred sum with 1/count folded into the multiplier, rounding twice, which an
    average pool's single rounding of sum / count does not reproduce (7x7 windows differ). int16 MEAN is a sum by
    depthwise convolution, requantized by a MUL (see `check_int16_mean`)."""
    if dtype_of(match["ifm"]) == "int16":
        return check_int16_mean(match)
    return _first(lambda: _feature_map(match["ifm"], "IFM"), lambda: check_sum(match))


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

    return _first(
        lambda: _feature_map(match["ifm"], "IFM", dtypes=("int16",)),
        lambda: _feature_map(match["quantize"], "OFM", batch_one=False, dtypes=("int16",)),
        lambda: _activation_quant(ifm_q, "IFM"),
        lambda: _activation_quant(ofm_q, "OFM"),
        lambda: _mean_axes(match),
        lambda: _average_kernel(shape[1], shape[2]),
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

    return _first(lambda: _reduction(match, _pool_kernel, SUPPORTED_DTYPES), same_quant)


ARG_MAX_DEPTH = 127  # the reversed index takes the low 7 bits below the value


def check_arg_min_max(match: Match) -> str:
    """int8 ARG_MAX (and ARG_MIN, on the values' complement) over the depth axis into int32 or int64 indices: each
    value shifted left by 7 bits with its reversed index below (so ties go to the first index), a max pool over the
    depth, and the index recovered from the low bits (int64 ones written as int32 pairs, the high word 0)."""
    shape = shape_of(match["ifm"])
    axis, index_dtype = int(match["arg"].attrs.axis) % len(shape), dtype_of(match["cast"])
    name = match.kind.upper()

    def form() -> str:
        if axis != len(shape) - 1:
            return f"{name} over axis {axis} of a {len(shape)}-D tensor; only over the last (depth) axis"
        if shape[-1] > ARG_MAX_DEPTH:
            return f"{name} over {shape[-1]} values; the IFM depth must be at most {ARG_MAX_DEPTH}"
        if index_dtype not in ("int32", "int64"):
            return f"{name} with {index_dtype} indices; the NPU writes int32 ones (int64 as int32 pairs)"
        rows, high = int(np.prod(shape[:-1])), TENSOR_DIM_RANGE[1]
        return "" if rows <= high else f"{name} over {rows} rows (all but the depth axis); at most {high}"

    return _first(lambda: _feature_map(match["ifm"], "IFM"), form)


CAST_WIDENS = {"int8": ("int8", "int16", "int32"), "int16": ("int16", "int32")}


def check_cast(match: Match) -> str:
    """CAST of the raw integers to as many bits or more (a MUL by 1 into the wider type); narrowing wraps in C,
    where the NPU saturates."""
    ifm_type, ofm_type = dtype_of(match["ifm"]), dtype_of(match["cast"])

    def widens() -> str:
        if ofm_type not in CAST_WIDENS.get(ifm_type, ()):
            return f"CAST from {ifm_type} to {ofm_type}; the NPU saturates where narrowing wraps"
        return ""

    return _first(
        lambda: _feature_map(match["ifm"], "IFM", dtypes=COPY_DTYPES),
        lambda: _feature_map(match["cast"], "OFM", dtypes=("int8", "int16", "int32")),
        widens,
    )


def _defined_left_shifts(reals) -> str:
    """The first of `reals` TFLite's int32 arithmetic has no defined result for (`undefined_left_shift`), or "":
    such an operator stays on the host, which refuses it."""
    return next(filter(None, map(undefined_left_shift, reals)), "")


def check_lookup(match: Match) -> str:
    """Unary int8 functions become a 256-entry table: only the feature maps and their quantization matter (and
    that TFLite's requantization defines the table)."""
    return _first(
        lambda: _feature_map(match["ifm"], "IFM", batch_one=False),
        lambda: _feature_map(match["quantize"], "OFM", batch_one=False),
        lambda: _activation_quant(quant_of(match["ifm_dq"]), "IFM"),
        lambda: _activation_quant(quant_of(match["quantize"]), "OFM"),
        lambda: _defined_left_shifts(table_reals(match)) if match.kind in REQUANTIZING_TABLES else "",
    )


def check_leaky_relu(match: Match) -> str:
    """int8 LEAKY_RELU is a table (`check_lookup`); int16 the MAX (or MIN) of the input requantized by each
    branch's multiplier, two MULs by 1 the NPU computes as TFLite does where no left shift leaves int32: zero
    points 0 (TFLite requires them), alpha ≥ 0 (the NPU's scales are positive), and the MAX or MIN equal to
    TFLite's choice on every int16 value (`leaky_relu_extreme`)."""
    if dtype_of(match["ifm"]) != "int16":
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

    return _first(
        lambda: _feature_map(match["ifm"], "IFM", dtypes=("int16",)),
        lambda: _feature_map(match["quantize"], "OFM", dtypes=("int16",)),
        lambda: _activation_quant(ifm_q, "IFM"),
        lambda: _activation_quant(ofm_q, "OFM"),
        form,
        lambda: _defined_left_shifts(table_reals(match)),
        lambda: _scalar_scales(table_reals(match)),
        lambda: _wrapping_left_shifts(_centred_magnitude("int16", 0), table_reals(match)),
        extreme,
    )


INT16_SIGMOID_OUTPUT = (1.0 / 32768.0, 0)  # TFLite fixes the int16 TANH and LOGISTIC output quantization


def check_sigmoid_family(match: Match) -> str:
    """int8 TANH and LOGISTIC are tables (`check_lookup`); int16 ones the NPU's built-in functions, whose input
    scaling must not exceed 16 bits (TFLite's 32-bit product of input and multiplier would wrap)."""
    if dtype_of(match["ifm"]) != "int16":
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

    return _first(
        lambda: _feature_map(match["ifm"], "IFM", batch_one=False, dtypes=("int16",)),
        lambda: _feature_map(match["quantize"], "OFM", batch_one=False, dtypes=("int16",)),
        lambda: _activation_quant(ifm_q, "IFM"),
        lambda: _activation_quant(ofm_q, "OFM"),
        quantization,
        input_scale,
    )


def check_requantize(match: Match) -> str:
    """int8 QUANTIZE is a table (`check_lookup`); int16 to int16 a scaled 1x1 average pool, and int8 from or to
    uint8 or int16 too (`_check_mixed_requantize`). TFLite shifts the centred int16 input left before its multiply,
    so effective scales from 2^15 on could overflow its 32 bits."""
    types = dtype_of(match["ifm"]), dtype_of(match["quantize"])
    if "uint8" in types or sorted(types) == ["int16", "int8"]:
        return _check_mixed_requantize(match, types)
    if types[0] != "int16":
        return check_lookup(match)
    ifm_q, ofm_q = quant_of(match["ifm_dq"]), quant_of(match["quantize"])
    real = np.float64(ifm_q.scalar_scale) / np.float64(ofm_q.scalar_scale)
    return _first(
        lambda: _feature_map(match["ifm"], "IFM", dtypes=("int16",)),
        lambda: _feature_map(match["quantize"], "OFM", dtypes=("int16",)),
        lambda: _activation_quant(ifm_q, "IFM"),
        lambda: _activation_quant(ofm_q, "OFM"),
        lambda: "" if real < 1 << 15 else f"effective scale {real:.6g}; int16 requantization needs it below 2^15",
        lambda: _scalar_scales([real]),
    )


def check_quantize_int32(match: Match) -> str:
    """QUANTIZE to int32 stays on the CPU, as in Vela: the NPU requantizes into int8 and int16 only here."""
    return _feature_map(match["quantize"], "OFM", batch_one=False, dtypes=("int8", "int16"))


def _check_mixed_requantize(match: Match, types: tuple[str, str]) -> str:
    """QUANTIZE between int8 and uint8 (the only uint8 pairs TFLite Micro has) or int16: a scaled 1x1 average
    pool, as Vela runs it, where TFLite's left shift of the centred input must stay in its 32 bits
    (`_wrapping_left_shifts`)."""
    ifm_q, ofm_q = quant_of(match["ifm_dq"]), quant_of(match["quantize"])
    real = np.float64(ifm_q.scalar_scale) / np.float64(ofm_q.scalar_scale)
    return _first(
        lambda: "" if "int8" in types else f"{types[0]} to {types[1]}; uint8 is requantized from or to int8 only",
        lambda: _feature_map(match["ifm"], "IFM", dtypes=types),
        lambda: _feature_map(match["quantize"], "OFM", dtypes=types),
        lambda: _activation_quant(ifm_q, "IFM"),
        lambda: _activation_quant(ofm_q, "OFM"),
        lambda: _wrapping_left_shifts(_centred_magnitude(types[0], ifm_q.scalar_zero_point), [real]),
        lambda: _scalar_scales([real]),
    )


def check_prelu(match: Match) -> str:
    """PRELU is a table, a MIN with the input zero point, a MUL by alpha (a constant IFM2, broadcast by the NPU)
    and a MAX: int8 feature maps, an int8 alpha of one scale that broadcasts to the input."""
    ifm_q, alpha_q, ofm_q = quant_of(match["ifm_dq"]), quant_of(match["alpha_dq"]), quant_of(match["quantize"])
    shape, alpha_shape = shape_of(match["ifm"]), shape_of(match["alpha"])

    def reals() -> tuple[float, float]:  # the table's, then the MUL's; once the scales are checked
        return prelu_multipliers(ifm_q.scalar_scale, alpha_q.scalar_scale, ofm_q.scalar_scale)

    def slopes() -> int:  # a bound of the products the MUL requantizes: (x − zp) · (alpha − alpha zp)
        centred = np.abs(np.asarray(const_value(match["alpha"]), dtype=np.int64) - alpha_q.scalar_zero_point)
        return _centred_magnitude(dtype_of(match["ifm"]), ifm_q.scalar_zero_point) * int(centred.max(initial=0))

    def alpha() -> str:
        if dtype_of(match["alpha"]) != "int8":
            return f"alpha has data type {dtype_of(match['alpha'])}; it must be int8"
        if len(alpha_shape) > len(shape) or any(a not in (1, d) for a, d in zip(alpha_shape[::-1], shape[::-1])):
            return f"alpha of shape {alpha_shape} does not broadcast to the input {shape}"
        return ""

    return _first(
        lambda: _feature_map(match["ifm"], "IFM"),
        lambda: _feature_map(match["quantize"], "OFM"),
        lambda: _activation_quant(ifm_q, "IFM"),
        lambda: _activation_quant(alpha_q, "alpha"),
        lambda: _activation_quant(ofm_q, "OFM"),
        alpha,
        lambda: _defined_left_shifts(reals()[:1]),
        lambda: _scalar_scales(reals()[1:]),
        lambda: _wrapping_left_shifts(slopes(), reals()[1]),
    )


def check_squared_difference(match: Match) -> str:
    """Five elementwise operations on 32-bit intermediates; their difference broadcasts as binary operands do."""
    lhs_q, rhs_q, ofm_q = quant_of(match["lhs_dq"]), quant_of(match["rhs_dq"]), quant_of(match["quantize"])

    def scales() -> str:
        reals = squared_difference_multipliers(lhs_q.scalar_scale, rhs_q.scalar_scale, ofm_q.scalar_scale)
        # each operand shifted left by 7 bits and rescaled (rounding by at most 1): a bound of |difference|
        difference = sum(int(_centred_magnitude(dtype_of(match[role]), q.scalar_zero_point) * real
                             * (1 << SQUARED_DIFFERENCE_LEFT_SHIFT)) + 1
                         for role, q, real in (("lhs", lhs_q, reals[0]), ("rhs", rhs_q, reals[1])))
        return _scalar_scales(reals) or _wrapping_left_shifts(difference**2, reals[2])

    return _first(
        lambda: "a constant operand; the NPU takes two feature maps" if is_const(match["lhs"]) or is_const(
            match["rhs"]) else "",
        lambda: _feature_map(match["lhs"], "IFM"),
        lambda: _feature_map(match["rhs"], "IFM2"),
        lambda: _feature_map(match["quantize"], "OFM"),
        lambda: _activation_quant(lhs_q, "IFM"),
        lambda: _activation_quant(rhs_q, "IFM2"),
        lambda: _activation_quant(ofm_q, "OFM"),
        lambda: _broadcast(shape_of(match["lhs"]), shape_of(match["rhs"]), shape_of(match["quantize"])),
        scales,
    )


SOFTMAX_OUTPUT = {"int8": (1.0 / 256.0, -128), "int16": (1.0 / 32768.0, 0)}  # TFLite fixes the output quantization
# int16: the rescaled input differences (up to 65535 · 2^left shift) must fit the 32-bit OFM of the scaled SUB
MAX_SOFTMAX_INT16_LEFT_SHIFT = 15


def softmax_beta(match: Match) -> float:
    """SOFTMAX's beta: the scalar the importer multiplies the dequantized input by (1 when it wrote none)."""
    beta = match.get("beta")
    return 1.0 if beta is None else float(np.asarray(const_value(beta)).reshape(-1)[0])


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

    return _first(
        lambda: _feature_map(match["ifm"], "IFM", dtypes=COPY_DTYPES),
        lambda: _feature_map(match["quantize"], "OFM", dtypes=(dtype,)),
        lambda: _activation_quant(quant_of(match["ifm_dq"]), "IFM"),
        lambda: _activation_quant(quant_of(match["quantize"]), "OFM"),
        axis,
        beta,
        output,
        int16_rescale,
        rows,
    )


def check_reshape(match: Match) -> str:
    """A copy of the same integers in another shape (8- or 16-bit). The copy writes one 3-D box, so the OFM has
    batch 1 (of a batch-N OFM it wrote only the first batch); the IFM is read as bytes in the OFM's shape."""
    return _first(
        lambda: _feature_map_input(match["ifm"], "IFM", batch_one=False),
        lambda: _feature_map(match["reshape"], "OFM", dtypes=COPY_DTYPES),
    )


def _npu_axis(axis: int, rank: int) -> int:
    """An axis of a rank-`rank` tensor in the 4-D NHWC shape the NPU sees (leading 1s)."""
    return axis % rank + 4 - rank


def check_concatenation(match: Match) -> str:
    """One copy per input into a box of the OFM: boxes are 3-D (batch 1), and the integers are copied unchanged."""
    concat = match["concat"]
    count = len(concat.args[0].fields)
    ofm_q = quant_of(match["quantize"])

    def axis() -> str:
        npu_axis = _npu_axis(int(concat.attrs.axis), len(shape_of(concat)))
        return "" if npu_axis > 0 else "CONCATENATION along the batch axis; the NPU copies 3-D boxes"

    def same_quant(index: int) -> str:
        q = quant_of(match[f"input{index}_dq"])
        if q.scalar_scale != ofm_q.scalar_scale or q.scalar_zero_point != ofm_q.scalar_zero_point:
            return (f"input {index} is quantized ({q.scalar_scale:.6g}, {q.scalar_zero_point}), the output"
                    f" ({ofm_q.scalar_scale:.6g}, {ofm_q.scalar_zero_point}); the inputs must share the output's"
                    " quantization")
        return ""

    return _first(
        *(lambda i=i: _feature_map_input(match[f"input{i}"], f"input {i}") for i in range(count)),
        lambda: _feature_map(match["quantize"], "OFM", dtypes=COPY_DTYPES),
        lambda: _activation_quant(ofm_q, "OFM"),
        *(lambda i=i: _activation_quant(quant_of(match[f"input{i}_dq"]), f"input {i}") for i in range(count)),
        *(lambda i=i: same_quant(i) for i in range(count)),
        axis,
    )


def pack_view(shape: tuple[int, ...], axis: int) -> tuple[tuple[int, int, int, int], int]:
    """PACK's OFM (of `shape`, the new axis `axis`) as the NPU writes it, and that axis in it: up to 4-D its own
    shape in NHWC; a 5-D one as (1, before, count, after), the axes before and after the new one merged (the same
    bytes, each input one box of them: Vela reshapes so too). No NPU operator reads a 5-D tensor, so no reader
    sees the merged view."""
    if len(shape) <= 4:
        return (1,) * (4 - len(shape)) + tuple(shape), _npu_axis(axis, len(shape))
    before, after = (int(np.prod(part, dtype=np.int64)) for part in (shape[:axis], shape[axis + 1:]))
    return (1, before, shape[axis], after), 2


def check_pack(match: Match) -> str:
    """A concatenation of the inputs along the new axis (each input copied into its box of the OFM's view, see
    `pack_view`)."""
    concat = match["concat"]
    count = len(concat.args[0].fields)
    rank = len(shape_of(concat))
    axis = int(concat.attrs.axis) % rank
    view, view_axis = pack_view(shape_of(concat), axis)

    def axes() -> str:
        for i in range(count):
            expand_axes = [int(a) % rank for a in match[f"expand{i}"].attrs.axis]
            if expand_axes != [axis]:
                return f"input {i} gains axes {expand_axes}, the concatenation is along {axis}"
        return "" if view_axis > 0 else "PACK along the batch axis; the NPU copies 3-D boxes"

    return _first(
        *(lambda i=i: _feature_map_input(match[f"input{i}"], f"input {i}", batch_one=False) for i in range(count)),
        lambda: _feature_map_shape(view, dtype_of(concat), "OFM", dtypes=COPY_DTYPES),
        axes,
    )


def check_pad(match: Match) -> str:
    """PAD and PADV2 with a constant: the IFM copied into its box of the OFM, constant blocks copied around it."""
    attrs = match["pad"].attrs

    def value() -> str:
        pad_value, info = float(attrs.pad_value), np.iinfo(dtype_of(match["ifm"]))
        if pad_value.is_integer() and info.min <= pad_value <= info.max:
            return ""
        return f"pad value {pad_value} is not an {info.dtype} integer"

    return _first(
        lambda: _feature_map_input(match["ifm"], "IFM"),
        lambda: _feature_map(match["pad"], "OFM", dtypes=COPY_DTYPES),
        lambda: "" if str(attrs.pad_mode) == "constant" else f"{attrs.pad_mode} padding; only constant padding",
        value,
    )


def check_strided_slice(match: Match) -> str:
    """A copy of a box of the IFM, strided on height and width as a 1x1 pool strides; the box must have batch 1
    (the NPU copies 3-D boxes), the IFM need not."""
    call = match["slice"]
    shape = shape_of(match["ifm"])
    axes, begin, strides = slice_parameters(call)
    strides_4d = (1,) * (4 - len(strides)) + strides

    def box() -> str:
        if axes != tuple(range(len(shape))) or not all(0 <= b < d for b, d in zip(begin, shape)):
            return f"strided slice over axes {axes} from {begin}; every axis from a start inside it"
        sliced = (1,) * (4 - len(shape)) + shape_of(call)
        if any(s != 1 and sliced[axis] > 1 for axis, s in ((0, strides_4d[0]), (3, strides_4d[3]))):
            return f"strides {strides}; the NPU strides only height and width"
        if any(s < 1 for s in strides_4d[1:3]):
            return f"strides {strides}; the NPU strides forwards"
        return _strides(strides_4d[1:3], sliced)

    return _first(
        lambda: _feature_map_input(match["ifm"], "IFM", batch_one=False),
        lambda: _feature_map(call, "OFM", dtypes=COPY_DTYPES),
        box,
        lambda: "" if match.get("reshape") is None else _feature_map(match["reshape"], "OFM", False, COPY_DTYPES),
    )


RESIZE_FACTORS = (1, 2, 4, 8)  # Vela's: the NPU doubles height and width per NEAREST copy


def resize_factor(in_shape, out_shape, aligned: bool) -> int | None:
    """k when the OFM is k times the IFM in height and width alike (with corners aligned: k·(n − 1) + 1, where an
    axis of 1 stays 1 whatever k), for k in RESIZE_FACTORS; 0 for a 1x1 IFM resized to any size (every output is
    its pixel); None otherwise."""
    if tuple(in_shape[1:3]) == (1, 1) and tuple(out_shape[1:3]) != (1, 1):
        return 0
    factors = set()
    for size, out in zip(in_shape[1:3], out_shape[1:3]):
        if aligned and size == 1:
            if out != 1:
                return None
            continue
        whole, rest = divmod(out - 1, size - 1) if aligned else divmod(out, size)
        if rest:
            return None
        factors.add(whole)
    factor = factors.pop() if len(factors) == 1 else (None if factors else 1)
    return factor if factor in RESIZE_FACTORS else None


def broadcast_side(out_shape) -> int:
    """The side of the square a 1x1 IFM is upscaled to before the OFM's box is cut from it: the NPU doubles height
    and width together, up to the first power of two covering both."""
    return 1 << (max(out_shape[1:3]) - 1).bit_length()


# A 1x1 IFM's upscaled square may take at most this many times the OFM's bytes (a thin OFM would need far more).
MAX_BROADCAST_EXCESS = 4


def _resize_size(match: Match, method: str, aligned: bool) -> str:
    in_shape, out_shape = shape_of(match["ifm"]), shape_of(match["resize"])
    factor = resize_factor(in_shape, out_shape, aligned)
    side = broadcast_side(out_shape)
    if factor == 0 and side * side > MAX_BROADCAST_EXCESS * out_shape[1] * out_shape[2]:
        return (f"{method} resize from 1x1 to {out_shape[1]}x{out_shape[2]}; the NPU would upscale the pixel to "
                f"{side}x{side}, more than {MAX_BROADCAST_EXCESS} times the OFM")
    if factor is None:
        scaled = "(H-1)·k+1 x (W-1)·k+1 with corners aligned" if aligned else "kH x kW"
        return (f"{method} resize from {in_shape[1]}x{in_shape[2]} to {out_shape[1]}x{out_shape[2]}; the NPU "
                f"resizes to {scaled}, k = 1, 2, 4 or 8, or a 1x1 IFM to any size")
    return ""


def check_resize_nearest_neighbor(match: Match) -> str:
    """The NPU's NEAREST upscaling doubles height and width: TFLite's nearest neighbour by 2, 4 or 8 (output (y, x)
    reads (y // k, x // k)) is that doubling repeated, and with corners aligned (it reads the input at round(y / k))
    the rows and columns from k / 2 on of the input upscaled by k; a 1x1 IFM resized to any size is its pixel
    everywhere."""
    attrs = match["resize"].attrs
    aligned = str(attrs.coordinate_transformation_mode) == "align_corners"

    def mode() -> str:
        if str(attrs.layout) != "NHWC" or str(attrs.method) != "nearest_neighbor":
            return f"{attrs.method} resize in {attrs.layout}; only nearest neighbour in NHWC"
        if str(attrs.coordinate_transformation_mode) not in ("asymmetric", "half_pixel", "align_corners"):
            return f"nearest neighbour resize with {attrs.coordinate_transformation_mode} coordinates"
        return ""

    return _first(
        lambda: _feature_map_input(match["ifm"], "IFM"),
        lambda: _feature_map(match["resize"], "OFM", dtypes=COPY_DTYPES),
        mode,
        lambda: _resize_size(match, "nearest neighbour", aligned),
    )


def check_resize_bilinear(match: Match) -> str:
    """Bilinear resizes whose int8 result is an average (TFLite's rounding, half away from zero) of the IFM upscaled
    by the NPU's NEAREST mode: by 2, 4 or 8 (half-pixel centres: by 2 only), or to (H-1)·k+1 x (W-1)·k+1 with
    corners aligned; the same size is a copy, and a 1x1 IFM resized to any size is its pixel everywhere. TFLite's integer kernel steps through the input by
    (1024·H + out/2) // out / 1024 of a pixel: exactly 1/k in all of them, so each output weighs its input pixels
    by multiples of 1/k²."""
    attrs = match["resize"].attrs
    transform = str(attrs.coordinate_transformation_mode)
    (_, height, width, _), (_, out_h, out_w, _) = shape_of(match["ifm"]), shape_of(match["resize"])
    ifm_q, ofm_q = quant_of(match["ifm_dq"]), quant_of(match["quantize"])

    def quant() -> str:
        if ifm_q.scalar_scale != ofm_q.scalar_scale or ifm_q.scalar_zero_point != ofm_q.scalar_zero_point:
            return "RESIZE_BILINEAR with different input and output quantizations; the NPU averages the integers"
        return ""

    def mode() -> str:
        if str(attrs.layout) != "NHWC" or str(attrs.method) != "linear":
            return f"{attrs.method} resize in {attrs.layout}; only bilinear in NHWC"
        if transform not in ("asymmetric", "align_corners", "half_pixel"):
            return f"bilinear resize with {transform} coordinates; the NPU averages upscaled pixels only"
        if transform == "half_pixel" and (height, width) != (1, 1) and (out_h, out_w) not in (
                (2 * height, 2 * width), (height, width)):
            return (f"bilinear resize from {height}x{width} to {out_h}x{out_w} with half-pixel centres; the NPU "
                    "upscales to 2H x 2W")
        return ""

    return _first(
        lambda: _feature_map_input(match["ifm"], "IFM", dtypes=SUPPORTED_DTYPES),
        lambda: _feature_map(match["quantize"], "OFM"),
        lambda: _activation_quant(ifm_q, "IFM"),
        quant,
        mode,
        lambda: _resize_size(match, "bilinear", transform == "align_corners"),
    )


def permutation_of(match: Match) -> tuple[int, ...]:
    """The TRANSPOSE's permutation (None in Relax: the axes reversed)."""
    rank, axes = len(shape_of(match["ifm"])), match["permute"].attrs.axes
    return tuple(range(rank))[::-1] if axes is None else tuple(int(a) % rank for a in axes)


def transposed_view(shape: tuple[int, ...], perm: tuple[int, ...]) -> tuple[int, int, int] | None:
    """The input seen as (A, B, C) whose output is (B, A, C) in element order, when the permutation is one: with
    axes of extent 1 left out and axes the output keeps side by side in their order merged (NCHW to NHWC is
    (C, H·W) to (H·W, C)), it swaps two axes followed by at most one more (the NPU copies it with the row and
    column strides of the IFM or the OFM swapped, depth kept). (1, 1, N) when the order of the other axes is kept
    (a reshape); None otherwise."""
    ranked = sorted(axis for axis in perm if shape[axis] != 1)
    runs: list[list[int]] = []  # positions in `ranked`, in output order, each run one merged axis
    for position in (ranked.index(axis) for axis in perm if shape[axis] != 1):
        if runs and position == runs[-1][-1] + 1:
            runs[-1].append(position)
        else:
            runs.append([position])
    starts = sorted(run[0] for run in runs)
    order = [starts.index(run[0]) for run in runs]
    dims = [int(np.prod([shape[ranked[p]] for p in run], dtype=np.int64)) for run in sorted(runs)]
    if order == sorted(order):
        return (1, 1, int(np.prod(dims, dtype=np.int64)))
    if order == [1, 0]:
        return (dims[0], dims[1], 1)
    if order == [1, 0, 2]:
        return (dims[0], dims[1], dims[2])
    return None


def transposed_ofm_shape(shape: tuple[int, ...]) -> tuple[int, int, int, int]:
    """The 4-D shape a TRANSPOSE's output is written in: its batch merged into its height (the same bytes; the NPU
    writes one batch)."""
    batch, height, width, depth = (1,) * (4 - len(shape)) + tuple(shape)
    return (1, batch * height, width, depth)


def check_transpose(match: Match) -> str:
    """Permutations the NPU expresses as copies with swapped strides (see `transposed_view`), one per block of at
    most MAX_EXTENT rows and columns of the (A, B) view."""
    shape, perm = shape_of(match["ifm"]), permutation_of(match)

    def view() -> str:
        found = transposed_view(shape, perm)
        if found is None:
            return (f"TRANSPOSE of {shape} by {perm}; the NPU swaps two axes (unit axes aside, axes that stay"
                    " together merged) and keeps the innermost after them")
        if found[:2] != (1, 1) and found[2] > MAX_EXTENT:  # (1, 1, N): a reshape; A and B go in blocks
            return f"TRANSPOSE viewed as {found}; the depth kept innermost must be at most {MAX_EXTENT}"
        return ""

    return _first(
        lambda: _feature_map_input(match["ifm"], "IFM", batch_one=False),
        lambda: _feature_map_shape(transposed_ofm_shape(shape_of(match["permute"])), dtype_of(match["permute"]),
                                   "OFM", dtypes=COPY_DTYPES),
        view,
    )


CHECKS: dict[str, Callable[[Match], str]] = {
    "conv2d": check_conv2d,
    "depthwise_conv2d": check_depthwise_conv2d,
    "transpose_conv": check_transpose_conv,
    "fully_connected": check_fully_connected,
    "avg_pool2d": check_avg_pool2d,
    "max_pool2d": check_max_pool2d,
    "add": check_arithmetic,
    "subtract": check_arithmetic,
    "multiply": check_arithmetic,
    "minimum": check_min_max,
    "maximum": check_min_max,
    "mean": check_mean,
    "sum": check_sum,
    "reduce_max": check_reduce_extreme,
    "reduce_min": check_reduce_extreme,
    "arg_max": check_arg_min_max,
    "arg_min": check_arg_min_max,
    "cast": check_cast,
    "relu": check_lookup,
    "clip": check_lookup,
    "abs": check_lookup,
    "leaky_relu": check_leaky_relu,
    "requantize": check_requantize,
    "quantize_int32": check_quantize_int32,
    "tanh": check_sigmoid_family,
    "logistic": check_sigmoid_family,
    "exp": check_lookup,
    "log": check_lookup,
    "rsqrt": check_lookup,
    "sqrt": check_lookup,
    "neg": check_lookup,
    "elu": check_lookup,
    "gelu": check_lookup,
    "gelu_tanh": check_lookup,
    "hard_swish": check_lookup,
    "reshape": check_reshape,
    "prelu": check_prelu,
    "squared_difference": check_squared_difference,
    "softmax": check_softmax,
    "concatenation": check_concatenation,
    "pack": check_pack,
    "pad": check_pad,
    "strided_slice": check_strided_slice,
    "resize_nearest_neighbor": check_resize_nearest_neighbor,
    "resize_bilinear": check_resize_bilinear,
    "batch_matmul": check_batch_matmul,
    "transpose": check_transpose,
}
