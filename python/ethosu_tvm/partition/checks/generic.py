"""The limits every NPU operator meets (Vela's generic constraints): its feature maps' types, ranks, extents
and batch, and its activations' quantization, which the constraint table applies to the tensors each operator
declares; and the stride limit.

Each check returns the reason the operator must stay on the host, or "" when the NPU can run it.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from ...arch import MAX_EXTENT
from ...qdq.values import Quant, dtype_of, is_const, quant_of, shape_of

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


@dataclass(frozen=True)
class FeatureMap:
    """A tensor an operator reads or writes, in the shape and type the NPU sees it; `constant` when it is a model
    constant an NPU copy would read."""

    shape: tuple[int, ...]
    dtype: str
    what: str
    batch_one: bool = True
    dtypes: tuple[str, ...] = SUPPORTED_DTYPES
    constant: bool = False

    def reason(self) -> str:
        if self.constant:
            return f"{self.what} is a constant; the NPU copies feature maps"
        if self.dtype not in self.dtypes:
            return f"{self.what} has data type {self.dtype}; tensors must be of type {', '.join(self.dtypes)}"
        if len(self.shape) > 4:
            return f"{self.what} is {len(self.shape)}-D; tensors must not be greater than 4-D"
        low, high = TENSOR_DIM_RANGE
        if not all(low <= d <= high for d in self.shape):
            return f"{self.what} has shape {self.shape}; tensor dimensions must be in the range [{low}, {high}]"
        if self.batch_one and len(self.shape) == 4 and self.shape[0] != 1:
            return f"{self.what} has batch size {self.shape[0]}; the IFM batch size must be 1"
        return ""


@dataclass(frozen=True)
class Activation:
    """The quantization of a feature map (weights alone may be quantized per axis)."""

    quant: Quant
    what: str

    def reason(self) -> str:
        scale, what = self.quant.scale, self.what
        if self.quant.per_axis:
            return f"{what} has per-axis quantization; per-axis quantization is only supported on weights"
        if not np.all(np.isfinite(scale)) or not np.all(scale > 0):
            return f"{what} has scale {scale.tolist()}; quantization scales must be finite and positive"
        if np.any(scale > MAX_ACTIVATION_SCALE):
            return (f"{what} has scale {float(np.max(scale)):.3g}; the NPU's clamps are given to Vela as real "
                    f"values in float32, which overflow above a scale of {MAX_ACTIVATION_SCALE:.3g}")
        return ""


# What an operator declares for the generic limits, lazily (a later tensor's view may need an earlier one's limits)
Tensors = Iterator[FeatureMap | Activation]


def feature_map(expr, what: str, batch_one: bool = True, dtypes: tuple[str, ...] = SUPPORTED_DTYPES) -> FeatureMap:
    return FeatureMap(shape_of(expr), dtype_of(expr), what, batch_one, dtypes)


def copied(expr, what: str, batch_one: bool = True, dtypes: tuple[str, ...] = COPY_DTYPES) -> FeatureMap:
    """An input a copy reads: a feature map, not a model constant (the frontend leaves those to fold, or to the
    operator that takes them, such as a fully connected layer's transposed weights)."""
    return FeatureMap(shape_of(expr), dtype_of(expr), what, batch_one, dtypes, is_const(expr))


def activation(quantized, what: str) -> Activation:
    """The quantization of `quantized` (a dequantize or quantize call) as an activation's."""
    return Activation(quant_of(quantized), what)


def generic(tensors: Tensors) -> str:
    """The first generic limit one of an operator's tensors breaks, in the order it declares them, as Vela checks
    its generic constraints on every operator before the operator's own."""
    return next(filter(None, (tensor.reason() for tensor in tensors)), "")


def stride_limit(strides, ofm_shape: tuple[int, ...]) -> str:
    """Stride limits apply only along axes with more than one output element (Vela's rule too)."""
    low, high = STRIDE_RANGE
    out_hw = ofm_shape[1:3]
    if not all(low <= s <= high or extent == 1 for s, extent in zip(strides, out_hw)):
        return f"stride HxW is {strides[0]}x{strides[1]}; stride values must be in the range [{low}, {high}]"
    return ""


def quantized_io(match, dtypes: tuple[str, ...] = SUPPORTED_DTYPES, batch_one: tuple[bool, bool] = (True, True),
                 ofm_dtypes: tuple[str, ...] | None = None) -> Tensors:
    """The tensors of an operator that reads one quantized IFM ("ifm") and writes one quantized OFM ("quantize"):
    `batch_one` for each, the OFM of `ofm_dtypes` when given, else of `dtypes` as the IFM."""
    yield feature_map(match["ifm"], "IFM", batch_one[0], dtypes)
    yield feature_map(match["quantize"], "OFM", batch_one[1], ofm_dtypes or dtypes)
    yield activation(match["ifm_dq"], "IFM")
    yield activation(match["quantize"], "OFM")
