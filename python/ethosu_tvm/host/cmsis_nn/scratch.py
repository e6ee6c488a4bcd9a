"""The context buffer each CMSIS-NN call needs: CMSIS-NN's `*_get_buffer_size` rules for the path its wrapper takes
on the CPU's extension level (scalar, DSP, MVE), restated for compile time (CMSIS-NN 99f736a6).

Two rules depend on the compiler that built the library: with Arm Compiler 6 the DSP 1x1 fast convolution takes
2·C int16 of buffer (GCC: none), and on MVE a depthwise convolution of one input channel becomes a convolution
from 9 output channels (GCC: from 2). The larger of the two sizes is planned, so either build is served.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...target import DSP, MVE

CH_IN_BLOCK_MVE = 124  # channels per block of the MVE depthwise kernel (arm_nnsupportfunctions.h)
DW_TO_CONV_THRESHOLDS = (1, 8)  # output channels above which MVE turns a 1-channel depthwise conv into a conv: GCC, AC6


def _c_div(a: int, b: int) -> int:
    """C's integer division (truncates toward zero)."""
    return abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)


@dataclass(frozen=True)
class ConvGeometry:
    """The dims CMSIS-NN's size rules read: NHWC input and output, the kernel's (h, w) and its input channels (1
    for a depthwise conv turned into a conv), (h, w) stride, (top, left) padding and (h, w) dilation."""

    input: tuple[int, int, int, int]
    output: tuple[int, int, int, int]
    kernel: tuple[int, int]
    kernel_channels: int
    stride: tuple[int, int]
    padding: tuple[int, int]
    dilation: tuple[int, int]

    @property
    def is_1x1(self) -> bool:
        return (self.padding == (0, 0) and self.kernel == (1, 1) and self.dilation == (1, 1)
                and self.input[3] == self.kernel_channels)

    @property
    def is_1xn(self) -> bool:
        return (self.input[1] == 1 and self.dilation[1] == 1 and self.kernel[0] == 1
                and (self.stride[1] * self.input[3]) % 4 == 0 and self.input[3] == self.kernel_channels)


def _im2col(g: ConvGeometry) -> int:
    """arm_convolve_s8's two im2col columns of int16 (scalar, DSP), each rounded up to 4 elements."""
    columns = g.kernel[0] * g.kernel[1] * g.input[3]
    return 2 * (-(-columns // 4) * 4) * 2


def _im2col_mve(g: ConvGeometry) -> int:
    """arm_convolve_s8_get_buffer_size_mve: four int8 columns, each rounded up to whole 16-byte vectors."""
    return 4 * (-(-(g.input[3] * g.kernel[0] * g.kernel[1]) // 16)) * 16


def _1xn_mve(g: ConvGeometry) -> int:
    """arm_convolve_1_x_n_s8_get_buffer_size_mve: a padded row of the input (C arithmetic, as written there)."""
    channels, stride, kernel_w, pad = g.input[3], g.stride[1], g.kernel[1], g.padding[1]
    output_w = g.output[2]
    total_pad = (output_w - 1) * stride + kernel_w - g.input[2]
    asym_pad = total_pad - 2 * _c_div(total_pad, 2)
    right = max(1, _c_div(pad + asym_pad + stride - 1, stride)) if pad + asym_pad != 0 else 0
    left = max(1, _c_div(pad + stride - 1, stride)) if pad != 0 else 0
    if right + max(output_w - (right + left), 0) + left != output_w:
        return _im2col_mve(g)
    pad_left = pad * channels
    pad_right = right * channels if asym_pad else pad_left
    elements_left = kernel_w * channels
    return max(elements_left + pad_left, elements_left - channels + pad_right)


def _conv(g: ConvGeometry, extension: str, armcc: bool) -> int:
    """arm_convolve_wrapper_s8_get_buffer_size (and its _dsp, _mve variants)."""
    if g.is_1x1:
        return 2 * g.input[3] * 2 if g.stride == (1, 1) and extension == DSP and armcc else 0
    if g.is_1xn:
        return _1xn_mve(g) if extension == MVE else _im2col(g)
    return _im2col_mve(g) if extension == MVE else _im2col(g)


def conv_buffer_size(g: ConvGeometry, extension: str) -> int:
    """Bytes of context buffer arm_convolve_wrapper_s8 takes on `extension` (either compiler)."""
    return max(_conv(g, extension, armcc) for armcc in (False, True))


def _depthwise(g: ConvGeometry, extension: str, threshold: int) -> int:
    """arm_depthwise_conv_wrapper_s8_get_buffer_size, for a compiler's one-channel-to-conv `threshold`."""
    _, _, _, in_channels = g.input
    out_channels = g.output[3]
    kernel_h, kernel_w = g.kernel
    if extension == MVE and in_channels == 1 and out_channels > threshold:
        as_conv = ConvGeometry(g.input, g.output, g.kernel, 1, g.stride, g.padding, g.dilation)
        return _conv(as_conv, MVE, armcc=threshold > 1) + out_channels * kernel_h * kernel_w
    if in_channels != out_channels or g.input[0] != 1 or g.dilation != (1, 1):
        return 0
    if extension == MVE:
        return 4 * CH_IN_BLOCK_MVE * kernel_h * kernel_w
    if g.kernel == (3, 3) and max(g.padding) <= 1:
        return 0  # arm_depthwise_conv_3x3_s8 needs none
    return in_channels * kernel_h * kernel_w * 2 if extension == DSP else 0


def depthwise_buffer_size(g: ConvGeometry, extension: str) -> int:
    """Bytes of context buffer arm_depthwise_conv_wrapper_s8 takes on `extension` (either compiler)."""
    return max(_depthwise(g, extension, threshold) for threshold in DW_TO_CONV_THRESHOLDS)


def avgpool_buffer_size(channels: int, extension: str) -> int:
    """arm_avgpool_s8_get_buffer_size: an int32 sum per channel on DSP cores, none otherwise."""
    return channels * 4 if extension == DSP else 0


def kernel_sums_size(units: int, extension: str) -> int:
    """arm_fully_connected_s8_get_buffer_size: on MVE the context holds an int32 kernel sum per output unit (a
    constant computed at compile time, not scratch); none otherwise."""
    return units * 4 if extension == MVE else 0
