"""How the NPU sees an operator: the views, windows, factors and scales that the partition checks test and the
legalize rules build from.

Both stages must agree on them, and data flows from partitioning to legalization (legalize imports partition's
modules, never the reverse), so they live here, beside the checks.
"""
from __future__ import annotations

import numpy as np

from ..qdq.match import Match
from ..qdq.values import const_value, quant_of, shape_of
from ..quantization import mean_multiplier, quantize_multiplier


def reduced_axes(match: Match) -> tuple[int, ...]:
    """The axes a MEAN, SUM, REDUCE_MAX or REDUCE_MIN reduces, non-negative and sorted (None in Relax: all)."""
    rank = len(shape_of(match["ifm"]))
    axis = match["reduce"].attrs.axis
    return tuple(range(rank)) if axis is None else tuple(sorted({int(a) % rank for a in axis}))


def reduction_window(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[
        tuple[int, int, int, int], tuple[int, int], tuple[int, int, int] | None]:
    """The NPU's form of a reduction of a tensor of batch 1: (4-D IFM view, kernel (height, width), swap), one
    window covering the reduced elements of each output element. Height and width are reduced in place. Otherwise
    the reduced axes (extent-1 axes aside) are made adjacent: when they are the first and the last of three, the
    tensor, seen as (A, B, C), is first transposed to (B, A, C) (`swap` is then (A, B, C)). The tensor is then seen
    as (1, outer, reduced, inner) and reduced along its width."""
    full = (1,) * (4 - len(shape)) + tuple(shape)
    axes = tuple(a + 4 - len(shape) for a in axes)
    wide = [a for a in axes if full[a] != 1]
    if all(a in (1, 2) for a in wide):  # (no wide axis at all included)
        return full, (full[1] if 1 in wide else 1, full[2] if 2 in wide else 1), None
    kept = [a for a in range(wide[0], wide[-1] + 1) if full[a] != 1 and a not in wide]
    if kept:  # at most three axes are wider than 1: the middle one is kept
        swap = (full[wide[0]], full[kept[0]], full[wide[-1]])
        return (1, swap[1], swap[0] * swap[2], 1), (1, swap[0] * swap[2]), swap
    outer, reduced, inner = (int(np.prod(part)) for part in (full[:wide[0]], full[wide[0]:wide[-1] + 1],
                                                             full[wide[-1] + 1:]))
    return (1, outer, reduced, inner), (1, reduced), None


def reduction_count(match: Match) -> int:
    """How many input elements each output element of a reduction reduces."""
    shape = shape_of(match["ifm"])
    return int(np.prod([shape[a] for a in reduced_axes(match)]))


def sum_multiplier(match: Match) -> tuple[int, int]:
    """TFLite's (multiplier, left shift) of a SUM or an int8 MEAN, for the centred sum:
    input scale / output scale in double, with MEAN's 1/count folded in."""
    ifm_q, ofm_q = quant_of(match["ifm_dq"]), quant_of(match["quantize"])
    real = float(np.float64(ifm_q.scalar_scale) / np.float64(ofm_q.scalar_scale))
    if match.kind == "mean":
        return mean_multiplier(real, reduction_count(match))
    return quantize_multiplier(real)


def transpose_conv_padding(match: Match) -> tuple[int, int, int, int]:
    """(top, left, bottom, right) padding of the zero-upscaled IFM that a stride-1 convolution with the kernel
    reversed reads for TRANSPOSE_CONV: output row o sums input rows i with i·stride + k − before = o, k the tap;
    reversed, that is the upscaled row o + k' − (K − 1 − before), so K − 1 − before rows go above, and below what
    the output's last window reaches past the stride·H upscaled rows (their last stride − 1 are zeros already)."""
    conv = match["conv"]
    (_, height, width, _), (_, out_h, out_w, _) = shape_of(match["ifm"]), shape_of(conv)
    kernel_h, kernel_w = shape_of(conv.args[1])[2:]
    stride_h, stride_w = (int(s) for s in conv.attrs.strides)
    before_h, before_w = (int(p) for p in conv.attrs.padding[:2])
    top, left = kernel_h - 1 - before_h, kernel_w - 1 - before_w
    return (top, left, out_h + kernel_h - 1 - top - stride_h * height, out_w + kernel_w - 1 - left - stride_w * width)


def softmax_beta(match: Match) -> float:
    """SOFTMAX's beta: the scalar the importer multiplies the dequantized input by (1 when it wrote none)."""
    beta = match.get("beta")
    return 1.0 if beta is None else float(np.asarray(const_value(beta)).reshape(-1)[0])


def npu_axis(axis: int, rank: int) -> int:
    """An axis of a rank-`rank` tensor in the 4-D NHWC shape the NPU sees (leading 1s)."""
    return axis % rank + 4 - rank


def pack_view(shape: tuple[int, ...], axis: int) -> tuple[tuple[int, int, int, int], int]:
    """PACK's OFM (of `shape`, the new axis `axis`) as the NPU writes it, and that axis in it: up to 4-D its own
    shape in NHWC; a 5-D one as (1, before, count, after), the axes before and after the new one merged (the same
    bytes, each input one box of them: Vela reshapes so too). No NPU operator reads a 5-D tensor, so no reader
    sees the merged view."""
    if len(shape) <= 4:
        return (1,) * (4 - len(shape)) + tuple(shape), npu_axis(axis, len(shape))
    before, after = (int(np.prod(part, dtype=np.int64)) for part in (shape[:axis], shape[axis + 1:]))
    return (1, before, shape[axis], after), 2


RESIZE_FACTORS = (1, 2, 4, 8)  # Vela's: the NPU doubles height and width per NEAREST copy


def resize_factor(in_shape, out_shape, aligned: bool) -> int | None:
    """k when the OFM is k times the IFM in height and width alike (with corners aligned: k·(n − 1) + 1, where an
    axis of 1 stays 1 whatever k), for k in RESIZE_FACTORS; 0 for a 1x1 IFM resized to any size (every output is
    its pixel); None otherwise."""
    if tuple(in_shape[1:3]) == (1, 1) and tuple(out_shape[1:3]) != (1, 1):
        return 0
    factors = set()
    for size, out in zip(in_shape[1:3], out_shape[1:3]):
        if aligned and size == 1:
            if out != 1:
                return None
            continue
        whole, rest = divmod(out - 1, size - 1) if aligned else divmod(out, size)
        if rest:
            return None
        factors.add(whole)
    factor = factors.pop() if len(factors) == 1 else (None if factors else 1)
    return factor if factor in RESIZE_FACTORS else None


def broadcast_side(out_shape) -> int:
    """The side of the square a 1x1 IFM is upscaled to before the OFM's box is cut from it: the NPU doubles height
    and width together, up to the first power of two covering both."""
    return 1 << (max(out_shape[1:3]) - 1).bit_length()


def permutation_of(match: Match) -> tuple[int, ...]:
    """The TRANSPOSE's permutation (None in Relax: the axes reversed)."""
    rank, axes = len(shape_of(match["ifm"])), match["permute"].attrs.axes
    return tuple(range(rank))[::-1] if axes is None else tuple(int(a) % rank for a in axes)


def transposed_view(shape: tuple[int, ...], perm: tuple[int, ...]) -> tuple[int, int, int] | None:
    """The input seen as (A, B, C) whose output is (B, A, C) in element order, when the permutation is one: with
    axes of extent 1 left out and axes the output keeps side by side in their order merged (NCHW to NHWC is
    (C, H·W) to (H·W, C)), it swaps two axes followed by at most one more (the NPU copies it with the row and
    column strides of the IFM or the OFM swapped, depth kept). (1, 1, N) when the order of the other axes is kept
    (a reshape); None otherwise."""
    ranked = sorted(axis for axis in perm if shape[axis] != 1)
    runs: list[list[int]] = []  # positions in `ranked`, in output order, each run one merged axis
    for position in (ranked.index(axis) for axis in perm if shape[axis] != 1):
        if runs and position == runs[-1][-1] + 1:
            runs[-1].append(position)
        else:
            runs.append([position])
    starts = sorted(run[0] for run in runs)
    order = [starts.index(run[0]) for run in runs]
    dims = [int(np.prod([shape[ranked[p]] for p in run], dtype=np.int64)) for run in sorted(runs)]
    if order == sorted(order):
        return (1, 1, int(np.prod(dims, dtype=np.int64)))
    if order == [1, 0]:
        return (dims[0], dims[1], 1)
    if order == [1, 0, 2]:
        return (dims[0], dims[1], dims[2])
    return None


def transposed_ofm_shape(shape: tuple[int, ...]) -> tuple[int, int, int, int]:
    """The 4-D shape a TRANSPOSE's output is written in: its batch merged into its height (the same bytes; the NPU
    writes one batch)."""
    batch, height, width, depth = (1,) * (4 - len(shape)) + tuple(shape)
    return (1, batch * height, width, depth)
