"""Fixed-point arithmetic of the output and operand scaling units, vectorised over int64 arrays.

A scale is a 32-bit multiplier M and a 6-bit right shift s: the ideal result is x * M / 2**s. The rounding modes:

* TFL (double rounding, TFLite's MultiplyByQuantizedMultiplier): for s >= 31, first round-half-up at bit 31
  (SaturatingRoundingDoublingHighMul), then round-half-away-from-zero for the remaining s - 31 bits
  (RoundingDivideByPOT); for s < 31 a single round-half-up at bit s.
* NATURAL: one round-half-up at bit s.
* TRUNCATE: towards zero.

Products are exact: when x * M could exceed int64 the arithmetic falls back to Python integers.
"""
from __future__ import annotations

from enum import IntEnum

import numpy as np


class Rounding(IntEnum):
    """The round_mode field of IFM_PRECISION / OFM_PRECISION."""

    TFL = 0
    TRUNCATE = 1
    NATURAL = 2


_INT64_SAFE = 1 << 62


def round_half_up(x: np.ndarray, s: int) -> np.ndarray:
    """x / 2**s rounded half towards +infinity."""
    return (x + (1 << (s - 1))) >> s if s else x


def round_half_away(x: np.ndarray, s: int) -> np.ndarray:
    """x / 2**s rounded half away from zero (TFLite's RoundingDivideByPOT)."""
    if not s:
        return x
    magnitude = (abs(x) + (1 << (s - 1))) >> s
    return np.where(x < 0, -magnitude, magnitude)


def round_toward_zero(x: np.ndarray, s: int) -> np.ndarray:
    """x / 2**s truncated towards zero."""
    if not s:
        return x
    magnitude = abs(x) >> s
    return np.where(x < 0, -magnitude, magnitude)


def shift_round(x: np.ndarray, s: int, rounding: Rounding) -> np.ndarray:
    """x / 2**s with a single rounding step in the given mode (TFL rounds half away from zero here)."""
    if rounding is Rounding.NATURAL:
        return round_half_up(x, s)
    if rounding is Rounding.TRUNCATE:
        return round_toward_zero(x, s)
    return round_half_away(x, s)


def apply_scale(x: np.ndarray, multiplier: np.ndarray | int, shift: np.ndarray | int, rounding: Rounding) -> np.ndarray:
    """Round x * multiplier / 2**shift the way the output unit does. multiplier and shift may be per channel
    (broadcast against the last axis of x); multipliers are 0..2**31-1, shifts 0..63."""
    x = np.asarray(x, dtype=np.int64)
    multiplier = np.asarray(multiplier, dtype=np.int64)
    shift = np.asarray(shift, dtype=np.int64)
    big = x.size and (int(np.max(np.abs(x))) * max(int(np.max(multiplier)), 1) >= _INT64_SAFE
                      or int(np.max(shift)) > 62)
    if big:
        x = x.astype(object)
        multiplier = multiplier.astype(object)
    if shift.ndim == 0:
        result = _scale_uniform(x * multiplier, int(shift), rounding)
    else:
        result = np.empty(np.broadcast_shapes(x.shape, shift.shape), dtype=x.dtype)
        product = x * multiplier
        for s in np.unique(shift):
            lanes = shift == s
            result[..., lanes] = _scale_uniform(product[..., lanes], int(s), rounding)
    if big:
        return _to_int64(result)
    return result


def _scale_uniform(product: np.ndarray, s: int, rounding: Rounding) -> np.ndarray:
    if rounding is Rounding.TFL and s > 31:
        return round_half_away(round_half_up(product, 31), s - 31)
    if rounding is Rounding.TRUNCATE:
        return round_toward_zero(product, s)
    return round_half_up(product, s)


def _to_int64(values: np.ndarray) -> np.ndarray:
    flat = [int(v) for v in np.ravel(values)]
    if flat and (max(flat) >= 1 << 63 or min(flat) < -(1 << 63)):
        raise OverflowError("scaled value does not fit in 64 bits")
    return np.array(flat, dtype=np.int64).reshape(np.shape(values))
