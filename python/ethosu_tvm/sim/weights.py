"""Compressed weight streams: decode with Arm's mlw codec, then undo the hardware traversal order.

The weight decoder consumes weights in the order the MAC array needs them. For each OFM block (OFM_BLK_DEPTH
channels) and IFM block (32 channels, 16 for part-kernel-first or 16-bit IFMs; one pass for depthwise), the kernel
is split into sub-kernels of at most 8x8 taps (8/dilation per axis). Within a sub-kernel:

* depth-first:        OFM ublock > kernel tap > IFM ublock (all of the IFM block, even when clipped) >
                      OFM ublock lane > IFM ublock lane
* part-kernel-first:  IFM ublock > OFM ublock > kernel tap > OFM ublock lane > IFM ublock lane
* depthwise:          OFM ublock > kernel tap > OFM ublock lane

Kernel taps run row-major over the sub-kernel and are padded to a multiple of 4 (depthwise, 8-bit part-kernel)
or 2 (16-bit part-kernel); positions beyond the tensor are zero. Ublock depths depend on the accelerator.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np

from ..arch import round_up
from . import mlw

SUB_KERNEL_MAX = 8


@dataclass(frozen=True)
class WeightLayout:
    """Everything that fixes the order of a weight stream. Kernel sizes are in taps (not dilated extents)."""

    ofm_depth: int
    kernel_height: int
    kernel_width: int
    ifm_depth: int  # 1 for depthwise
    ofm_block_depth: int
    ofm_ublock_depth: int
    ifm_ublock_depth: int
    depthwise: bool
    part_kernel: bool
    ifm_bits: int
    dilation_y: int = 1
    dilation_x: int = 1

    @property
    def shape(self) -> tuple[int, int, int, int]:
        """The OHWI shape of the weights."""
        return (self.ofm_depth, self.kernel_height, self.kernel_width, self.ifm_depth)


@dataclass(frozen=True)
class _Piece:
    """One sub-kernel of one OFM block and IFM block: the unit the traversal orders are defined on."""

    ofm0: int
    ofm_count: int
    ifm0: int
    ifm_count: int  # channels the IFM block holds
    ifm_span: int  # channels the traversal visits (the whole IFM block for depth-first)
    ky0: int
    kx0: int
    height: int
    width: int


def _piece_order(layout: WeightLayout, piece: _Piece) -> np.ndarray:
    """OHWI flat indices (-1 for padding) of one piece, in stream order: its shape's order from the origin
    (`_piece_shape_order`), moved to the piece's origin, since a flat index is linear in each OHWI coordinate."""
    order = _piece_shape_order(layout, piece.ofm_count, piece.ifm_count, piece.ifm_span, piece.height, piece.width)
    offset = ((piece.ofm0 * layout.kernel_height + piece.ky0) * layout.kernel_width + piece.kx0) * layout.ifm_depth
    return np.where(order >= 0, order + (offset + piece.ifm0), -1)


@lru_cache(maxsize=4096)
def _piece_shape_order(layout: WeightLayout, ofm_count: int, ifm_count: int, ifm_span: int, height: int,
                       width: int) -> np.ndarray:
    """The order of a piece of this shape at OHWI origin 0, once per shape: a layout's pieces are of a few shapes
    (whole blocks and the clipped ones at the edges)."""
    taps = height * width
    if layout.part_kernel:
        taps = round_up(taps, 2 if layout.ifm_bits == 16 else 4)
    elif layout.depthwise:
        taps = round_up(taps, 4)
    ifm_lanes = 1 if layout.depthwise else layout.ifm_ublock_depth
    ofm_ublock = np.arange(0, ofm_count, layout.ofm_ublock_depth)
    ifm_ublock = np.arange(0, ifm_span, layout.ifm_ublock_depth)
    tap, ofm_lane, ifm_lane = np.arange(taps), np.arange(layout.ofm_ublock_depth), np.arange(ifm_lanes)
    if layout.part_kernel:
        ifm_u, ofm_u, tap, ofm_lane, ifm_lane = np.ix_(ifm_ublock, ofm_ublock, tap, ofm_lane, ifm_lane)
    else:
        ofm_u, tap, ifm_u, ofm_lane, ifm_lane = np.ix_(ofm_ublock, tap, ifm_ublock, ofm_lane, ifm_lane)
    ofm, ifm = ofm_u + ofm_lane, ifm_u + ifm_lane
    ky, kx = tap // width, tap % width
    valid = (ofm < ofm_count) & (ifm < ifm_count) & (ky < height)
    flat = ((ofm * layout.kernel_height + ky) * layout.kernel_width + kx) * layout.ifm_depth + ifm
    order = np.where(valid, flat, -1).ravel()
    order.flags.writeable = False
    return order


