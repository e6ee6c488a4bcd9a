"""Checks of the operators that move integers unchanged: reshapes, concatenations, packs, pads, slices,
resizes and transposes.
"""
from __future__ import annotations

import numpy as np

from ...arch import MAX_EXTENT
from ...qdq.match import Match
from ...qdq.values import dtype_of, quant_of, shape_of, slice_parameters
from ..npu_view import (
    broadcast_side,
    npu_axis,
    pack_view,
    permutation_of,
    resize_factor,
    transposed_ofm_shape,
    transposed_view,
)
from .generic import (
    COPY_DTYPES,
    SUPPORTED_DTYPES,
    FeatureMap,
    Tensors,
    activation,
    copied,
    feature_map,
    first,
    stride_limit,
)


def reshape_tensors(match: Match) -> Tensors:
    yield copied(match["ifm"], "IFM", batch_one=False)
    yield feature_map(match["reshape"], "OFM", dtypes=COPY_DTYPES)


def check_reshape(match: Match) -> str:
    """A copy of the same integers in another shape (8- or 16-bit). The copy writes one 3-D box, so the OFM has
    batch 1 (of a batch-N OFM it wrote only the first batch); the IFM is read as bytes in the OFM's shape."""
    return ""


def _inputs(match: Match) -> int:
    return len(match["concat"].args[0].fields)


def concatenation_tensors(match: Match) -> Tensors:
    """Each input and the output; the input quantizations are the output's (checked as an activation's first)."""
    yield from (copied(match[f"input{i}"], f"input {i}") for i in range(_inputs(match)))
    yield feature_map(match["quantize"], "OFM", dtypes=COPY_DTYPES)
    yield activation(match["quantize"], "OFM")
    yield from (activation(match[f"input{i}_dq"], f"input {i}") for i in range(_inputs(match)))


def check_concatenation(match: Match) -> str:
    """One copy per input into a box of the OFM: boxes are 3-D (batch 1), and the integers are copied unchanged."""
    concat = match["concat"]
    count = _inputs(match)
    ofm_q = quant_of(match["quantize"])

    def axis() -> str:
        found = npu_axis(int(concat.attrs.axis), len(shape_of(concat)))
        return "" if found > 0 else "CONCATENATION along the batch axis; the NPU copies 3-D boxes"

    def same_quant(index: int) -> str:
        q = quant_of(match[f"input{index}_dq"])
        if q.scalar_scale != ofm_q.scalar_scale or q.scalar_zero_point != ofm_q.scalar_zero_point:
            return (f"input {index} is quantized ({q.scalar_scale:.6g}, {q.scalar_zero_point}), the output"
                    f" ({ofm_q.scalar_scale:.6g}, {ofm_q.scalar_zero_point}); the inputs must share the output's"
                    " quantization")
        return ""

    return first(
        *(lambda i=i: same_quant(i) for i in range(count)),
        axis,
    )


def pack_tensors(match: Match) -> Tensors:
    """Each input (of any batch) and the output in the view the NPU writes."""
    concat = match["concat"]
    yield from (copied(match[f"input{i}"], f"input {i}", batch_one=False) for i in range(_inputs(match)))
    view, _ = pack_view(shape_of(concat), int(concat.attrs.axis) % len(shape_of(concat)))
    yield FeatureMap(view, dtype_of(concat), "OFM", dtypes=COPY_DTYPES)


def check_pack(match: Match) -> str:
    """A concatenation of the inputs along the new axis (each input copied into its box of the OFM's view, see
    `pack_view`)."""
    concat = match["concat"]
    rank = len(shape_of(concat))
    axis = int(concat.attrs.axis) % rank
    _, view_axis = pack_view(shape_of(concat), axis)

    for i in range(_inputs(match)):
        expand_axes = [int(a) % rank for a in match[f"expand{i}"].attrs.axis]
        if expand_axes != [axis]:
            return f"input {i} gains axes {expand_axes}, the concatenation is along {axis}"
    return "" if view_axis > 0 else "PACK along the batch axis; the NPU copies 3-D boxes"


def pad_tensors(match: Match) -> Tensors:
    yield copied(match["ifm"], "IFM")
    yield feature_map(match["pad"], "OFM", dtypes=COPY_DTYPES)


