"""The limits every NPU operator meets (Vela's generic constraints): its feature maps' types, ranks, extents
and batch, its activations' quantization, and its strides.

Each check returns the reason the operator must stay on the host, or "" when the NPU can run it.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...arch import MAX_EXTENT
from ...qdq.values import Quant, dtype_of, is_const, shape_of

TENSOR_DIM_RANGE = (1, MAX_EXTENT)
STRIDE_RANGE = (1, 3)
# Vela takes an operation's clamp as real values, (q - zero point) · scale in float32; with |q - zero point| up to
# 65535 (int16), larger scales overflow it.
MAX_ACTIVATION_SCALE = float(np.finfo(np.float32).max) / 65535
SUPPORTED_DTYPES = ("int8",)
# Copies (data movement) move the integers unchanged: a 1x1 max pool does so for 16-bit feature maps too.
COPY_DTYPES = ("int8", "int16")


def first(*reasons: Callable[[], str]) -> str:
    """Evaluate checks in order and return the first failure (later checks may rely on earlier ones)."""
    for reason in reasons:
        text = reason()
        if text:
            return text
    return ""


def feature_map(expr, what: str, batch_one: bool = True, dtypes: tuple[str, ...] = SUPPORTED_DTYPES) -> str:
    return feature_map_shape(shape_of(expr), dtype_of(expr), what, batch_one, dtypes)


def feature_map_shape(shape: tuple[int, ...], dtype: str, what: str, batch_one: bool = True,
                       dtypes: tuple[str, ...] = SUPPORTED_DTYPES) -> str:
    if dtype not in dtypes:
        return f"{what} has data type {dtype}; tensors must be of type {', '.join(dtypes)}"
    if len(shape) > 4:
        return f"{what} is {len(shape)}-D; tensors must not be greater than 4-D"
    low, high = TENSOR_DIM_RANGE
    if not all(low <= d <= high for d in shape):
        return f"{what} has shape {shape}; tensor dimensions must be in the range [{low}, {high}]"
    if batch_one and len(shape) == 4 and shape[0] != 1:
        return f"{what} has batch size {shape[0]}; the IFM batch size must be 1"
    return ""


def feature_map_input(expr, what: str, batch_one: bool = True, dtypes: tuple[str, ...] = COPY_DTYPES) -> str:
    """An input a copy reads: a feature map, not a model constant (the frontend leaves those to fold, or to the
    operator that takes them, such as a fully connected layer's transposed weights)."""
    if is_const(expr):
        return f"{what} is a constant; the NPU copies feature maps"
    return feature_map(expr, what, batch_one, dtypes)


def activation_quant(quant: Quant, what: str) -> str:
    if quant.per_axis:
        return f"{what} has per-axis quantization; per-axis quantization is only supported on weights"
    if not np.all(np.isfinite(quant.scale)) or not np.all(quant.scale > 0):
        return f"{what} has scale {quant.scale.tolist()}; quantization scales must be finite and positive"
    if np.any(quant.scale > MAX_ACTIVATION_SCALE):
        return (f"{what} has scale {float(np.max(quant.scale)):.3g}; the NPU's clamps are given to Vela as real "
                f"values in float32, which overflow above a scale of {MAX_ACTIVATION_SCALE:.3g}")
    return ""


def stride_limit(strides, ofm_shape: tuple[int, ...]) -> str:
    """Stride limits apply only along axes with more than one output element (Vela's rule too)."""
    low, high = STRIDE_RANGE
    out_hw = ofm_shape[1:3]
    if not all(low <= s <= high or extent == 1 for s, extent in zip(strides, out_hw)):
        return f"stride HxW is {strides[0]}x{strides[1]}; stride values must be in the range [{low}, {high}]"
    return ""
