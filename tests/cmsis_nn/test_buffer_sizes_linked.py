"""The context buffer sizes this project plans against CMSIS-NN's own *_get_buffer_size functions (the plain,
_dsp and _mve variants, all in any build of the library; s8 and s16), called through ctypes on the x86-64 build,
over a sweep of geometries. The library here was built with GCC: the two rules where Arm Compiler 6 asks for more
(the DSP 1x1 fast conv) are the only ones where the plan may exceed it. Opt-in: ETHOSU_TVM_CMSIS_NN names the
library."""
from __future__ import annotations

import ctypes
import os
import subprocess

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ethosu_tvm.host.cmsis_nn.exactness import same_or_valid
from ethosu_tvm.host.cmsis_nn.scratch import (
    ConvGeometry,
    avgpool_buffer_size,
    conv_buffer_size,
    depthwise_buffer_size,
    kernel_sums_size,
)
from ethosu_tvm.host.cmsis_nn.scratch_s16 import conv_s16_buffer_size, depthwise_s16_buffer_size
from ethosu_tvm.host.te_kernel import window_output_size
from ethosu_tvm.run.kernel_libraries import cmsis_nn_folder

pytestmark = pytest.mark.skipif(not os.environ.get("ETHOSU_TVM_CMSIS_NN"),
                                reason="ETHOSU_TVM_CMSIS_NN names no CMSIS-NN build (include/, lib/x86_64/): the "
                                       "linked tier needs one (docs/firmware.md)")


class Tile(ctypes.Structure):
    _fields_ = [("w", ctypes.c_int32), ("h", ctypes.c_int32)]


class Dims(ctypes.Structure):
    _fields_ = [(name, ctypes.c_int32) for name in "nhwc"]


_COMMON = [("stride", Tile), ("padding", Tile), ("dilation", Tile), ("activation", Tile)]


class ConvParams(ctypes.Structure):
    _fields_ = [("input_offset", ctypes.c_int32), ("output_offset", ctypes.c_int32), *_COMMON]


class DwConvParams(ctypes.Structure):
    _fields_ = [("input_offset", ctypes.c_int32), ("output_offset", ctypes.c_int32), ("ch_mult", ctypes.c_int32),
                *_COMMON]


_SIZE_FUNCTIONS = [f"arm_{kind}_get_buffer_size{variant}" for kind in
                   ("convolve_wrapper_s8", "depthwise_conv_wrapper_s8", "avgpool_s8", "fully_connected_s8",
                    "convolve_wrapper_s16", "depthwise_conv_wrapper_s16", "avgpool_s16", "fully_connected_s16")
                   for variant in ("", "_dsp", "_mve")]


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    """The x86-64 static library as a shared one, so that ctypes can call its size functions."""
    _, archive = cmsis_nn_folder("x86_64")
    shared = tmp_path_factory.mktemp("cmsis_nn") / "libcmsis-nn.so"
    wanted = [f"-Wl,-u,{function}" for function in _SIZE_FUNCTIONS]  # just their objects from the archive
    subprocess.run(["gcc", "-shared", "-o", str(shared), *wanted, str(archive)], check=True)
    return ctypes.CDLL(str(shared))