def _pieces(layout: WeightLayout):
    ifm_block = 16 if layout.part_kernel or layout.ifm_bits == 16 else 32
    decomp_h, decomp_w = SUB_KERNEL_MAX // layout.dilation_y, SUB_KERNEL_MAX // layout.dilation_x
    for ofm0 in range(0, layout.ofm_depth, layout.ofm_block_depth):
        ofm_count = min(layout.ofm_block_depth, layout.ofm_depth - ofm0)
        for ifm0 in range(0, 1 if layout.depthwise else layout.ifm_depth, ifm_block):
            if layout.depthwise:
                ifm_count = ifm_span = 1
            else:
                ifm_count = min(ifm_block, layout.ifm_depth - ifm0)
                ifm_span = ifm_count if layout.part_kernel else ifm_block
            for ky0 in range(0, layout.kernel_height, decomp_h):
                for kx0 in range(0, layout.kernel_width, decomp_w):
                    yield _Piece(ofm0, ofm_count, ifm0, ifm_count, ifm_span, ky0, kx0,
                                 min(decomp_h, layout.kernel_height - ky0), min(decomp_w, layout.kernel_width - kx0))


@lru_cache(maxsize=512)
def stream_order(layout: WeightLayout) -> np.ndarray:
    """For each position of the decoded stream, the OHWI flat index it holds (-1 = padding)."""
    order = np.concatenate([_piece_order(layout, piece) for piece in _pieces(layout)])
    order.flags.writeable = False
    return order


class WeightFormatError(ValueError):
    """The stream is malformed or does not fit the layout the registers describe."""


class Decoding:
    """One weight stream's decoding, under way in the decoder's helper processes (`mlw.submit`) from its start:
    `weights` waits for it."""

    def __init__(self, encoded: bytes, layout: WeightLayout):
        self._values, self._layout = mlw.submit(encoded), layout

    @cached_property
    def weights(self) -> np.ndarray:
        """Read-only OHWI int16 weights (zero-point corrected, range -255..255); WeightFormatError if malformed."""
        try:
            decoded = self._values.result()
        except mlw.MlwDecodeError as err:
            raise WeightFormatError(str(err)) from None
        weights = unreorder(decoded, self._layout)
        weights.flags.writeable = False
        return weights


@lru_cache(maxsize=256)
def decoding(encoded: bytes, layout: WeightLayout) -> Decoding:
    """Start decoding an mlw stream, or find it started before (a stripe reads its operation's weights again)."""
    return Decoding(encoded, layout)


def unreorder(decoded: np.ndarray, layout: WeightLayout) -> np.ndarray:
    """Scatter stream-ordered weights back into OHWI; padding positions must hold zero."""
    order = stream_order(layout)
    if decoded.size != order.size:
        raise WeightFormatError(
            f"the weight stream decodes to {decoded.size} weights, the layout {layout.shape} "
            f"(OFM block depth {layout.ofm_block_depth}) needs {order.size}"
        )
    valid = order >= 0
    if np.any(decoded[~valid]):
        raise WeightFormatError("the weight stream has non-zero values in padding positions")
    weights = np.zeros(int(np.prod(layout.shape)), dtype=np.int16)
    weights[order[valid]] = decoded[valid]
    return weights.reshape(layout.shape)
