"""The lookup tables TFLite's LUT kernels build when a model is prepared, entry for entry.

int8 TANH and LOGISTIC are float32 tables in TFLite (BUILTIN_REF uses them too); int16 functions use 513-entry
interpolation tables. The NPU's lookup tables and the host kernels' constants are both built from these.
"""
from __future__ import annotations

import math

import numpy as np

from .fixed_point import (
    exp_on_negative_values,
    hard_swish_values,
    inv_sqrt_multiplier_exp,
    multiply_by_quantized_multiplier,
    multiply_by_quantized_multiplier_int,
    SOFTMAX_INT16_EXP_RANGE,
    softmax_input_scaling,
)
from .multipliers import quantize_multiplier, round_half_away, table_multipliers


def _rescaled(function, in_scale: float, in_zp: int, out_scale: float, values: np.ndarray) -> np.ndarray:
    """f(in_scale · (v − in_zp)) / out_scale for each raw value v, every step in float32, not yet rounded."""
    dequantized = np.float32(in_scale) * (values - in_zp).astype(np.float32)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        return function(dequantized).astype(np.float32) * (np.float32(1.0) / np.float32(out_scale))


def float32_lut(function, in_scale: float, in_zp: int, out_scale: float, out_zp: int, dtype: str) -> np.ndarray:
    """A 256-entry int8 lookup table as TFLite's LUT kernels build it (logistic, tanh, exp, log, rsqrt).

    Entry i (for the input value i − 128) is clamp(out_zp + round(f(in_scale · (v − in_zp)) / out_scale)), with
    every step in float32; `function` maps a float32 array to float32 (it may compute in double and round). A
    result of +inf saturates high; −inf and NaN (log of a non-positive value) give the lowest value, as LiteRT's.
    """
    info = np.iinfo(dtype)
    rescaled = _rescaled(function, in_scale, in_zp, out_scale, np.arange(info.min, info.max + 1, dtype=np.int64))
    bounded = np.nan_to_num(rescaled, nan=-np.inf).clip(-(1 << 40), 1 << 40)
    quantized = np.array([round_half_away(float(v)) for v in bounded], dtype=np.int64) + out_zp
    return np.clip(quantized, info.min, info.max).astype(dtype)


def float32_table_overflow(function, in_scale: float, in_zp: int, out_scale: float, out_zp: int) -> float | None:
    """The largest |value| beyond int32 that building `float32_lut`'s int8 table converts from float32, or None.
    TFLite Micro's LUT kernels (ELU) convert before they clamp, which C leaves undefined there (its x86-64 build
    gives INT32_MIN, LiteRT's optimised kernel something else)."""
    rescaled = _rescaled(function, in_scale, in_zp, out_scale, np.arange(-128, 128, dtype=np.int64))
    beyond = np.abs(np.round(rescaled).astype(np.float64) + out_zp)
    beyond = beyond[beyond >= 1 << 31]  # inf too; NaN (no ELU input gives one) is never beyond
    return float(beyond.max()) if beyond.size else None


def _in_double(function):
    """A float32 → float32 function computed in double and rounded once, as std::exp(float) etc. round."""
    return lambda x: function(x.astype(np.float64)).astype(np.float32)


_ERFC = np.vectorize(math.erfc, otypes=[np.float64])


def _elu(x: np.ndarray) -> np.ndarray:
    """TFLite Micro's ELU (its reference): exp(x) − 1 below 0, std::exp(float) then a float32 subtraction, not
    expm1 (which differs where exp rounds near 1: tiny input scales); x above."""
    x = x.astype(np.float32)
    exp = np.exp(x.astype(np.float64)).astype(np.float32)
    return np.where(x < 0, exp - np.float32(1.0), x).astype(np.float32)


def _gelu(x: np.ndarray) -> np.ndarray:
    """TFLite's GELU: 0.5·x · erfc(−x/√2), each product in float32, erfc as std::erfc(float) rounds."""
    x = x.astype(np.float32)
    tail = _ERFC((x * np.float32(-math.sqrt(0.5))).astype(np.float64)).astype(np.float32)
    return (np.float32(0.5) * x) * tail


