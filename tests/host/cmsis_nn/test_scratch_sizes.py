"""Context buffer sizes against cases worked out by hand from CMSIS-NN's *_get_buffer_size rules (99f736a6),
for each path a wrapper takes (1x1 fast, 1x1 strided, 1xN, generic; depthwise 3x3, opt, generic, one channel to
conv) on each extension level (scalar, DSP, MVE)."""
import pytest

from ethosu_tvm.host.cmsis_nn.scratch import (
    ConvGeometry,
    avgpool_buffer_size,
    conv_buffer_size,
    depthwise_buffer_size,
    kernel_sums_size,
)


def _geometry(input, output, kernel, stride=(1, 1), padding=(0, 0), dilation=(1, 1), kernel_channels=None):
    return ConvGeometry(input, output, kernel, input[3] if kernel_channels is None else kernel_channels, stride,
                        padding, dilation)


# (geometry, scalar, dsp, mve bytes)
CONV = {
    # generic: two int16 im2col columns of 3·3·4 = 36 (a multiple of 4) -> 2·36·2 = 144; MVE: four int8 columns of
    # 36 rounded up to 48 -> 4·48 = 192
    "3x3, 4 channels": (_geometry((1, 8, 8, 4), (1, 8, 8, 6), (3, 3), padding=(1, 1)), 144, 144, 192),
    # 3·3·3 = 27 columns, rounded up to 28 -> 2·28·2 = 112; MVE: 27 -> 32, 4·32 = 128
    "3x3, 3 channels": (_geometry((1, 9, 9, 3), (1, 5, 5, 8), (3, 3), stride=(2, 2), padding=(1, 1)), 112, 112, 128),
    # dilation keeps the generic path and its columns: 2·(3·3·8)·2 = 288; MVE 72 -> 80, 320
    "3x3 dilated": (_geometry((1, 9, 9, 8), (1, 5, 5, 8), (3, 3), dilation=(2, 2)), 288, 288, 320),
    # 1x1, stride 1: the fast path; DSP with Arm Compiler 6 takes 2·C int16 = 4·16 (GCC none: the larger is planned)
    "1x1 fast": (_geometry((1, 8, 8, 16), (1, 8, 8, 8), (1, 1)), 0, 64, 0),
    # 1x1, stride 2: arm_convolve_1x1_s8, no buffer
    "1x1 strided": (_geometry((1, 8, 8, 16), (1, 4, 4, 8), (1, 1), stride=(2, 2)), 0, 0, 0),
    # 1xN (height 1, stride·C a multiple of 4): scalar/DSP the im2col rule, 2·24·2 = 96; MVE: total pad
    # 9·1 + 3 − 10 = 2 (even), one padded output each side, 8 unpadded: max(3·8 + 1·8, 2·8 + 1·8) = 32
    "1x3 row": (_geometry((1, 1, 10, 8), (1, 1, 10, 4), (1, 3), padding=(0, 1)), 96, 96, 32),
    # 1xN, stride 2, odd total pad 4·2 + 3 − 10 = 1 (all of it on the right): one right-padded output
    # ((0 + 1 + 2 − 1) / 2 = 1), none left-padded, 4 unpadded = 5 outputs: max(3·8 + 0, 2·8 + 1·8) = 24
    "1x3 row, odd pad": (_geometry((1, 1, 10, 8), (1, 1, 5, 4), (1, 3), stride=(2, 2)), 96, 96, 24),
    # height 1 but stride·C = 3 not a multiple of 4: the generic path, 3·3 = 9 columns -> 12, 2·12·2 = 48; MVE 64
    "1x3 row, 3 channels": (_geometry((1, 1, 10, 3), (1, 1, 8, 4), (1, 3)), 48, 48, 64),
}


@pytest.mark.parametrize("case", CONV)
def test_convolution(case):
    geometry, *sizes = CONV[case]
    assert [conv_buffer_size(geometry, level) for level in ("scalar", "dsp", "mve")] == sizes


DEPTHWISE = {
    # 3x3 with padding <= 1: arm_depthwise_conv_3x3_s8 (scalar, DSP) needs none; MVE's opt kernel 4·124·9 = 4464
    "3x3": (_geometry((1, 8, 8, 8), (1, 8, 8, 8), (3, 3), padding=(1, 1)), 0, 0, 4464),
    # 5x5: the opt kernel; DSP C·5·5 int16 = 8·25·2 = 400, scalar none, MVE 4·124·25 = 12400
    "5x5": (_geometry((1, 8, 8, 8), (1, 8, 8, 8), (5, 5), padding=(2, 2)), 0, 400, 12400),
    # 3x3 with padding 2: not the 3x3 kernel: DSP 8·9·2 = 144
    "3x3 padded 2": (_geometry((1, 8, 8, 8), (1, 10, 10, 8), (3, 3), padding=(2, 2)), 0, 144, 4464),
    # channel multiplier 2: the generic kernel, no buffer
    "multiplier 2": (_geometry((1, 8, 8, 4), (1, 8, 8, 8), (3, 3), padding=(1, 1)), 0, 0, 0),
    # dilation: generic, none
    "dilated": (_geometry((1, 9, 9, 8), (1, 5, 5, 8), (3, 3), dilation=(2, 2)), 0, 0, 0),
    # one input channel to 8 on MVE: a conv (GCC converts above 1 output channel, Arm Compiler 6 above 8): its
    # im2col of 1·3·3 = 9 -> 16 bytes, 4·16 = 64, plus the reordered 8·3·3 weights, 72 -> 136
    "one channel": (_geometry((1, 8, 8, 1), (1, 8, 8, 8), (3, 3), padding=(1, 1), kernel_channels=1), 0, 0, 136),
    # two batches: the opt kernels need one; generic, none
    "two batches": (_geometry((2, 8, 8, 8), (2, 8, 8, 8), (5, 5), padding=(2, 2)), 0, 0, 0),
}


@pytest.mark.parametrize("case", DEPTHWISE)
def test_depthwise(case):
    geometry, *sizes = DEPTHWISE[case]
    assert [depthwise_buffer_size(geometry, level) for level in ("scalar", "dsp", "mve")] == sizes


def test_average_pool_and_fully_connected():
    assert [avgpool_buffer_size(24, level) for level in ("scalar", "dsp", "mve")] == [0, 96, 0]  # int32 per channel
    assert [kernel_sums_size(10, level) for level in ("scalar", "dsp", "mve")] == [0, 0, 40]  # int32 per unit
