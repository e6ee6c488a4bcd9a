"""Integer requantization parameters exactly as TFLite computes them, in the NPU's (scale, shift) form.

TFLite's ``QuantizeMultiplier`` turns a real multiplier into a Q31 mantissa and an exponent e (real ≈ q·2^(e−31));
the NPU takes the same mantissa with a right shift of 31 − e (6 bits, so 0..63).
"""
from __future__ import annotations

import numpy as np

from ..host.quantization import quantize_multiplier, round_half_away

MAX_NPU_SHIFT = 63


def npu_scale_shift(real: float) -> tuple[int, int]:
    """The NPU (scale, right shift) pair of a real multiplier (the shift may fall outside 0..63: check it)."""
    mantissa, exponent = quantize_multiplier(real)
    return mantissa, 31 - exponent


def per_channel_scale_shift(reals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised :func:`npu_scale_shift` over per-channel multipliers (int64 arrays)."""
    pairs = [npu_scale_shift(float(r)) for r in np.asarray(reals, dtype=np.float64).reshape(-1)]
    scale = np.array([p[0] for p in pairs], dtype=np.int64)
    shift = np.array([p[1] for p in pairs], dtype=np.int64)
    return scale, shift


def conv_multipliers(ifm_scale: float, weight_scales: np.ndarray, ofm_scale: float) -> np.ndarray:
    """Conv/depthwise effective scales: TFLite computes ifm·w/ofm in double per channel."""
    return np.float64(ifm_scale) * np.asarray(weight_scales, dtype=np.float64) / np.float64(ofm_scale)


def fully_connected_multipliers(ifm_scale: float, weight_scales: np.ndarray, ofm_scale: float) -> np.ndarray:
    """FC effective scales: TFLite multiplies ifm·w in float32 first (per-tensor path), then divides in double."""
    weight_scales = np.asarray(weight_scales, dtype=np.float32)
    if weight_scales.size > 1:
        return conv_multipliers(ifm_scale, weight_scales, ofm_scale)
    product = np.float64(np.float32(ifm_scale) * weight_scales)
    return product / np.float64(ofm_scale)


def shifts_in_range(shift: np.ndarray) -> bool:
    return bool(np.all((np.asarray(shift) >= 0) & (np.asarray(shift) <= MAX_NPU_SHIFT)))


def quantize_value(value: float, scale: float, zero_point: int) -> int:
    """TFLite's activation-range quantisation: zero_point + round(value / scale), the division in float32."""
    return zero_point + round_half_away(float(np.float32(value) / np.float32(scale)))
