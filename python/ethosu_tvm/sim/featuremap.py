"""Feature-map addressing: NHWC and NHCWB16 layouts split over up to four tiles, read and written as whole arrays.

Element (y, x, c) of a feature map lives in tile t: x >= WIDTH0 selects tile 1 (tile 3 if also y >= HEIGHT1),
otherwise y >= HEIGHT0 selects tile 2. Coordinates are then relative to the tile origin and
    NHWC:    BASE[t] + y*STRIDE_Y + x*STRIDE_X + c*elem          (STRIDE_C is not used)
    NHCWB16: BASE[t] + y*STRIDE_Y + x*16*elem + (c//16)*STRIDE_C + (c%16)*elem   (STRIDE_X is not used)
Tiles let a feature map wrap around a ring buffer (Vela's cascaded schedules) or be split over two buffers.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .memory import Memory
from .regfile import RegisterFile

BRICK = 16
_SIZES = {0: 1, 1: 2, 2: 4}


@dataclass(frozen=True)
class FeatureMap:
    """A feature map as the registers of one of IFM, IFM2 or OFM describe it; `labels` name each tile in errors."""

    name: str
    region: int
    bases: tuple[int, int, int, int]
    height: int
    width: int
    depth: int
    width0: int
    height0: int
    height1: int
    stride_y: int
    stride_x: int
    stride_c: int
    dtype: np.dtype
    brick: bool
    zero_point: int
    labels: tuple[str, str, str, str]

    @property
    def shape(self) -> tuple[int, int, int]:
        return (self.height, self.width, self.depth)

    @property
    def bits(self) -> int:
        return self.dtype.itemsize * 8


def element_type(regs: RegisterFile, register: str) -> np.dtype:
    """The element type a *_PRECISION register selects; unsigned 32-bit does not exist."""
    signed = regs.field(register, "type")
    size = _SIZES[regs.field(register, "precision")]
    if size == 4 and not signed:
        raise regs.error(register, "unsigned 32-bit feature maps are not supported by the hardware")
    return np.dtype(f"<{'i' if signed else 'u'}{size}")


def from_registers(regs: RegisterFile, name: str, shape: tuple[int, int, int]) -> FeatureMap:
    """The feature map `name` (IFM, IFM2 or OFM) of the given shape, from the current register values."""
    bases = tuple(regs.raw(f"{name}_BASE{t}") for t in range(4))
    where = regs.where()
    labels = tuple(f"{where}: {name} tile {t} at {regs.describe(f'{name}_BASE{t}')}" for t in range(4))
    return FeatureMap(
        name=name,
        region=regs.param(f"{name}_REGION"),
        bases=bases,
        height=shape[0],
        width=shape[1],
        depth=shape[2],
        width0=regs.param(f"{name}_WIDTH0_M1") + 1,
        height0=regs.param(f"{name}_HEIGHT0_M1") + 1,
        height1=regs.param(f"{name}_HEIGHT1_M1") + 1,
        stride_y=regs.raw(f"{name}_STRIDE_Y"),
        stride_x=regs.raw(f"{name}_STRIDE_X"),
        stride_c=regs.raw(f"{name}_STRIDE_C"),
        dtype=element_type(regs, f"{name}_PRECISION"),
        brick=regs.field(f"{name}_PRECISION", "format") == 1,
        zero_point=regs.signed(f"{name}_ZERO_POINT"),
        labels=labels,
    )


def _tiles(fm: FeatureMap):
    """(tile, y0, y1, x0, x1) boxes of the feature map, in feature-map coordinates."""
    h, w, w0 = fm.height, fm.width, min(fm.width0, fm.width)
    boxes = (
        (0, 0, min(h, fm.height0), 0, w0),
        (1, 0, min(h, fm.height1), w0, w),
        (2, min(h, fm.height0), h, 0, w0),
        (3, min(h, fm.height1), h, w0, w),
    )
    return [box for box in boxes if box[2] > box[1] and box[4] > box[3]]


def _tile_views(memory: Memory, fm: FeatureMap, tile: int, rows: int, cols: int, write: bool):
    """(channel slice, view) pairs covering one tile; NHCWB16 gives one view for whole bricks and one for the rest."""
    elem = fm.dtype.itemsize
    base, label = fm.bases[tile], fm.labels[tile]
    if not fm.brick:
        view = memory.view(fm.region, base, (rows, cols, fm.depth), (fm.stride_y, fm.stride_x, elem), fm.dtype,
                           label, write)
        return [(slice(0, fm.depth), view)]
    views = []
    whole, rest = divmod(fm.depth, BRICK)
    if whole:
        view = memory.view(fm.region, base, (rows, cols, whole, BRICK), (fm.stride_y, BRICK * elem, fm.stride_c, elem),
                           fm.dtype, label, write)
        views.append((slice(0, whole * BRICK), view))
    if rest:
        view = memory.view(fm.region, base + whole * fm.stride_c, (rows, cols, rest), (fm.stride_y, BRICK * elem, elem),
                           fm.dtype, label, write)
        views.append((slice(whole * BRICK, fm.depth), view))
    return views


def read(memory: Memory, fm: FeatureMap) -> np.ndarray:
    """The whole feature map as an (H, W, C) array of its element type."""
    out = np.empty(fm.shape, fm.dtype)
    for tile, y0, y1, x0, x1 in _tiles(fm):
        for channels, view in _tile_views(memory, fm, tile, y1 - y0, x1 - x0, write=False):
            out[y0:y1, x0:x1, channels] = view.reshape(y1 - y0, x1 - x0, -1)
    return out


def writable(memory: Memory, fm: FeatureMap) -> list:
    """(y0, y1, x0, x1, channel slice, view) of every part of the feature map, each bounds-checked for writing."""
    return [(y0, y1, x0, x1, channels, view) for tile, y0, y1, x0, x1 in _tiles(fm)
            for channels, view in _tile_views(memory, fm, tile, y1 - y0, x1 - x0, write=True)]


def write(memory: Memory, fm: FeatureMap, values: np.ndarray) -> None:
    """Store an (H, W, C) array (already of the feature map's element type); every tile is bounds-checked before
    the first byte is written."""
    for y0, y1, x0, x1, channels, view in writable(memory, fm):
        view[...] = values[y0:y1, x0:x1, channels].reshape(view.shape)
