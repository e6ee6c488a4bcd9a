"""Rules of the operators with weights: convolutions, transposed convolutions, fully connected layers and
batch matrix products."""
from __future__ import annotations

import numpy as np

from ...partition.npu_view import transpose_conv_padding
from ...qdq.match import Match
from ...qdq.values import const_value, is_const, quant_of
from ...quantization import conv_multipliers, fully_connected_multipliers, reduced_scale_shift, widening_fully_connected
from ..ops import (
    BinaryElementwise,
    Clamp,
    Concatenate,
    Conv2D,
    DepthwiseConv2D,
    Identity,
    NpuOp,
    Operand,
    Padding,
    Pooling,
    Requantize,
    Slice,
    Tensor,
    TransposeConv2D,
)
from .operands import DTYPE_RANGES, INT32_CLAMP, channel_requant, int_clamp, operand_of, raw_of, shifted, single


def _bias(match: Match, channels: int) -> np.ndarray:
    bias_dq = match.get("bias_dq")
    if bias_dq is None:
        return np.zeros(channels, dtype=np.int64)
    return np.asarray(const_value(bias_dq.args[0]), dtype=np.int64).reshape(channels)


def _conv_requant(multipliers: np.ndarray, channels: int, ifm: Tensor) -> Requantize:
    """TFLite's conv rounding: int8 rounds twice (TFL); 16x8 reduces the multiplier to 16 bits and rounds once,
    half up (NATURAL)."""
    if ifm.dtype == "int16":
        return Requantize(*reduced_scale_shift(np.broadcast_to(multipliers, (channels,))), "NATURAL")
    return channel_requant(multipliers, channels, "TFL")


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
    repeat = Conv2D(ifm=operand_of(ifm, ifm_q), ofm=operand_of(repeated, ifm_q), weights=one_hot, weight_zero_point=0,
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
        ifm=operand_of(tensors[match["ifm"]], ifm_q),
        ofm=operand_of(ofm, ofm_q),
        weights=np.ascontiguousarray(weights.astype(np.int8)),
        weight_zero_point=w_q.scalar_zero_point,
        bias=_bias(match, channels),
        requant=_conv_requant(conv_multipliers(ifm_q.scalar_scale, w_q.scale, ofm_q.scalar_scale), channels,
                              tensors[match["ifm"]]),
        clamp=int_clamp(match, ofm.dtype),
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
        ifm=operand_of(tensors[match["ifm"]], ifm_q),
        ofm=operand_of(ofm, ofm_q),
        weights=np.ascontiguousarray(raw.reshape(channels, 1, 1, raw.shape[1]).astype(np.int8)),
        weight_zero_point=w_q.scalar_zero_point,
        bias=_bias(match, channels),
        requant=channel_requant(multipliers, channels,
                         "TFL" if widening_fully_connected(tensors[match["ifm"]].dtype, ofm.dtype) else "NATURAL"),
        clamp=int_clamp(match, ofm.dtype),
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
        ifm=operand_of(tensors[match["lhs"]], lhs_q),
        ofm=operand_of(ofm, ofm_q),
        weights=np.ascontiguousarray(weights.reshape(channels, 1, 1, weights.shape[1]).astype(np.int8)),
        weight_zero_point=rhs_q.scalar_zero_point,
        bias=np.zeros(channels, dtype=np.int64),
        requant=channel_requant(conv_multipliers(lhs_q.scalar_scale, rhs_q.scale, ofm_q.scalar_scale), channels, "TFL"),
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
    unit = shifted()
    scaling = single(float(conv_multipliers(lhs_q.scalar_scale, rhs_q.scale, ofm_q.scalar_scale)[0]))
    ops: list[NpuOp] = []
    sums = []
    for column in range(columns):
        name = f"{ofm.name}_column{column}"
        row = Tensor(f"{name}_rhs", (1, batches, 1, depth), rhs.dtype)
        if transposed:
            ops.append(Slice(ifm=raw_of(rhs), ofm=raw_of(row), begin=(0, 0, column, 0), source=source))
        else:  # the column's depth values, one per row, are the same bytes as one row of them
            strided = Tensor(f"{name}_rhs_column", (1, batches, depth, 1), rhs.dtype)
            ops.append(Slice(ifm=raw_of(rhs), ofm=raw_of(strided), begin=(0, 0, 0, column), source=source))
            ops.append(Identity(ifm=raw_of(strided), ofm=raw_of(row), source=source))
        products = Tensor(f"{name}_products", (1, batches, rows, depth), "int32")
        ops.append(BinaryElementwise(operator="MUL", ifm=operand_of(lhs, lhs_q), ifm2=operand_of(row, rhs_q),
                                     ofm=Operand(products, 0, 1.0), requant=unit, clamp=INT32_CLAMP,
                                     source=source))
        total = Operand(Tensor(f"{name}_sum", (1, batches, rows, 1), ofm.dtype), ofm_q.scalar_zero_point, 1.0)
        ops.append(Pooling(pooling_type="REDUCE_SUM", ifm=Operand(products, 0, 1.0), ofm=total, pool_shape=(1, 1),
                           clamp=int_clamp(match, ofm.dtype), requant=scaling, source=source))
        sums.append(total)
    ops.append(Concatenate(inputs=tuple(raw_of(t.tensor) for t in sums), ofm=raw_of(ofm), axis=3, source=source))
    return tuple(ops)
