"""Lookup tables for int8 → int8 functions, computed as TFLite's kernels compute them.

An int8 unary op is fully described by its value on the 256 possible inputs, so the NPU runs it exactly as a table
(indexed by input + 128). Requantizing ops use TFLite's integer arithmetic, with the float steps where its Prepare
computes in float32 or in double; TANH and LOGISTIC are float32 tables in TFLite itself.
"""
from __future__ import annotations

import numpy as np

from ..partition.match import Match
from ..partition.qdq import prim_float, quant_of
from ..host.quantization import float32_lut
from .scaling import quantize_multiplier, quantize_value

INT8_VALUES = np.arange(-128, 128, dtype=np.int64)


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


def _f32_ratio(numerator: float, denominator: float) -> float:
    """A float32 division, as TFLite writes `input->params.scale / output->params.scale`."""
    return float(np.float32(numerator) / np.float32(denominator))


def _logistic(x: np.ndarray) -> np.ndarray:
    return np.float32(1.0) / (np.float32(1.0) + np.exp(-x))


FLOAT_FUNCTIONS = {"tanh": np.tanh, "logistic": _logistic}


def lookup_table(match: Match) -> np.ndarray:
    """The int8 table of a unary composite (relu, clip, abs, leaky_relu, requantize, hard_swish, tanh, logistic)."""
    ifm, ofm = quant_of(match["ifm_dq"]), quant_of(match["quantize"])
    if match.kind in FLOAT_FUNCTIONS:
        return float32_lut(FLOAT_FUNCTIONS[match.kind], ifm.scalar_scale, ifm.scalar_zero_point, ofm.scalar_scale,
                           ofm.scalar_zero_point, "int8")
    centred = INT8_VALUES - ifm.scalar_zero_point
    out_scale, out_zp = ofm.scalar_scale, ofm.scalar_zero_point
    low, high = -128, 127
    if match.kind == "requantize":
        real = np.float64(ifm.scalar_scale) / np.float64(out_scale)
        values = multiply_by_quantized_multiplier(centred, float(real))
    elif match.kind == "abs":
        values = multiply_by_quantized_multiplier(np.abs(centred), _f32_ratio(ifm.scalar_scale, out_scale))
    elif match.kind == "hard_swish":
        values = hard_swish_values(centred, ifm.scalar_scale, out_scale)
    elif match.kind == "leaky_relu":
        alpha = float(match["core"].attrs.alpha)
        alpha_real = float(np.float32(ifm.scalar_scale) * np.float32(alpha) / np.float32(out_scale))
        identity = multiply_by_quantized_multiplier(centred, _f32_ratio(ifm.scalar_scale, out_scale))
        values = np.where(centred >= 0, identity, multiply_by_quantized_multiplier(centred, alpha_real))
    else:  # relu / clip: a requantization clamped to the activation range
        values = multiply_by_quantized_multiplier(centred, _f32_ratio(ifm.scalar_scale, out_scale))
        bounds = (0.0, None) if match.kind == "relu" else (prim_float(match["core"].args[1]),
                                                            prim_float(match["core"].args[2]))
        low = max(low, quantize_value(bounds[0], out_scale, out_zp))
        if bounds[1] is not None:
            high = min(high, quantize_value(bounds[1], out_scale, out_zp))
    return np.clip(values + out_zp, low, high).astype(np.int8)
