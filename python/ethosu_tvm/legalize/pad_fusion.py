"""A PAD folded into the convolution that alone reads it, as the convolution's own padding (Vela's graph
optimiser does the same): the padded copy is neither computed nor stored.

The NPU reads the IFM zero point wherever a convolution's window leaves the IFM, so a PAD whose value is that zero
point, on height and width only, is the convolution's padding made explicit; the two paddings add up. (Padding
after the IFM that no window reaches is harmless: code generation programs the rows and columns the windows read.)
The fold keeps to the padding Vela gives hardware, folding only where Vela does: each side at most half the dilated
kernel, and, where that half exceeds the stride, a leading pad of that half or a multiple of the stride. Other PADs
stay copies.
"""
from __future__ import annotations

from dataclasses import replace

from .ops import Conv2D, DepthwiseConv2D, NpuGraph, Pad, Padding
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
    replaced: dict[int, Conv2D | None] = {}  # id of a primitive → its replacement (None: a folded PAD)
    for pad in graph.ops:
        if not isinstance(pad, Pad) or pad.ofm.tensor.name in outputs:
            continue
        conv, *others = reads[pad.ofm.tensor.name]
        padding = None if others or type(conv) not in _FOLDING_READERS else _folded_padding(pad, conv)
        if padding is not None:
            replaced[id(conv)] = replace(conv, ifm=replace(conv.ifm, tensor=pad.ifm.tensor), padding=padding)
            replaced[id(pad)] = None
    if not replaced:
        return graph
    ops = (replaced.get(id(op), op) for op in graph.ops)
    return replace(graph, ops=tuple(op for op in ops if op is not None))
