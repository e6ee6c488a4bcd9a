"""A PAD folded into the convolution that alone reads it, as the convolution's own padding (Vela's graph
optimiser does the same): the padded copy is neither computed nor stored.

The NPU reads the IFM zero point wherever a convolution's window leaves the IFM, so a PAD whose value is that zero
point, on height and width only, is the convolution's padding made explicit. The two paddings add up. The fold
keeps to the padding Vela gives hardware (and folds only where Vela does): each side at most half the dilated
kernel, and a leading pad that keeps the window on the rows and columns of the stride when half the kernel exceeds
it. Other PADs stay copies.
"""
from __future__ import annotations

from dataclasses import replace

from .ops import Conv2D, DepthwiseConv2D, NpuGraph, Operand, Pad, Padding
from .reuse import readers

_FOLDING_READERS = (Conv2D, DepthwiseConv2D)  # not TransposeConv2D: its padding surrounds the upscaled IFM


def _leading_pad_ok(pad: int, stride: int, half: int) -> bool:
    return pad == half or half <= stride or pad % stride == 0


def _folded_padding(pad: Pad, conv: Conv2D) -> Padding | None:
    """The convolution's padding with the PAD's added, or None when the NPU's padding cannot stand for it."""
    before = pad.before
    after = tuple(o - i - b for o, i, b in zip(pad.ofm.tensor.shape, pad.ifm.tensor.shape, before))
    if before[0] or before[3] or after[0] or after[3] or pad.value != conv.ifm.zero_point:
        return None
    own = conv.padding
    total = Padding(own.top + before[1], own.left + before[2], own.bottom + after[1], own.right + after[2])
    halves = [(d * (k - 1) + 1) // 2 for k, d in zip(conv.kernel, conv.dilation)]  # of the dilated kernel
    if max(total.top, total.bottom) > halves[0] or max(total.left, total.right) > halves[1]:
        return None
    if not (_leading_pad_ok(total.top, conv.strides[0], halves[0])
            and _leading_pad_ok(total.left, conv.strides[1], halves[1])):
        return None
    return total


def fold_pads(graph: NpuGraph) -> NpuGraph:
    """`graph` with each PAD that a convolution alone reads (and that is no subgraph output) folded into it."""
    reads = readers(graph)
    outputs = {tensor.name for tensor in graph.outputs}
    folded: dict[int, Conv2D] = {}
    dropped: set[int] = set()
    for index, pad in enumerate(graph.ops):
        name = pad.ofm.tensor.name if isinstance(pad, Pad) else None
        if name is None or name in outputs or len(reads[name]) != 1 or type(reads[name][0]) not in _FOLDING_READERS:
            continue
        conv = reads[name][0]
        padding = _folded_padding(pad, conv)
        if padding is not None:
            ifm = Operand(pad.ifm.tensor, conv.ifm.zero_point, conv.ifm.scale)
            folded[next(i for i, op in enumerate(graph.ops) if op is conv)] = replace(conv, ifm=ifm, padding=padding)
            dropped.add(index)
    if not dropped:
        return graph
    ops = tuple(folded.get(i, op) for i, op in enumerate(graph.ops) if i not in dropped)
    return replace(graph, ops=ops)