def _gelu_tanh(x: np.ndarray) -> np.ndarray:
    """TFLite's approximate GELU: 0.5·x · (1 + tanh(√(2/π) · (x + 0.044715·x³))), in float32 step by step."""
    x = x.astype(np.float32)
    cubic = ((np.float32(0.044715) * x) * x) * x
    inner = np.float32(math.sqrt(2 / math.pi)) * (x + cubic)
    return (np.float32(0.5) * x) * (np.float32(1.0) + np.tanh(inner.astype(np.float64)).astype(np.float32))


# The int8 functions TFLite's kernels evaluate as a table of the float32 function (by TFLite operator);
# RSQRT is integer arithmetic instead (rsqrt_lut). Both GELU forms match LiteRT's tables on all 256 inputs of 300
# random quantizations (computing the whole function in double and rounding once misses one entry).
FLOAT32_FUNCTIONS = {
    "exp": _in_double(np.exp),
    "log": _in_double(np.log),
    "elu": _elu,
    "gelu": _gelu,
    "gelu_tanh": _gelu_tanh,
}


def hard_swish_lut(in_scale: float, in_zp: int, out_scale: float, out_zp: int) -> np.ndarray:
    """The 256-entry int8 table of TFLite's integer HARD_SWISH (its 16-bit fixed-point algorithm per input)."""
    centred = np.arange(-128, 128, dtype=np.int64) - in_zp
    return np.clip(hard_swish_values(centred, in_scale, out_scale) + out_zp, -128, 127).astype(np.int8)


SIGMOID_SEGMENTS = 255  # |input| beyond 255 segments of the int16 LOGISTIC/TANH table saturates


def sigmoid_table() -> np.ndarray:
    """The 256-entry table of TFLite's int16 LOGISTIC and TANH: sigmoid(h/24)·2^16 for h = 0..254, each biased by
    half the linear-interpolation error of its segment, then the 16-bit maximum (established by probing LiteRT on
    every int16 input; the NPU's built-in functions interpolate the same table)."""

    def sample(h: float) -> float:
        return 65536.0 / (1.0 + math.exp(-h / 24.0))

    table = [round_half_away(sample(h) - ((sample(h) + sample(h + 1)) / 2 - sample(h + 0.5)) / 2)
             for h in range(SIGMOID_SEGMENTS)]
    return np.array(table + [65535], dtype=np.uint16)


def sigmoid_input_rescale(scale: float) -> tuple[int, int]:
    """(multiplier, right shift) taking int16 LOGISTIC/TANH input integers to units of 1/(3·4096), the multiplier
    above 2^14 (TFLite's Prepare, in double)."""
    multiplier, shift = scale * 4096.0 * 3.0, 0
    while multiplier <= 32767.0 / 2.0 and shift <= 30:
        shift += 1
        multiplier *= 2.0
    return int(multiplier), shift


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


def npu_interpolation_lut(table: np.ndarray) -> np.ndarray:
    """A 513-entry interpolation table as the NPU's 16-bit LUT: 512 words, base in bits [15:0] and the slope to the
    next entry in bits [31:16]. The NPU interpolates base + (slope · low 7 bits + 64) >> 7 at index (x + 32768) >> 7,
    TFLite's lookup exactly, while every slope fits in 16 bits."""
    base = table[:-1].astype(np.int64)
    slope = np.diff(table.astype(np.int64))
    if np.any(np.abs(slope) > 32767):
        raise ValueError("an interpolation table's slope does not fit in 16 bits")
    return ((slope & 0xFFFF) << 16 | base & 0xFFFF).astype(np.uint32)


