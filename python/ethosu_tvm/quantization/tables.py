"""The lookup tables TFLite's LUT kernels build when a model is prepared, entry for entry.

int8 TANH and LOGISTIC are float32 tables in TFLite (BUILTIN_REF uses them too); int16 functions use 513-entry
interpolation tables. The NPU's lookup tables and the host kernels' constants are both built from these.
"""
from __future__ import annotations

import numpy as np

from .fixed_point import hard_swish_values
from .multipliers import round_half_away


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


def float32_exp(x: np.ndarray) -> np.ndarray:
    """std::exp of float32 values: the exponential in double, rounded once to float32."""
    return np.exp(x.astype(np.float64)).astype(np.float32)


def hard_swish_lut(in_scale: float, in_zp: int, out_scale: float, out_zp: int) -> np.ndarray:
    """The 256-entry int8 table of TFLite's integer HARD_SWISH (its 16-bit fixed-point algorithm per input)."""
    centred = np.arange(-128, 128, dtype=np.int64) - in_zp
    return np.clip(hard_swish_values(centred, in_scale, out_scale) + out_zp, -128, 127).astype(np.int8)


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