def check_pad(match: Match) -> str:
    """PAD and PADV2 with a constant: the IFM copied into its box of the OFM, constant blocks copied around it; or,
    read only by a convolution and padding with its IFM zero point, that convolution's own padding where the NPU's
    can stand for it (`legalize.pad_fusion`)."""
    attrs = match["pad"].attrs

    def value() -> str:
        pad_value, info = float(attrs.pad_value), np.iinfo(dtype_of(match["ifm"]))
        if pad_value.is_integer() and info.min <= pad_value <= info.max:
            return ""
        return f"pad value {pad_value} is not an {info.dtype} integer"

    return first(
        lambda: "" if str(attrs.pad_mode) == "constant" else f"{attrs.pad_mode} padding; only constant padding",
        value,
    )


def strided_slice_tensors(match: Match) -> Tensors:
    """The IFM (of any batch), the sliced box, and the OFM in its own shape when axes shrink or appear."""
    yield copied(match["ifm"], "IFM", batch_one=False)
    yield feature_map(match["slice"], "OFM", dtypes=COPY_DTYPES)
    if match.get("reshape") is not None:
        yield feature_map(match["reshape"], "OFM", False, COPY_DTYPES)


def check_strided_slice(match: Match) -> str:
    """A copy of a box of the IFM, strided on height and width as a 1x1 pool strides; the box must have batch 1
    (the NPU copies 3-D boxes), the IFM need not."""
    call = match["slice"]
    shape = shape_of(match["ifm"])
    axes, begin, strides = slice_parameters(call)
    strides_4d = (1,) * (4 - len(strides)) + strides

    if axes != tuple(range(len(shape))) or not all(0 <= b < d for b, d in zip(begin, shape)):
        return f"strided slice over axes {axes} from {begin}; every axis from a start inside it"
    sliced = (1,) * (4 - len(shape)) + shape_of(call)
    if any(s != 1 and sliced[axis] > 1 for axis, s in ((0, strides_4d[0]), (3, strides_4d[3]))):
        return f"strides {strides}; the NPU strides only height and width"
    if any(s < 1 for s in strides_4d[1:3]):
        return f"strides {strides}; the NPU strides forwards"
    return stride_limit(strides_4d[1:3], sliced)


# A 1x1 IFM's upscaled square may take at most this many times the OFM's bytes (a thin OFM would need far more).
MAX_BROADCAST_EXCESS = 4


def _resize_size(match: Match, method: str, aligned: bool) -> str:
    in_shape, out_shape = shape_of(match["ifm"]), shape_of(match["resize"])
    factor = resize_factor(in_shape, out_shape, aligned)
    side = broadcast_side(out_shape)
    if factor == 0 and side * side > MAX_BROADCAST_EXCESS * out_shape[1] * out_shape[2]:
        return (f"{method} resize from 1x1 to {out_shape[1]}x{out_shape[2]}; the NPU would upscale the pixel to "
                f"{side}x{side}, more than {MAX_BROADCAST_EXCESS} times the OFM")
    if factor is None:
        scaled = "(H-1)·k+1 x (W-1)·k+1 with corners aligned" if aligned else "kH x kW"
        return (f"{method} resize from {in_shape[1]}x{in_shape[2]} to {out_shape[1]}x{out_shape[2]}; the NPU "
                f"resizes to {scaled}, k = 1, 2, 4 or 8, or a 1x1 IFM to any size")
    return ""


def resize_tensors(match: Match) -> Tensors:
    """Nearest neighbour copies 8- or 16-bit integers; bilinear averages int8 ones of one quantization."""
    if match.kind == "resize_nearest_neighbor":
        yield copied(match["ifm"], "IFM")
        yield feature_map(match["resize"], "OFM", dtypes=COPY_DTYPES)
        return
    yield copied(match["ifm"], "IFM", dtypes=SUPPORTED_DTYPES)
    yield feature_map(match["quantize"], "OFM")
    yield activation(match["ifm_dq"], "IFM")


