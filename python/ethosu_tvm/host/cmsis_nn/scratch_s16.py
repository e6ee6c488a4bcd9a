"""The context buffers of CMSIS-NN's s16 convolutions, by its `*_s16_get_buffer_size` rules (99f736a6) for the CPU's
extension level; its s16 average pool takes the s8 one's (scratch.avgpool_buffer_size), its s16 FC and max pool none.
"""
from __future__ import annotations

from ...target import MVE, SCALAR
from .scratch import ConvGeometry

MAX_FAST_DEPTHWISE_TAPS = 512  # arm_depthwise_conv_fast_s16 takes kernels of fewer taps


def conv_s16_buffer_size(g: ConvGeometry, extension: str) -> int:
    """arm_convolve_s16's im2col of int16: two columns (scalar, DSP), or four rounded up to 8 elements (MVE)."""
    columns = g.input[3] * g.kernel[0] * g.kernel[1]
    return 4 * (-(-columns // 8)) * 8 * 2 if extension == MVE else 2 * columns * 2


def depthwise_s16_buffer_size(g: ConvGeometry, extension: str) -> int:
    """arm_depthwise_conv_fast_s16's int16 im2col (channel multiplier 1, no dilation, a small kernel; DSP one
    column, MVE four and 8 bytes the kernel may read beyond); the generic kernel and scalar cores need none."""
    taps = g.kernel[0] * g.kernel[1]
    fast = g.output[3] == g.input[3] and g.dilation == (1, 1) and taps < MAX_FAST_DEPTHWISE_TAPS
    if not fast or extension == SCALAR:
        return 0
    column = g.input[3] * taps * 2
    return 4 * column + 8 if extension == MVE else column
