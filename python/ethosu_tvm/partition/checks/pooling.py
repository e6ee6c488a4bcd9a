"""Checks of the average and max pools, and the kernel limits reductions share with them."""
from __future__ import annotations

from ...qdq.match import Match
from ...qdq.values import dtype_of, shape_of
from .convolution import MAX_DILATED_KERNEL_AREA, MAX_DILATED_KERNEL_HEIGHT
from .generic import Tensors, feature_map, first, stride_limit

MAX_PADDED_AVG_POOL_KERNEL = 8
MAX_POOL_KERNEL_HEIGHT = 256
MAX_POOL_KERNEL_AREA = 256 * 256
# Unpadded average pools whose IFM block does not fit in SHRAM run as depthwise convolutions, so their kernels
# stay within the depthwise limits (Vela instead splits larger pools, which we do not do yet).
MAX_AVG_KERNEL_HEIGHT = MAX_DILATED_KERNEL_HEIGHT
MAX_AVG_KERNEL_AREA = MAX_DILATED_KERNEL_AREA
# An unpadded average pool multiplies the window sum by a 32-bit 1/N. For 16-bit sums that equals TFLite's division
# (rounded half away from zero) for every N up to 504 taps; 505 is the first count where it differs (checked over
# every int16 window sum). Padded pools divide in hardware, exactly.
MAX_INT16_AVG_TAPS = 504
# Pools take the raw integers of either width: MAX compares them, AVERAGE divides their sum by the tap count.
POOL_DTYPES = ("int8", "int16")


def pool_tensors(match: Match) -> Tensors:
    """8- or 16-bit feature maps of batch 1, taken as raw integers (no quantization)."""
    yield feature_map(match["ifm"], "IFM", dtypes=POOL_DTYPES)
    yield feature_map(match["out"], "OFM", dtypes=POOL_DTYPES)


def _pool_common(match: Match) -> str:
    """NHWC, no ceil mode, strides up to 3."""
    attrs = match["pool"].attrs
    return first(
        lambda: "" if str(attrs.layout) == "NHWC" else f"layout {attrs.layout} is not NHWC",
        lambda: "" if not bool(attrs.ceil_mode) else "ceil_mode pooling is not supported",
        lambda: stride_limit([int(s) for s in attrs.strides], shape_of(match["pool"])),
    )


def check_avg_pool2d(match: Match) -> str:
    """AVERAGE_POOL_2D: 8- or 16-bit NHWC feature maps of batch 1, strides up to 3, padded kernels up to 8x8 (the
    NPU divides exactly), unpadded ones up to 64 high and 64x64 (a depthwise convolution), int16 ones of at most
    504 taps (where the NPU's 1/N scale stops matching TFLite's division)."""
    attrs = match["pool"].attrs
    kernel_h, kernel_w = (int(k) for k in attrs.pool_size)
    padded = any(int(p) for p in attrs.padding)
    limit = MAX_PADDED_AVG_POOL_KERNEL

    def kernel() -> str:
        if padded and not (kernel_h <= limit and kernel_w <= limit):
            return f"padded average pool kernel HxW is {kernel_h}x{kernel_w}; it must be in the range [1, {limit}]"
        if not padded and dtype_of(match["ifm"]) == "int16" and kernel_h * kernel_w > MAX_INT16_AVG_TAPS:
            return (f"int16 average pool of {kernel_h}x{kernel_w} taps; the NPU's 1/N scale is exact for int16 up to"
                    f" {MAX_INT16_AVG_TAPS} taps")
        return average_kernel(kernel_h, kernel_w)

    return first(
        lambda: _pool_common(match),
        lambda: "count_include_pad average pooling is not supported" if bool(attrs.count_include_pad) else "",
        kernel,
    )


def average_kernel(kernel_h: int, kernel_w: int, what: str = "average pool kernel", unit: str = "taps") -> str:
    if kernel_h > MAX_AVG_KERNEL_HEIGHT or kernel_h * kernel_w > MAX_AVG_KERNEL_AREA:
        return (f"{what} HxW is {kernel_h}x{kernel_w}; at most {MAX_AVG_KERNEL_HEIGHT} high and"
                f" {MAX_AVG_KERNEL_AREA} {unit} are supported")
    return ""


def pool_kernel(kernel_h: int, kernel_w: int) -> str:
    if kernel_h > MAX_POOL_KERNEL_HEIGHT:
        return f"pool kernel height is {kernel_h}; it must be in the range [1, {MAX_POOL_KERNEL_HEIGHT}]"
    if kernel_h * kernel_w > MAX_POOL_KERNEL_AREA:
        return f"pool kernel area is {kernel_h * kernel_w}; it must be in the range [1, {MAX_POOL_KERNEL_AREA}]"
    return ""


def check_max_pool2d(match: Match) -> str:
    """MAX_POOL_2D: 8- or 16-bit NHWC feature maps of batch 1, strides up to 3, a kernel up to 256 high and
    256x256 in area."""
    kernel_h, kernel_w = (int(k) for k in match["pool"].attrs.pool_size)
    return first(lambda: _pool_common(match), lambda: pool_kernel(kernel_h, kernel_w))
