"""Lookup tables for int8 → int8 functions, computed as TFLite's kernels compute them.

An int8 unary op is fully described by its value on the 256 possible inputs, so the NPU runs it exactly as a table
(indexed by input + 128). Requantizing ops use TFLite's integer arithmetic, with the float steps where its Prepare
computes in float32 or in double; TANH and LOGISTIC are float32 tables in TFLite itself.
"""
from __future__ import annotations

import numpy as np

from ..qdq.match import Match
from ..qdq.values import prim_float, quant_of, table_reals
from ..quantization import (
    FLOAT32_FUNCTIONS,
    abs_lut,
    float32_lut,
    hard_swish_lut,
    multiply_by_quantized_multiplier,
    neg_lut,
    quantize_value,
    rsqrt_lut,
    sqrt_lut,
)

INT8_VALUES = np.arange(-128, 128, dtype=np.int64)


def _logistic(x: np.ndarray) -> np.ndarray:
    return np.float32(1.0) / (np.float32(1.0) + np.exp(-x))


FLOAT_FUNCTIONS = {"tanh": np.tanh, "logistic": _logistic, **FLOAT32_FUNCTIONS}
INTEGER_TABLES = {"abs": abs_lut, "hard_swish": hard_swish_lut, "rsqrt": rsqrt_lut, "sqrt": sqrt_lut, "neg": neg_lut}


def lookup_table(match: Match) -> np.ndarray:
    """The int8 table of a unary composite (relu, clip, abs, leaky_relu, requantize, hard_swish, tanh, logistic,
    exp, log, rsqrt, sqrt, neg, elu, gelu)."""
    ifm, ofm = quant_of(match["ifm_dq"]), quant_of(match["quantize"])
    if match.kind in FLOAT_FUNCTIONS:
        return float32_lut(FLOAT_FUNCTIONS[match.kind], ifm.scalar_scale, ifm.scalar_zero_point, ofm.scalar_scale,
                           ofm.scalar_zero_point, "int8")
    if match.kind in INTEGER_TABLES:
        return INTEGER_TABLES[match.kind](ifm.scalar_scale, ifm.scalar_zero_point, ofm.scalar_scale,
                                          ofm.scalar_zero_point)
    centred = INT8_VALUES - ifm.scalar_zero_point
    out_scale, out_zp = ofm.scalar_scale, ofm.scalar_zero_point
    low, high = -128, 127
    reals = table_reals(match)
    values = multiply_by_quantized_multiplier(centred, reals[0])
    if match.kind == "leaky_relu":
        values = np.where(centred >= 0, values, multiply_by_quantized_multiplier(centred, reals[1]))
    elif match.kind != "requantize":  # relu / clip: a requantization clamped to the activation range
        bounds = (0.0, None) if match.kind == "relu" else (prim_float(match["core"].args[1]),
                                                            prim_float(match["core"].args[2]))
        low = max(low, quantize_value(bounds[0], out_scale, out_zp))
        if bounds[1] is not None:
            high = min(high, quantize_value(bounds[1], out_scale, out_zp))
    return np.clip(values + out_zp, low, high).astype(np.int8)