def check_resize_nearest_neighbor(match: Match) -> str:
    """The NPU's NEAREST upscaling doubles height and width: TFLite's nearest neighbour by 2, 4 or 8 (output (y, x)
    reads (y // k, x // k)) is that doubling repeated, and with corners aligned (it reads the input at round(y / k))
    the rows and columns from k / 2 on of the input upscaled by k; a 1x1 IFM resized to any size is its pixel
    everywhere."""
    attrs = match["resize"].attrs
    aligned = str(attrs.coordinate_transformation_mode) == "align_corners"

    def mode() -> str:
        if str(attrs.layout) != "NHWC" or str(attrs.method) != "nearest_neighbor":
            return f"{attrs.method} resize in {attrs.layout}; only nearest neighbour in NHWC"
        if str(attrs.coordinate_transformation_mode) not in ("asymmetric", "half_pixel", "align_corners"):
            return f"nearest neighbour resize with {attrs.coordinate_transformation_mode} coordinates"
        return ""

    return first(
        mode,
        lambda: _resize_size(match, "nearest neighbour", aligned),
    )


def check_resize_bilinear(match: Match) -> str:
    """Bilinear resizes whose int8 result is an average (TFLite's rounding, half away from zero) of the IFM upscaled
    by the NPU's NEAREST mode: by 2, 4 or 8 (half-pixel centres: by 2 only), or to (H-1)·k+1 x (W-1)·k+1 with
    corners aligned; the same size is a copy, and a 1x1 IFM resized to any size is its pixel everywhere. TFLite's
    integer kernel steps through the input by (1024·H + out/2) // out / 1024 of a pixel: exactly 1/k in all of
    them, so each output weighs its input pixels by multiples of 1/k²."""
    attrs = match["resize"].attrs
    transform = str(attrs.coordinate_transformation_mode)
    (_, height, width, _), (_, out_h, out_w, _) = shape_of(match["ifm"]), shape_of(match["resize"])
    ifm_q, ofm_q = quant_of(match["ifm_dq"]), quant_of(match["quantize"])

    def quant() -> str:
        if ifm_q.scalar_scale != ofm_q.scalar_scale or ifm_q.scalar_zero_point != ofm_q.scalar_zero_point:
            return "RESIZE_BILINEAR with different input and output quantizations; the NPU averages the integers"
        return ""

    def mode() -> str:
        if str(attrs.layout) != "NHWC" or str(attrs.method) != "linear":
            return f"{attrs.method} resize in {attrs.layout}; only bilinear in NHWC"
        if transform not in ("asymmetric", "align_corners", "half_pixel"):
            return f"bilinear resize with {transform} coordinates; the NPU averages upscaled pixels only"
        if transform == "half_pixel" and (height, width) != (1, 1) and (out_h, out_w) not in (
                (2 * height, 2 * width), (height, width)):
            return (f"bilinear resize from {height}x{width} to {out_h}x{out_w} with half-pixel centres; the NPU "
                    "upscales to 2H x 2W")
        return ""

    return first(
        quant,
        mode,
        lambda: _resize_size(match, "bilinear", transform == "align_corners"),
    )


def transpose_tensors(match: Match) -> Tensors:
    """The IFM (of any batch) and the OFM in the shape the NPU writes (once the IFM's rank is checked)."""
    yield copied(match["ifm"], "IFM", batch_one=False)
    permute = match["permute"]
    yield FeatureMap(transposed_ofm_shape(shape_of(permute)), dtype_of(permute), "OFM", dtypes=COPY_DTYPES)


def check_transpose(match: Match) -> str:
    """Permutations the NPU expresses as copies with swapped strides (see `transposed_view`), one per block of at
    most MAX_EXTENT rows and columns of the (A, B) view."""
    shape, perm = shape_of(match["ifm"]), permutation_of(match)

    found = transposed_view(shape, perm)
    if found is None:
        return (f"TRANSPOSE of {shape} by {perm}; the NPU swaps two axes (unit axes aside, axes that stay"
                " together merged) and keeps the innermost after them")
    if found[:2] != (1, 1) and found[2] > MAX_EXTENT:  # (1, 1, N): a reshape; A and B go in blocks
        return f"TRANSPOSE viewed as {found}; the depth kept innermost must be at most {MAX_EXTENT}"
    return ""
