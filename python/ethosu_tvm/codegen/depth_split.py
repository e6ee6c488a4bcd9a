"""Convolutions split along their OFM depth, so that each part's weights fit a buffer where the whole stream's do not.

A convolution whose weights stream from flash for longer than it computes waits for the flash. Buffering them
takes a buffer as large as the whole encoded stream beside the feature maps live at the time, and that may not
fit: ResNet-8's last 3x3 convolution streams 34,896 bytes where 17,424 are free. Split along its OFM depth into
parts, one NPU operation each with the weight stream of its own output channels, each part's buffer is a fraction
of the whole; its DMA can then run under the operations before it, or under another part, while the flash would
otherwise be idle (`codegen.prefetch` chooses the parts' states jointly). Vela double-buffers the weights of such
a convolution per OFM-depth slice the same way.

Parts are multiples of SPLIT_DEPTH channels (Vela's OFMSplitDepth: an OFM block depth that splits the OFM must be
one), at most MAX_PARTS of them. A convolution our own buffering choice streams is split where buffering would pay
but for the transfer (`Choice.streamed` above the buffered cycles); one that buffers its weights, where it waits
long for them: ResNet (large)'s 8x8x160 convolution buffers 107,968 bytes, and being large the transfer can only
start two operations ahead, so the convolution waits 77,312 cycles (ethos-u55-128), while four parts' transfers
fit in the flash's idle time under the operations before. Either way the smallest part's buffer must fit beside
what is live there.
"""
from __future__ import annotations

import math
from dataclasses import replace

from ..arch import round_up
from ..cascader.buffering import Choice
from ..legalize.ops import Conv2D, DepthwiseConv2D
from .tir_regions import Interval
from .tir_to_npu import Stripe

SPLIT_DEPTH = 16
MAX_PARTS = 4
WAIT_SHARE = 32


def part_depth(depth: int) -> int | None:
    """The depth of the parts a convolution of `depth` output channels is split into: MAX_PARTS equal parts (the
    last one what remains) rounded up to a multiple of SPLIT_DEPTH, or None when that leaves one part. More parts
    (smaller buffers, more room to issue their DMAs early) were within 0.01% of the best of two to four on every
    convolution tried (ResNet-8, MobileNetV2-224, person_detect); trying all three cost twice the compile time
    for 0.2% of MobileNetV2-224's cycles."""
    part = round_up(math.ceil(depth / MAX_PARTS), SPLIT_DEPTH)
    return part if part < depth else None


def parts(stripe: Stripe, depth: int) -> list[Stripe]:
    """The stripe's parts of `depth` output channels (the last one what remains); each reads the whole IFM."""
    channels = stripe.ofm.box[3]
    return [replace(stripe, ofm=replace(stripe.ofm, box=(*stripe.ofm.box[:3],
                                                         Interval(start, min(start + depth, channels.stop)))))
            for start in range(channels.start, channels.stop, depth)]


def worth_splitting(op, stripe: Stripe, choice: Choice, buffers: bool, live: int, limit: int, wait: int = 0,
                    elapsed: int = 0) -> bool:
    """Whether a convolution stripe with `live` bytes live beside it and at most `limit` in all may finish sooner
    split: see the module docstring. Buffering its weights (`buffers`), it must wait `wait` cycles for them, at
    least 1/WAIT_SHARE of the stream's `elapsed` cycles: the parts compute no faster than the whole, so a split
    saves at most that wait, and trying one costs about as much as building the convolution again."""
    depth = stripe.ofm.box[3].extent
    if not isinstance(op, Conv2D) or isinstance(op, DepthwiseConv2D) or choice.buffer is None:
        return False
    smallest = choice.buffer.nbytes * SPLIT_DEPTH // depth
    slow = wait * WAIT_SHARE >= elapsed > 0 if buffers else choice.streamed > choice.buffer.cycles
    return depth >= 2 * SPLIT_DEPTH and slow and live + smallest <= limit
