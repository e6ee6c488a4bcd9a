"""Whether TFLite's int32 arithmetic gives the NPU's result: scales the NPU's 32-bit scale and 6-bit shift
express, and left shifts that keep TFLite's products within int32.
"""
from __future__ import annotations

import numpy as np

from ...quantization import per_channel_scale_shift, quantize_multiplier, shifts_in_range, undefined_left_shift


def scale_range(multipliers: np.ndarray) -> str:
    _, shift = per_channel_scale_shift(multipliers)
    if not shifts_in_range(shift):
        return (f"effective output scale {float(np.max(multipliers)):.3g} is outside what the NPU's 32-bit scale and"
                " 6-bit shift can represent")
    return ""


def scalar_scales(reals) -> str:
    """`scale_range` of the requantizations an elementwise or pooling operation takes as one immediate scale.
    Below 2^-32 TFLite's multiplier is 0 and the result a constant, which TE folds, losing the operation's reads
    that code generation needs (per-channel scales are read from a constant and not folded): host."""
    reals = np.asarray(reals, dtype=np.float64).reshape(-1)
    flushed = next((float(r) for r in reals if quantize_multiplier(float(r))[0] == 0), None)
    if flushed is not None:
        return (f"effective scale {flushed:.3g} is below 2^-32, where TFLite's multiplier is 0: a constant result, "
                "which the NPU operations are not generated for")
    return scale_range(reals)


def centred_magnitude(dtype: str, zero_point: int) -> int:
    """The largest |x − zero_point| of a `dtype` value."""
    info = np.iinfo(dtype)
    return max(int(zero_point) - int(info.min), int(info.max) - int(zero_point))


def wrapping_left_shift(bound: int, shift: int, real: float) -> str:
    """TFLite requantizes an int32 value v by a real multiplier of 1 or more with a left shift first, v · 2^shift in
    int32: where that can leave int32 (|v| ≤ `bound`), LiteRT's product wraps (undefined in C; x86-64 builds wrap,
    and the host kernels do too) while the NPU computes it exactly, so they would differ; such an operator stays
    on the host."""
    if shift > 0 and int(bound) << shift >= 1 << 31:
        return (f"effective output scale {real:.3g} shifts values of magnitude up to {int(bound)} left by {shift}"
                " bits, beyond TFLite's int32 arithmetic (LiteRT's product wraps there; the NPU's does not)")
    return ""


def wrapping_left_shifts(bounds, reals) -> str:
    """`wrapping_left_shift` per channel (`bounds` and `reals` per channel or one for all), with the shifts of
    TFLite's QuantizeMultiplier."""
    reals = np.asarray(reals, dtype=np.float64).reshape(-1)
    if reals.size == 0 or float(np.max(reals)) < 0.5:  # no left shift below 1 (a mantissa rounding up reaches 1)
        return ""
    bounds, reals = np.broadcast_arrays(np.asarray(bounds, dtype=object).reshape(-1), reals)
    return next(filter(None, (wrapping_left_shift(bound, quantize_multiplier(float(real))[1], real)
                              for bound, real in zip(bounds, reals))), "")


def defined_left_shifts(reals) -> str:
    """The first of `reals` TFLite's int32 arithmetic has no defined result for (`undefined_left_shift`), or "":
    such an operator stays on the host, which refuses it."""
    return next(filter(None, map(undefined_left_shift, reals)), "")
