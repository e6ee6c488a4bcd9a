"""The conditions under which CMSIS-NN's s16 kernels (int16 activations, int8 weights, int64 bias) compute what
LiteRT's 16x8 reference kernels do (CMSIS-NN 99f736a6), beyond the window checks the s8 kernels share.

Conv and depthwise conv: LiteRT sums in int64 and requantizes with the 16-bit reduced multiplier m16 as
(acc·m16 + 2^(14−s)) >> (15−s); CMSIS-NN takes the same m16 and rounds in two steps,
((acc·m16 >> (14−s)) + 1) >> 1, which is the same floor as long as the first step fits the int32 it is stored in.
Its conv also sums a channel's products in int32 (all of them in arm_convolve_s16's odd last output, counted in a
uint16). A conv is taken only when no accumulator its weights, bias and input range reach breaks either.
LiteRT's 16x8 FULLY_CONNECTED rounds once with the full multiplier m, CMSIS-NN with m16: the same function of the
accumulator exactly when m = m16 · 2^16, which is required.
Pools: the int32 sum, its rounding (half away from zero, C division) and the max are LiteRT's; a window of fewer
than 2^16 elements cannot overflow the sum.
"""
from __future__ import annotations

import numpy as np

from ...quantization import reduced_multipliers
from ..ops.weighted import bias, channel_multipliers
from ..spec import Conv2D, FullyConnected, Pool2D

MAX_SHIFT = 14  # arm_nn_requantize_s64 shifts right by 14 − shift
MAX_MAC_COLUMNS = 512  # MAX_COL_COUNT: the products an s16 matrix kernel sums in int32 before widening
_INT32, _INT64 = 1 << 31, 1 << 63
_COLUMN_COUNT = 1 << 16  # arm_convolve_s16 counts its last output's products in a uint16_t


def _accumulators(op, taps: np.ndarray, channels: int) -> tuple[list[int], list[int], np.ndarray]:
    """Per channel of `taps` ([channel, tap] int8 weights): the lowest and highest accumulator (bias included) any
    input reaches, and the largest magnitude of each product."""
    low, high = op.input.limits
    weights = taps.astype(np.int64)
    ends = np.stack([weights * low, weights * high])
    offsets = [int(b) for b in bias(op, channels).value]
    lows = [b + int(s) for b, s in zip(offsets, ends.min(axis=0).sum(axis=1))]
    highs = [b + int(s) for b, s in zip(offsets, ends.max(axis=0).sum(axis=1))]
    return lows, highs, np.abs(ends).max(axis=0)


def _requantize_refusal(op, lows, highs, channels: int, float32_product: bool = False) -> str:
    """'' when arm_nn_requantize_s64's int32 first step holds every reachable accumulator of every channel."""
    multipliers, shifts = (c.value for c in channel_multipliers(op, channels, float32_product))
    if shifts.max() > MAX_SHIFT:
        return f"a left shift of {shifts.max()} is beyond CMSIS-NN's s16 {MAX_SHIFT}"
    for channel, (multiplier, shift, low, high) in enumerate(zip(multipliers, shifts, lows, highs)):
        reduced, right = int(reduced_multipliers(int(multiplier))), MAX_SHIFT - int(shift)
        if not all(-_INT32 <= (acc * reduced) >> right < _INT32 for acc in (low, high)):
            return f"channel {channel}'s accumulators could overflow arm_nn_requantize_s64's int32 step"
    return ""


def _mac_refusal(magnitudes: np.ndarray) -> str:
    """'' when no partial sum of a channel's products (`magnitudes` [channel, tap]) can leave int32."""
    if magnitudes.shape[1] >= _COLUMN_COUNT:
        return f"{magnitudes.shape[1]} products per output exceed arm_convolve_s16's uint16 count"
    if magnitudes.sum(axis=1).max() >= _INT32:
        return "a channel's products could overflow CMSIS-NN's int32 sum"
    return ""


def conv_refusal(op: Conv2D) -> str:
    channels = op.output.shape[3]
    if op.depthwise:  # int64 sums, or int32 over fewer than 512 taps of at most 2^22 each
        taps = op.weights.reshape(-1, channels).T
        lows, highs, _ = _accumulators(op, taps, channels)
        return _requantize_refusal(op, lows, highs, channels)
    lows, highs, magnitudes = _accumulators(op, op.weights.reshape(channels, -1), channels)
    return _mac_refusal(magnitudes) or _requantize_refusal(op, lows, highs, channels)


def fully_connected_refusal(op: FullyConnected) -> str:
    units = op.weights.shape[0]
    multiplier = int(channel_multipliers(op, units, float32_product=True)[0].value[0])
    if multiplier % (1 << 16) or multiplier >= 0x7FFF0000:
        return (f"LiteRT rounds with the full multiplier {multiplier:#x} and CMSIS-NN with its upper 16 bits: "
                f"they differ")
    lows, highs, magnitudes = _accumulators(op, op.weights, units)
    if max(-min(lows), max(highs)) * multiplier >= _INT64:
        return "its accumulators could overflow LiteRT's int64 product"
    return (_mac_refusal(magnitudes[:, :MAX_MAC_COLUMNS])
            or _requantize_refusal(op, lows, highs, units, float32_product=True))


def pool_refusal(op: Pool2D) -> str:
    area = op.pool[0] * op.pool[1]
    if op.kind == "avg" and area >= _COLUMN_COUNT:
        return f"a window of {area} elements could overflow CMSIS-NN's int32 sum"
    return ""


REFUSALS = {Conv2D: conv_refusal, FullyConnected: fully_connected_refusal, Pool2D: pool_refusal}
