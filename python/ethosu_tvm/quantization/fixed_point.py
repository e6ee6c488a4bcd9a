"""TFLite's fixed-point integer operations on NumPy int64 arrays, for values computed at compile time.

The NPU runs an int8 → int8 function as a lookup table; the table entries must be what TFLite's integer kernels
compute for each input, so their arithmetic (gemmlowp rounding and saturation included) is reproduced here.
"""
from __future__ import annotations

import numpy as np

from .multipliers import quantize_multiplier


def _srdhm(a: np.ndarray, b: int) -> np.ndarray:
    """SaturatingRoundingDoublingHighMul for a positive Q31 multiplier (no saturation case can arise)."""
    return (a * b + (1 << 30)) >> 31


def _rounding_divide_by_pot(x: np.ndarray, exponent: int) -> np.ndarray:
    mask = (1 << exponent) - 1
    threshold = (mask >> 1) + (x < 0)
    return (x >> exponent) + ((x & mask) > threshold)


def multiply_by_quantized_multiplier(x: np.ndarray, real: float) -> np.ndarray:
    """TFLite MultiplyByQuantizedMultiplier (double rounding) of int64 values by a real multiplier."""
    multiplier, exponent = quantize_multiplier(real)
    shifted = x * (1 << max(exponent, 0))
    return _rounding_divide_by_pot(_srdhm(shifted, multiplier), max(-exponent, 0))


def _int16_multiplier(real: float) -> tuple[int, int]:
    """TFLite QuantizeMultiplier followed by DownScaleInt32ToInt16Multiplier: (Q15 mantissa, exponent)."""
    multiplier, exponent = quantize_multiplier(real)
    if multiplier >= (1 << 31) - 1 - (1 << 15):
        return (1 << 15) - 1, exponent
    return (multiplier + (1 << 15)) >> 16, exponent


def _saturate16(x: np.ndarray) -> np.ndarray:
    return np.clip(x, -(1 << 15), (1 << 15) - 1)


def _srdhm16(a: np.ndarray, b: int) -> np.ndarray:
    """16-bit SaturatingRoundingDoublingHighMul (ties as gemmlowp's nudge gives them: half up)."""
    overflow = (a == b) & (a == -(1 << 15))
    return np.where(overflow, (1 << 15) - 1, (a * b + (1 << 14)) >> 15)


def _sdhm16(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """16-bit SaturatingDoublingHighMul: the doubled high half, truncated towards zero."""
    overflow = (a == b) & (a == -(1 << 15))
    product = a * b
    return np.where(overflow, (1 << 15) - 1, np.sign(product) * (np.abs(product) >> 15))


def hard_swish_values(centred: np.ndarray, in_scale: float, out_scale: float) -> np.ndarray:
    """TFLite's int8 HardSwish on centred inputs (its 16-bit fixed-point algorithm), before the zero point."""
    hires_scale = np.float32(1.0 / 128.0) * np.float32(in_scale)
    out_mult, out_exp = _int16_multiplier(float(hires_scale / np.float32(out_scale)))
    relu_mult, relu_exp = _int16_multiplier(float(hires_scale / np.float32(3.0 / 32768.0)))
    hires = centred * (1 << 7)
    preshift_output = _srdhm16(hires, out_mult)
    reluish = hires
    if relu_exp > 0:
        reluish = _saturate16(reluish << (relu_exp - 1))
    reluish = _srdhm16(reluish, relu_mult)
    if relu_exp > 0:
        reluish = _saturate16(reluish << 1)
    elif relu_exp < 0:
        reluish = _rounding_divide_by_pot(reluish, -relu_exp)
    reluish = (reluish + (1 << 15)) >> 1
    return _rounding_divide_by_pot(_sdhm16(reluish, preshift_output), -out_exp)