@st.composite
def geometries(draw, depthwise: bool):
    """A conv or depthwise conv as TFLite writes it (SAME or VALID), with shapes that reach every wrapper path."""
    height = draw(st.sampled_from([1, 1, 5, 8]))
    width, channels = draw(st.integers(3, 12)), draw(st.sampled_from([1, 2, 3, 4, 8, 16, 130]))
    kernel = (draw(st.sampled_from([1, 3])) if height > 1 else 1, draw(st.sampled_from([1, 2, 3, 5])))
    stride = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    dilation = draw(st.sampled_from([(1, 1), (1, 1), (2, 2)])) if height > 4 else (1, 1)
    batches = draw(st.sampled_from([1, 1, 2]))
    out_channels = channels * draw(st.sampled_from([1, 2, 8])) if depthwise else draw(st.sampled_from([4, 8]))
    same = draw(st.booleans())
    output = [batches]
    padding = []
    for axis, size in enumerate((height, width)):
        reach = (kernel[axis] - 1) * dilation[axis] + 1
        extent = -(-size // stride[axis]) if same else max((size - reach) // stride[axis] + 1, 1)
        before, after = same_or_valid(size, kernel[axis], stride[axis], dilation[axis], extent)
        assert window_output_size(size, kernel[axis], stride[axis], dilation[axis], before, after) == extent
        output.append(extent)
        padding.append(before)
    return ConvGeometry((batches, height, width, channels), (*output, out_channels), kernel, channels, stride,
                        tuple(padding), dilation)


def _arguments(g: ConvGeometry, depthwise: bool):
    tiles = (Tile(g.stride[1], g.stride[0]), Tile(g.padding[1], g.padding[0]), Tile(g.dilation[1], g.dilation[0]),
             Tile(-128, 127))
    if depthwise:
        params = DwConvParams(0, 0, g.output[3] // g.input[3], *tiles)
        filter_dims = Dims(1, *g.kernel, g.output[3])
    else:
        params = ConvParams(0, 0, *tiles)
        filter_dims = Dims(g.output[3], *g.kernel, g.input[3])
    return ctypes.byref(params), ctypes.byref(Dims(*g.input)), ctypes.byref(filter_dims), ctypes.byref(Dims(*g.output))


@given(geometries(depthwise=False))
def test_convolution_sizes_are_the_librarys(library, g):
    arguments = _arguments(g, False)
    theirs = [library.arm_convolve_wrapper_s8_get_buffer_size(*arguments),
              library.arm_convolve_wrapper_s8_get_buffer_size_dsp(*arguments),
              library.arm_convolve_wrapper_s8_get_buffer_size_mve(*arguments)]
    ours = [conv_buffer_size(g, level) for level in ("scalar", "dsp", "mve")]
    armcc_only = g.is_1x1 and g.stride == (1, 1)  # Arm Compiler 6's DSP 1x1 fast conv: 2·C int16, GCC's none
    assert ours == [theirs[0], 4 * g.input[3] if armcc_only else theirs[1], theirs[2]]


@given(geometries(depthwise=True))
def test_depthwise_sizes_are_the_librarys(library, g):
    arguments = _arguments(g, True)
    theirs = [library.arm_depthwise_conv_wrapper_s8_get_buffer_size(*arguments),
              library.arm_depthwise_conv_wrapper_s8_get_buffer_size_dsp(*arguments),
              library.arm_depthwise_conv_wrapper_s8_get_buffer_size_mve(*arguments)]
    assert [depthwise_buffer_size(g, level) for level in ("scalar", "dsp", "mve")] == theirs


@given(st.integers(1, 300), st.integers(1, 40))
def test_pool_and_fully_connected_sizes_are_the_librarys(library, channels, width):
    assert [avgpool_buffer_size(channels, level) for level in ("scalar", "dsp", "mve")] == [
        library.arm_avgpool_s8_get_buffer_size(width, channels), library.arm_avgpool_s8_get_buffer_size_dsp(
            width, channels), library.arm_avgpool_s8_get_buffer_size_mve(width, channels)]
    filter_dims = ctypes.byref(Dims(width, 1, 1, channels))  # [depth, units] as the FC takes them
    assert [kernel_sums_size(channels, level) for level in ("dsp", "mve")] == [
        library.arm_fully_connected_s8_get_buffer_size_dsp(filter_dims),
        library.arm_fully_connected_s8_get_buffer_size_mve(filter_dims)]


def _s16_sizes(library, kind: str, arguments) -> list[int]:
    return [getattr(library, f"arm_{kind}_s16_get_buffer_size{variant}")(*arguments)
            for variant in ("", "_dsp", "_mve")]


@given(geometries(depthwise=False))
def test_s16_convolution_sizes_are_the_librarys(library, g):
    assert [conv_s16_buffer_size(g, level) for level in ("scalar", "dsp", "mve")] == \
        _s16_sizes(library, "convolve_wrapper", _arguments(g, False))


@given(geometries(depthwise=True))
def test_s16_depthwise_sizes_are_the_librarys(library, g):
    assert [depthwise_s16_buffer_size(g, level) for level in ("scalar", "dsp", "mve")] == \
        _s16_sizes(library, "depthwise_conv_wrapper", _arguments(g, True))


@given(st.integers(1, 300), st.integers(1, 40))
def test_s16_pool_and_fully_connected_sizes_are_the_librarys(library, channels, width):
    """The s16 average pool's rule is the s8 one's; its FC takes no buffer on any level."""
    assert [avgpool_buffer_size(channels, level) for level in ("scalar", "dsp", "mve")] == \
        _s16_sizes(library, "avgpool", (width, channels))
    assert _s16_sizes(library, "fully_connected", (ctypes.byref(Dims(width, 1, 1, channels)),)) == [0, 0, 0]


@pytest.mark.parametrize("kernel", [(1, 511), (1, 512), (23, 23)])
def test_s16_depthwise_fast_kernel_bound_is_the_librarys(library, kernel):
    """The fast s16 depthwise kernel (its buffer) stops at 512 taps."""
    g = ConvGeometry((1, *kernel, 2), (1, 1, 1, 2), kernel, 2, (1, 1), (0, 0), (1, 1))
    assert [depthwise_s16_buffer_size(g, level) for level in ("scalar", "dsp", "mve")] == \
        _s16_sizes(library, "depthwise_conv_wrapper", _arguments(g, True))
