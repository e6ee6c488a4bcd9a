"""The input window of convolutions and pooling: upscaling, padding and the strided view of each kernel tap.

Upscaling doubles the IFM before padding: NEAREST repeats each element, TRANSPOSE puts each element at the even
position and the IFM zero point at the odd one. Padding reads as the IFM zero point; values here are already
zero-point corrected, so both become 0 (or `fill`, which max pooling uses to ignore them).
"""
from __future__ import annotations

from typing import Iterator

import numpy as np

from ..operation import BlockOperation


def padded_input(values: np.ndarray, op: BlockOperation, fill: int = 0) -> np.ndarray:
    """The (H, W, C) IFM after upscaling and padding: exactly the window the OFM reads."""
    kernel, pad = op.kernel, op.padding
    oh, ow, _ = op.ofm.shape
    height = (oh - 1) * kernel.stride_y + kernel.extent_h
    width = (ow - 1) * kernel.stride_x + kernel.extent_w
    inner_h, inner_w = height - pad.top - pad.bottom, width - pad.left - pad.right
    if op.upscale == "NEAREST":
        values = values.repeat(2, axis=0).repeat(2, axis=1)
    elif op.upscale == "TRANSPOSE":
        spread = np.zeros((2 * values.shape[0], 2 * values.shape[1], values.shape[2]), values.dtype)
        spread[::2, ::2] = values
        values = spread
    window = np.full((height, width, values.shape[2]), fill, dtype=np.int64)
    window[pad.top : pad.top + inner_h, pad.left : pad.left + inner_w] = values[:inner_h, :inner_w]
    return window


def taps(window: np.ndarray, op: BlockOperation) -> Iterator[tuple[int, int, np.ndarray]]:
    """(ky, kx, view) for each kernel tap; the view has the OFM's height and width."""
    kernel = op.kernel
    oh, ow, _ = op.ofm.shape
    for ky in range(kernel.height):
        y0 = ky * kernel.dilation_y
        for kx in range(kernel.width):
            x0 = kx * kernel.dilation_x
            yield ky, kx, window[y0 : y0 + (oh - 1) * kernel.stride_y + 1 : kernel.stride_y,
                                 x0 : x0 + (ow - 1) * kernel.stride_x + 1 : kernel.stride_x]
