"""TFLite's STRIDED_SLICE index arithmetic: which input elements its reference kernel copies, in which order.

TVM's converter handles the masks its own way (and ignores `offset`); `data_movement` instead emits a plain
strided slice (`strided_slice`) over the input's axes computed here, then a reshape to the output's shape (shrunk
and new axes).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SliceSpec:
    """STRIDED_SLICE's constant operands and options, as stored in the model."""

    begin: tuple[int, ...]
    end: tuple[int, ...]
    strides: tuple[int, ...]
    begin_mask: int = 0
    end_mask: int = 0
    ellipsis_mask: int = 0
    new_axis_mask: int = 0
    shrink_axis_mask: int = 0
    offset: bool = False


def _bit(mask: int, i: int) -> bool:
    return bool(mask >> i & 1)


def _effective_masks(spec: SliceSpec, rank: int, extra: int) -> tuple[int, int, int]:
    """The ellipsis and new-axis masks over the effective axes (the input's plus the new ones), and how many
    effective axes the ellipsis covers beyond its own."""
    count, axes = len(spec.begin), rank + extra
    ellipsis = new_axis = expanded = 0
    i = 0
    while i < axes:
        if _bit(spec.ellipsis_mask, i):
            stop = max(i + 1, min(i + 1 + extra + rank - count, axes))
            expanded = stop - i - 1
            ellipsis |= (1 << stop) - (1 << i)
            i = stop
            continue
        if _bit(spec.new_axis_mask, i - expanded):
            new_axis |= 1 << i
        i += 1
    return ellipsis, new_axis, expanded


def _clamp(value: int, size: int, step: int) -> int:
    """Negative indices count from the end; then [0, size] going forward, [-1, size - 1] going backward."""
    value += size if value < 0 else 0
    return min(max(value, 0), size) if step > 0 else min(max(value, -1), size - 1)


def strided_slice_ranges(spec: SliceSpec, shape: tuple[int, ...]) -> tuple[list[range], tuple[int, ...]]:
    """The input indices copied along each input axis, and TFLite's output shape.

    Raises ValueError for what TFLite itself refuses or computes inconsistently (a zero stride, an output shape
    that disagrees with the elements its kernel writes, `offset` beside an ellipsis or new axes).
    """
    rank, count = len(shape), len(spec.begin)
    if not len(spec.end) == len(spec.strides) == count:
        raise ValueError("begin, end and strides differ in length")
    extra = sum(1 for i in range(count) if _bit(spec.new_axis_mask, i) and not _bit(spec.ellipsis_mask, i))
    ellipsis, new_axis, expanded = _effective_masks(spec, rank, extra)
    if spec.offset and (ellipsis or new_axis or count != rank):
        raise ValueError("offset with an ellipsis, new axes or fewer indices than input axes")
    ranges, out_shape = [], []
    added_ellipsis = added_axes = 0
    first_ellipsis = next((i for i in range(rank + extra) if _bit(ellipsis, i)), rank + extra)
    for i in range(rank + extra):
        if _bit(new_axis, i):
            out_shape.append(1)
            added_axes += 1
            continue
        size = shape[i - added_axes]
        if _bit(ellipsis, i) or i >= count + expanded:
            added_ellipsis = max(0, i - first_ellipsis) if _bit(ellipsis, i) else added_ellipsis
            ranges.append(range(size))
            out_shape.append(size)
            continue
        k = i - added_ellipsis
        step = spec.strides[k]
        if step == 0:
            raise ValueError("a stride is zero")
        start = (0 if step > 0 else size - 1) if _bit(spec.begin_mask, k) else _clamp(spec.begin[k], size, step)
        if _bit(spec.shrink_axis_mask, k):
            indices = range(start, start if start >= size else start + 1, step)  # empty going backward
            if len(indices) != 1:
                raise ValueError(f"axis {i - added_axes} shrinks to index {spec.begin[k]} of {size} with stride "
                                 f"{step}: TFLite's kernel copies no element")
            ranges.append(indices)
            continue
        stop = spec.end[k] + (start if spec.offset else 0)
        stop = (size if step > 0 else -1) if _bit(spec.end_mask, k) else _clamp(stop, size, step)
        indices = range(start, stop, step)
        declared = len(range(0, spec.end[k], step)) if spec.offset else len(indices)
        if declared != len(indices):
            raise ValueError(f"the output shape along axis {i - added_axes} ({declared}) is not the {len(indices)} "
                             "elements the kernel copies")
        ranges.append(indices)
        out_shape.append(len(indices))
    return ranges, tuple(out_shape)


def strided_slice(x, ranges: list[range], shape):
    """The Relax strided slice of the elements of `x` (of `shape`) at `ranges`, one per axis."""
    from tvm import relax

    # Ends past the front of an axis (going backward) are written below -size, as Relax reads them.
    ends = [r.start + len(r) * r.step for r in ranges]
    ends = [end if end >= 0 else -size - 1 for end, size in zip(ends, shape)]
    return relax.op.strided_slice(x, list(range(len(ranges))), [r.start for r in ranges], ends,
                                  [r.step for r in ranges])
