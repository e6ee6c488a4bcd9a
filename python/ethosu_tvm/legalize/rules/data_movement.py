"""Rules of the operators that move integers unchanged: reshapes, concatenations, packs, pads, slices,
resizes and transposes."""
from __future__ import annotations

from dataclasses import replace

from ...partition.npu_view import broadcast_side, npu_axis, pack_view, permutation_of, resize_factor, transposed_view
from ...qdq.match import Match
from ...qdq.values import shape_of, slice_parameters
from ..ops import Concatenate, Identity, NpuOp, Pad, Padding, Pooling, Slice, Tensor, Transpose, Upscale
from .operands import npu_shape, raw_of


def reshape(match: Match, tensors: dict, ofm: Tensor, source: str) -> NpuOp:
    return Identity(ifm=raw_of(tensors[match["ifm"]]), ofm=raw_of(ofm), source=source)


def concatenation(match: Match, tensors: dict, ofm: Tensor, source: str) -> NpuOp:
    """The inputs share the output's quantization (partitioning checks), so the raw integers are copied; the axis
    is counted in the 4-D NHWC shape (leading 1s)."""
    concat = match["concat"]
    rank = len(shape_of(concat))
    count = len(concat.args[0].fields)
    return Concatenate(
        inputs=tuple(raw_of(tensors[match[f"input{i}"]]) for i in range(count)),
        ofm=raw_of(ofm),
        axis=npu_axis(int(concat.attrs.axis), rank),
        source=source,
    )


def pack(match: Match, tensors: dict, ofm: Tensor, source: str) -> tuple[NpuOp, ...]:
    """A concatenation along the new axis of the inputs seen with that axis (extent 1), in the OFM's view: an input
    whose own 4-D shape differs is first copied into that shape (the same bytes)."""
    concat = match["concat"]
    rank = len(shape_of(concat))
    _, axis = pack_view(shape_of(concat), int(concat.attrs.axis) % rank)
    slot = tuple(1 if i == axis else extent for i, extent in enumerate(ofm.shape))
    reshapes, inputs = [], []
    for i in range(len(concat.args[0].fields)):
        tensor = tensors[match[f"input{i}"]]
        if tensor.shape != slot:
            viewed = Tensor(f"{ofm.name}_input{i}", slot, tensor.dtype)
            reshapes.append(Identity(ifm=raw_of(tensor), ofm=raw_of(viewed), source=source))
            tensor = viewed
        inputs.append(raw_of(tensor))
    return (*reshapes, Concatenate(inputs=tuple(inputs), ofm=raw_of(ofm), axis=axis, source=source))


