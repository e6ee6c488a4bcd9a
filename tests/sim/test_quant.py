"""Rounding and scaling arithmetic against hand-computed values and an independent TFLite-style formulation."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ethosu_tvm.sim.quant import Rounding, apply_scale, round_half_away, round_half_up, round_toward_zero, shift_round

HALF = 1 << 30  # multiplier 0.5 in Q31


@pytest.mark.parametrize(
    "x, shift, tfl, natural, truncate",
    [
        (3, 31, 2, 2, 1),  # 1.5: single rounding half up for shift <= 31
        (-3, 31, -1, -1, -1),  # -1.5
        (6, 32, 2, 2, 1),  # 1.5 via SRDHM 3 then 3/2 rounded half away
        (-6, 32, -2, -1, -1),  # -1.5: TFL rounds the second step away from zero, NATURAL up
        (5, 32, 2, 1, 1),  # 1.25: TFL double rounding 2.5 -> 3 -> 1.5 -> 2
        (-5, 32, -1, -1, -1),  # -1.25: SRDHM -2.5 -> -2, then -1
        (7, 33, 1, 1, 0),  # 0.875
        (-10, 33, -1, -1, -1),  # -1.25: SRDHM -5, then -5/4 -> -1
        (0, 40, 0, 0, 0),
    ],
)
def test_scale_by_half_hand_computed(x, shift, tfl, natural, truncate):
    values = np.array([x])
    assert apply_scale(values, HALF, shift, Rounding.TFL)[0] == tfl
    assert apply_scale(values, HALF, shift, Rounding.NATURAL)[0] == natural
    assert apply_scale(values, HALF, shift, Rounding.TRUNCATE)[0] == truncate


def test_single_step_rounding_hand_computed():
    x = np.array([5, 6, 7, -5, -6, -7])  # /4: 1.25 1.5 1.75 and negatives
    assert round_half_up(x, 2).tolist() == [1, 2, 2, -1, -1, -2]
    assert round_half_away(x, 2).tolist() == [1, 2, 2, -1, -2, -2]
    assert round_toward_zero(x, 2).tolist() == [1, 1, 1, -1, -1, -1]
    assert shift_round(x, 2, Rounding.NATURAL).tolist() == [1, 2, 2, -1, -1, -2]
    assert shift_round(x, 0, Rounding.TFL).tolist() == x.tolist()


def test_wide_accumulators_are_exact():
    """40-bit accumulators times 31-bit multipliers exceed int64; the result must still be exact."""
    x = np.array([1 << 39, -(1 << 39) + 1, (1 << 39) - 1])
    multiplier, shift = (1 << 31) - 1, 40
    expected = [(int(v) * multiplier + (1 << 39)) >> 40 for v in x]  # round half up, Python integers
    assert apply_scale(x, multiplier, shift, Rounding.NATURAL).tolist() == expected


def test_per_channel_multipliers_and_shifts():
    x = np.array([[100, 100, -100]])
    result = apply_scale(x, np.array([HALF, HALF, 3 << 29]), np.array([31, 33, 32]), Rounding.NATURAL)
    assert result.tolist() == [[50, 13, -37]]  # 50, 12.5 -> 13, -37.5 -> -37


def _srdhm(a: int, b: int) -> int:
    """gemmlowp's SaturatingRoundingDoublingHighMul: nudge, then divide truncating towards zero."""
    product = a * b
    nudged = product + ((1 << 30) if product >= 0 else 1 - (1 << 30))
    quotient = abs(nudged) // (1 << 31)
    return quotient if nudged >= 0 else -quotient


def _rounding_divide_by_pot(x: int, exponent: int) -> int:
    mask = (1 << exponent) - 1
    threshold = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> exponent) + (1 if (x & mask) > threshold else 0)


def _tflite_double_rounding(x: int, multiplier: int, shift: int) -> int:
    """TFLite's MultiplyByQuantizedMultiplier with its exponent written as a right shift (exponent = 31 - shift)."""
    exponent = 31 - shift
    return _rounding_divide_by_pot(_srdhm(x * (1 << max(exponent, 0)), multiplier), max(-exponent, 0))


@settings(max_examples=400, deadline=None)
@given(x=st.integers(-(1 << 31), (1 << 31) - 1), multiplier=st.integers(1 << 30, (1 << 31) - 1),
       shift=st.integers(31, 62))
def test_tfl_rounding_matches_tflite_formulation(x, multiplier, shift):
    expected = _tflite_double_rounding(x, multiplier, shift)
    assert apply_scale(np.array([x]), multiplier, shift, Rounding.TFL)[0] == expected


@settings(max_examples=200, deadline=None)
@given(x=st.integers(-(1 << 15), 1 << 15), multiplier=st.integers(1 << 30, (1 << 31) - 1), shift=st.integers(16, 30))
def test_tfl_rounding_below_31_matches_tflite_formulation(x, multiplier, shift):
    """TFLite shifts left first; x stays small enough that this does not overflow 32 bits."""
    expected = _tflite_double_rounding(x, multiplier, shift)
    assert apply_scale(np.array([x]), multiplier, shift, Rounding.TFL)[0] == expected


@settings(max_examples=200, deadline=None)
@given(x=st.integers(-(1 << 31), (1 << 31) - 1), multiplier=st.integers(1, (1 << 31) - 1), shift=st.integers(1, 62))
def test_natural_and_truncate_against_python_integers(x, multiplier, shift):
    product = x * multiplier
    assert apply_scale(np.array([x]), multiplier, shift, Rounding.NATURAL)[0] == (product + (1 << (shift - 1))) >> shift
    truncated = abs(product) >> shift
    assert apply_scale(np.array([x]), multiplier, shift, Rounding.TRUNCATE)[0] == (truncated if product >= 0
                                                                                   else -truncated)