def softmax_int16_tables() -> tuple[np.ndarray, np.ndarray]:
    """The two tables of TFLite's int16 SOFTMAX: exp over [-10, 0] and 1/(1 + x) over [0, 1]."""
    return (interpolation_table(math.exp, -SOFTMAX_INT16_EXP_RANGE, 0.0),
            interpolation_table(lambda v: 1.0 / (1.0 + v), 0.0, 1.0))


def abs_lut(in_scale: float, in_zp: int, out_scale: float, out_zp: int) -> np.ndarray:
    """The 256-entry int8 table of TFLite's integer ABS: |x − in_zp| requantized by in_scale/out_scale (the ratio
    in float32), + out_zp."""
    centred = np.abs(np.arange(-128, 128, dtype=np.int64) - in_zp)
    (ratio,) = table_multipliers("abs", in_scale, out_scale)
    return np.clip(multiply_by_quantized_multiplier(centred, ratio) + out_zp, -128, 127).astype(np.int8)


def rsqrt_lut(in_scale: float, in_zp: int, out_scale: float, out_zp: int) -> np.ndarray:
    """The 256-entry int8 table of TFLite's integer RSQRT: 1/sqrt(x − in_zp) in fixed point, rescaled by
    1/(sqrt(in_scale)·out_scale) (sqrt and product in float32, reciprocal in double); x = in_zp gives the
    highest value. Inputs below in_zp, which LiteRT refuses at run time, get the lowest."""
    multiplier, shift = quantize_multiplier(1.0 / float(np.sqrt(np.float32(in_scale)) * np.float32(out_scale)))
    table = []
    for value in range(-128 - in_zp, 128 - in_zp):
        if value <= 0:
            table.append(127 if value == 0 else -128)
            continue
        inv_multiplier, inv_shift = inv_sqrt_multiplier_exp(value)
        data = multiply_by_quantized_multiplier_int(1, inv_multiplier, inv_shift + 20)
        table.append(min(max(multiply_by_quantized_multiplier_int(data, multiplier, shift - 20) + out_zp, -128), 127))
    return np.array(table, dtype=np.int8)


def neg_lut(in_scale: float, in_zp: int, out_scale: float, out_zp: int) -> np.ndarray:
    """The 256-entry int8 table of LiteRT's int8 NEG: the raw integer negated, −128 wrapping to itself (it reads no
    quantization; the importer accepts only the quantizations where that is −x on the real values)."""
    return ((128 - np.arange(-128, 128, dtype=np.int64)) % 256 - 128).astype(np.int8)


def sqrt_lut(in_scale: float, in_zp: int, out_scale: float, out_zp: int) -> np.ndarray:
    """The 256-entry int8 table of TFLite's int8 SQRT, which runs float32 arithmetic per element (no table of its
    own): sqrt(in_scale · (x − in_zp)) / out_scale, truncated toward zero, + out_zp, clamped. Inputs below in_zp,
    which LiteRT refuses at run time, get the lowest value."""
    centred = np.arange(-128, 128, dtype=np.int64) - in_zp
    dequantized = np.float32(in_scale) * centred.astype(np.float32)
    with np.errstate(invalid="ignore"):
        quotient = np.sqrt(dequantized) / np.float32(out_scale)
    truncated = np.trunc(np.nan_to_num(quotient, nan=-np.inf).clip(-(1 << 20), 1 << 20)).astype(np.int64)
    return np.where(centred < 0, -128, np.clip(truncated + out_zp, -128, 127)).astype(np.int8)


def softmax_exp_lut(beta: float, in_scale: float) -> np.ndarray:
    """The 256 int32 exps of TFLite's int8 SOFTMAX, indexed by x − max + 255 (input differences −255..0): each
    difference rescaled by beta · scale into Q5.26, then exp in Q0.31; 0 below diff_min, as TFLite skips those."""
    multiplier, left_shift, diff_min = softmax_input_scaling(beta, in_scale)
    return np.array([exp_on_negative_values(multiply_by_quantized_multiplier_int(diff, multiplier, left_shift))
                     if diff >= diff_min else 0 for diff in range(-255, 1)], dtype=np.int32)