def pad(match: Match, tensors: dict, ofm: Tensor, source: str) -> NpuOp:
    """PAD and PADV2 (constant mode: partitioning checks) on the raw integers; the padding before each axis, in the
    4-D NHWC shape."""
    call = match["pad"]
    widths = [int(w) for w in call.attrs.pad_width]
    before = (0,) * (4 - len(widths) // 2) + tuple(widths[0::2])
    return Pad(ifm=raw_of(tensors[match["ifm"]]), ofm=raw_of(ofm), before=before,
               value=int(float(call.attrs.pad_value)), source=source)


def strided_slice(match: Match, tensors: dict, ofm: Tensor, source: str) -> NpuOp | tuple[NpuOp, ...]:
    """SLICE, STRIDED_SLICE and the outputs of SPLIT, SPLIT_V and UNPACK (strides on height and width only:
    partitioning checks), in 4-D NHWC. When axes shrink or appear, the sliced box is the OFM's bytes in another
    shape: the slice writes it, and a reshape copies it, unless both shapes are the same in 4-D."""
    call = match["slice"]
    _, begin, strides = slice_parameters(call)
    sliced = npu_shape(shape_of(call))
    ifm = tensors[match["ifm"]]
    begin_4d = (0,) * (4 - len(begin)) + begin
    strides_hw = ((1,) * (4 - len(strides)) + strides)[1:3]
    if sliced == ofm.shape:
        return Slice(ifm=raw_of(ifm), ofm=raw_of(ofm), begin=begin_4d, strides=strides_hw, source=source)
    box = Tensor(f"{ofm.name}_sliced", sliced, ofm.dtype)
    return (Slice(ifm=raw_of(ifm), ofm=raw_of(box), begin=begin_4d, strides=strides_hw, source=source),
            Identity(ifm=raw_of(box), ofm=raw_of(ofm), source=source))


def _upscaled(ifm: Tensor, factor: int, name: str, source: str) -> tuple[list[NpuOp], Tensor]:
    """The NPU's NEAREST upscaling by 2 repeated: `ifm` with each element in a `factor` x `factor` block."""
    ops, upscaled = [], ifm
    _, height, width, depth = ifm.shape
    while upscaled.shape[1] < factor * height:
        scale = 2 * upscaled.shape[1] // height
        previous, upscaled = upscaled, Tensor(f"{name}_upscaled{scale}", (1, scale * height, scale * width, depth),
                                              ifm.dtype)
        ops.append(Upscale(ifm=raw_of(previous), ofm=raw_of(upscaled), source=source))
    return ops, upscaled


def _resize(match: Match, tensors: dict, ofm: Tensor) -> tuple[Tensor, str, int]:
    """The IFM, the coordinate transformation and the factor k the partitioning admitted."""
    ifm = tensors[match["ifm"]]
    transform = str(match["resize"].attrs.coordinate_transformation_mode)
    return ifm, transform, resize_factor(ifm.shape, ofm.shape, transform == "align_corners")


def _broadcast(ifm: Tensor, ofm: Tensor, source: str) -> tuple[NpuOp, ...]:
    """A 1x1 IFM resized to the OFM's size, every output its one pixel (TFLite's nearest neighbour, and its bilinear
    weights summing to one): the pixel upscaled until it covers the OFM, then the OFM's box of it."""
    upscales, upscaled = _upscaled(ifm, broadcast_side(ofm.shape), ofm.name, source)
    if upscaled.shape == ofm.shape:
        return (*upscales[:-1], replace(upscales[-1], ofm=raw_of(ofm)))
    return (*upscales, Slice(ifm=raw_of(upscaled), ofm=raw_of(ofm), begin=(0, 0, 0, 0), source=source))


def resize_nearest_neighbor(match: Match, tensors: dict, ofm: Tensor, source: str) -> NpuOp | tuple[NpuOp, ...]:
    """By k = 2, 4 or 8 (partitioning checks): output (y, x) reads (y // k, x // k), with and without half-pixel
    centres: the IFM upscaled by k. With corners aligned it reads round(y / k), ties up: the IFM upscaled by k
    from row and column k / 2 on. The same size is a copy; a 1x1 IFM is broadcast."""
    ifm, transform, factor = _resize(match, tensors, ofm)
    if factor == 0:
        return _broadcast(ifm, ofm, source)
    if factor == 1:
        return Identity(ifm=raw_of(ifm), ofm=raw_of(ofm), source=source)
    if transform != "align_corners":
        upscales, _ = _upscaled(ifm, factor // 2, ofm.name, source)
        last = upscales[-1].ofm.tensor if upscales else ifm
        return (*upscales, Upscale(ifm=raw_of(last), ofm=raw_of(ofm), source=source))
    upscales, upscaled = _upscaled(ifm, factor, ofm.name, source)
    half = factor // 2
    return (*upscales, Slice(ifm=raw_of(upscaled), ofm=raw_of(ofm), begin=(0, half, half, 0), source=source))


def resize_bilinear(match: Match, tensors: dict, ofm: Tensor, source: str) -> NpuOp | tuple[NpuOp, ...]:
    """Bilinear by k = 2, 4 or 8, or to (H-1)·k+1 x (W-1)·k+1 with corners aligned (partitioning checks), as an
    average pool of the IFM upscaled by NEAREST, on the raw integers: the pool's rounding (half away from zero) is
    TFLite's, and padding is no tap, so at the edges the input's last row and column are averaged alone, as TFLite
    clamps to them. The same size is a copy; a 1x1 IFM is broadcast.

    Output y weighs pixel y // k by 1 − j/k and the next by j/k (j = y mod k): a k x k pool of stride 1 over the IFM
    upscaled by k, with k − 1 rows and columns of padding after it (none with corners aligned, whose last output is
    the last pixel). With half-pixel centres (k = 2), by a quarter and three quarters: a 4x4 pool of stride 2 over
    the IFM upscaled by 4, from one row and column before it. The pool reads the last doubling itself (`upscale`),
    so only the copies before it take memory: none by 2."""
    ifm, transform, factor = _resize(match, tensors, ofm)
    if factor == 0:
        return _broadcast(ifm, ofm, source)
    if factor == 1:
        return Identity(ifm=raw_of(ifm), ofm=raw_of(ofm), source=source)
    if transform == "half_pixel":
        upscales, upscaled = _upscaled(ifm, 2, ofm.name, source)
        pool_shape, strides, padding = (4, 4), (2, 2), Padding(1, 1, 1, 1)
    else:
        upscales, upscaled = _upscaled(ifm, factor // 2, ofm.name, source)
        after = 0 if transform == "align_corners" else factor - 1
        pool_shape, strides, padding = (factor, factor), (1, 1), Padding(bottom=after, right=after)
    return (*upscales, Pooling(pooling_type="AVG", ifm=raw_of(upscaled), ofm=raw_of(ofm), pool_shape=pool_shape,
                               strides=strides, padding=padding, source=source, upscale=True))


def transpose(match: Match, tensors: dict, ofm: Tensor, source: str) -> NpuOp:
    """A permutation that keeps the order of the axes longer than 1 is a reshape; others swap rows and columns of
    their (A, B, C) view (partitioning checks there is one)."""
    ifm = tensors[match["ifm"]]
    view = transposed_view(shape_of(match["ifm"]), permutation_of(match))
    if view[:2] == (1, 1):
        return Identity(ifm=raw_of(ifm), ofm=raw_of(ofm), source=source)
    return Transpose(ifm=raw_of(ifm), ofm=raw_of(ofm), view=view, source=source)
