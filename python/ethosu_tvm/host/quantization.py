"""Compile-time quantization arithmetic: real multipliers to TFLite's integer (multiplier, shift) form.

TFLite derives every integer parameter of its kernels from float scales when a model is prepared; the host kernels
must derive exactly the same integers, so the float steps (including where TFLite rounds to float32) live here.
"""
from __future__ import annotations

import math

import numpy as np


def round_half_away(value: float) -> int:
    """std::round: halves round away from zero."""
    magnitude = math.floor(abs(value) + 0.5)
    return int(magnitude if value >= 0 else -magnitude)


def quantize_multiplier(real: float) -> tuple[int, int]:
    """TFLite's QuantizeMultiplier: real ≈ multiplier · 2^(shift − 31), multiplier a Q31 mantissa in [2^30, 2^31).

    A positive shift is a left shift. Multipliers below 2^-31 flush to (0, 0), as TFLite does.
    """
    if real == 0.0:
        return 0, 0
    fraction, shift = math.frexp(real)
    multiplier = round_half_away(fraction * (1 << 31))
    if multiplier == 1 << 31:
        multiplier //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    return multiplier, shift


def quantize_multipliers(reals) -> tuple[np.ndarray, np.ndarray]:
    """quantize_multiplier over an array: int32 multipliers and shifts (per-channel constants)."""
    pairs = [quantize_multiplier(float(r)) for r in np.asarray(reals, dtype=np.float64).reshape(-1)]
    return (np.array([p[0] for p in pairs], dtype=np.int32), np.array([p[1] for p in pairs], dtype=np.int32))


def float32_lut(function, in_scale: float, in_zp: int, out_scale: float, out_zp: int, dtype: str) -> np.ndarray:
    """A 256-entry int8 lookup table as TFLite's LUT kernels build it (logistic, tanh: BUILTIN_REF uses these).

    Entry i (for the input value i − 128) is clamp(out_zp + round(f(in_scale · (v − in_zp)) / out_scale)), with
    every step in float32; `function` maps a float32 array to float32 (it may compute in double and round).
    """
    info = np.iinfo(dtype)
    values = np.arange(info.min, info.max + 1, dtype=np.int64)
    dequantized = np.float32(in_scale) * (values - in_zp).astype(np.float32)
    with np.errstate(over="ignore"):
        transformed = function(dequantized).astype(np.float32)
    rescaled = transformed * (np.float32(1.0) / np.float32(out_scale))
    quantized = np.array([round_half_away(float(v)) for v in rescaled], dtype=np.int64) + out_zp
    return np.clip(quantized, info.min, info.max).astype(dtype)


INTERPOLATION_STEPS = 512  # a 16-bit table covers its input range in 512 steps of 128 input units


def interpolation_table(function, input_min: float, input_max: float) -> np.ndarray:
    """TFLite's 513-entry int16 table of `function` over [input_min, input_max] → [-1, 1) in Q0.15 (gen_lut).

    Entry i samples the function at the step's start, biased by half the error that linear interpolation makes at
    the step's midpoint; the last entry only gives the last step's slope. Computed in double, as TFLite does.
    """
    step = (input_max - input_min) / INTERPOLATION_STEPS
    scale = 32768.0  # 2^16 output codes over the output range [-1, 1)
    table = np.empty(INTERPOLATION_STEPS + 1, dtype=np.int16)
    for i in range(INTERPOLATION_STEPS):
        value = function(input_min + i * step)
        sample = round_half_away(value * scale)
        interpolated_midpoint = round_half_away((function(input_min + (i + 1) * step) * scale + sample) / 2)
        midpoint = round_half_away(function(input_min + i * step + step / 2) * scale)
        bias = round_half_away((interpolated_midpoint - midpoint) / 2)
        table[i] = min(max(sample - bias, -32768), 32767)
    table[INTERPOLATION_STEPS] = min(max(round_half_away(function(input_max) * scale), -32768), 32767)
    return table
