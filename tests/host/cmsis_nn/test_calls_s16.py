"""CMSIS-NN's s16 calls for 16x8 host specs (int16 activations, int8 weights, int64 bias): the emitted arguments
against the project's reference arithmetic, the context buffers against sizes worked out by hand from CMSIS-NN's
s16 *_get_buffer_size rules (99f736a6), and the exact reason for each spec it would not compute as LiteRT does.
No CMSIS-NN needed."""
import numpy as np
import pytest
from test_calls import M7, M55, _constant, _declared, _spec

from ethosu_tvm.host import spec
from ethosu_tvm.host.cmsis_nn import CmsisNn
from ethosu_tvm.host.cmsis_nn.scratch import ConvGeometry
from ethosu_tvm.host.cmsis_nn.scratch_s16 import conv_s16_buffer_size, depthwise_s16_buffer_size
from ethosu_tvm.quantization import conv_multipliers, quantize_multipliers
from ethosu_tvm.target import CmsisNnTarget
from ethosu_tvm.testing import models

M3 = CmsisNnTarget("cortex-m3", "scalar")
LEVELS = ("scalar", "dsp", "mve")


@pytest.mark.parametrize("op, params, function", [
    ("conv2d", {}, "arm_convolve_wrapper_s16"),
    ("conv2d", {"stride": (2, 2), "activation": "RELU6", "kernel": (3, 2)}, "arm_convolve_wrapper_s16"),
    ("depthwise_conv2d", {"depth_multiplier": 2, "activation": "RELU"}, "arm_depthwise_conv_wrapper_s16"),
])
def test_convolutions_are_s16_calls_with_tflites_parameters(op, params, function):
    conv = _spec(models.make(op, 3, dtype="int16", **params))
    assert CmsisNn(M55).refusal(conv) == ""
    kernel = CmsisNn(M55).build(conv, "k", None)
    bias = "&bias_data" if op == "conv2d" else "bias"  # the conv wrapper's bias comes in a struct with its width
    assert f"  (void){function}(&ctx, &params, &quant, &input_dims, input, &filter_dims, weights, &bias_dims, " \
           f"{bias}, &output_dims, output);" in kernel.c_source
    assert op != "conv2d" or _declared(kernel, "bias_data") == "{bias, false}"  # false: int64
    channels = conv.output.shape[3]
    low, high = conv.clamp or (-32768, 32767)
    multiplier = f"{channels // conv.input.shape[3]}, " if conv.depthwise else ""
    assert _declared(kernel, "params") == (f"{{0, 0, {multiplier}{{{conv.stride[1]}, {conv.stride[0]}}}, "
                                           f"{{{conv.padding[1]}, {conv.padding[0]}}}, {{1, 1}}, {{{low}, {high}}}}}")
    expected_multipliers, expected_shifts = quantize_multipliers(
        conv_multipliers(conv.input.scale, np.broadcast_to(conv.weight_scales, channels), conv.output.scale))
    np.testing.assert_array_equal(_constant(kernel, "multiplier"), expected_multipliers)
    np.testing.assert_array_equal(_constant(kernel, "shift"), expected_shifts)
    assert _constant(kernel, "bias").dtype == np.int64
    np.testing.assert_array_equal(_constant(kernel, "bias"), conv.bias)
    signature = kernel.c_source.splitlines()[2]
    assert signature.startswith("void k(const int16_t* input, const int8_t* weights, const int64_t* bias, ")
    assert "int16_t* output" in signature


def test_fully_connected_and_pools():
    fc = _spec(models.make("fully_connected", 2, dtype="int16", in_scale=0.5, w_scales=[0.25], out_scale=0.125))
    assert CmsisNn(M55).refusal(fc) == ""
    kernel = CmsisNn(M55).build(fc, "k", None)  # no kernel sums on MVE: arm_fully_connected_s16 takes no buffer
    assert "(void)arm_fully_connected_s16(&ctx, &params, &quant, &input_dims, input, &filter_dims, weights, " \
           "&bias_dims, bias, &output_dims, output);" in kernel.c_source
    assert _declared(kernel, "ctx") == "{0, 0}" and kernel.scratch == ()
    assert [p.name for p in kernel.params] == ["input", "weights", "bias", "multiplier", "shift", "output"]
    assert _declared(kernel, "params") == "{0, 0, 0, {-32768, 32767}}"
    for kind, function, dsp_bytes in (("avg", "arm_avgpool_s16", 8 * 4), ("max", "arm_max_pool_s16", 0)):
        pool = _spec(models.make(f"{kind}_pool2d", 1, dtype="int16"))
        assert CmsisNn(M55).refusal(pool) == ""
        assert f"(void){function}(&ctx, &params, " in CmsisNn(M55).build(pool, "k", None).c_source
        assert [s.nbytes for s in CmsisNn(M7).build(pool, "k", None).scratch] == ([dsp_bytes] if dsp_bytes else [])


def test_the_context_buffer_is_the_planned_scratch():
    """The factory's 3x3 conv of 4 channels: 3·3·4 = 36 int16 columns, two of them on scalar and DSP cores (144
    bytes), four rounded up to 40 on MVE (320); its depthwise conv of 8 channels: one int16 column of 8·9 on DSP
    (144), four and 8 bytes on MVE (584), none on scalar cores."""
    conv, depthwise = (_spec(models.make(op, 0, dtype="int16")) for op in ("conv2d", "depthwise_conv2d"))
    for cpu, conv_bytes, depthwise_bytes in ((M3, 144, 0), (M7, 144, 144), (M55, 320, 584)):
        kernel = CmsisNn(cpu).build(conv, "k", None)
        assert [(s.name, s.nbytes) for s in kernel.scratch] == [("context", conv_bytes)]
        assert _declared(kernel, "ctx") == f"{{context, {conv_bytes}}}"
        assert [s.nbytes for s in CmsisNn(cpu).build(depthwise, "k", None).scratch] == \
            ([depthwise_bytes] if depthwise_bytes else [])


def _geometry(input, output, kernel, stride=(1, 1), padding=(0, 0), dilation=(1, 1)):
    return ConvGeometry(input, output, kernel, input[3], stride, padding, dilation)


# (geometry, scalar, dsp, mve bytes)
CONV = {
    # 1x1 of 16 channels: no 1x1 path in s16, the im2col of 16 columns: 2·16·2 = 64; MVE 4·16·2 = 128
    "1x1": (_geometry((1, 8, 8, 16), (1, 8, 8, 8), (1, 1)), 64, 64, 128),
    # 3x3 of 3: 27 columns, 2·27·2 = 108; MVE rounded up to 32, 4·32·2 = 256
    "3x3, 3 channels": (_geometry((1, 9, 9, 3), (1, 5, 5, 8), (3, 3), (2, 2), (1, 1)), 108, 108, 256),
    # 1x5 row of 8: 40 columns (a multiple of 8), 160; MVE 320
    "1x5 row": (_geometry((1, 1, 12, 8), (1, 1, 8, 4), (1, 5)), 160, 160, 320),
}
DEPTHWISE = {
    # 5x5 of 8 channels, multiplier 1: the fast kernel, 8·25·2 = 400 on DSP, 4·400 + 8 = 1608 on MVE
    "5x5": (_geometry((1, 8, 8, 8), (1, 8, 8, 8), (5, 5), padding=(2, 2)), 0, 400, 1608),
    # multiplier 2 and dilation: the generic kernel, none
    "multiplier 2": (_geometry((1, 8, 8, 4), (1, 8, 8, 8), (3, 3), padding=(1, 1)), 0, 0, 0),
    "dilated": (_geometry((1, 9, 9, 8), (1, 5, 5, 8), (3, 3), dilation=(2, 2)), 0, 0, 0),
    # 23x23 = 529 taps: not fewer than 512, the generic kernel
    "23x23": (_geometry((1, 23, 23, 2), (1, 1, 1, 2), (23, 23)), 0, 0, 0),
    # 1x511 taps: still the fast kernel, 2·511·2 = 2044 on DSP, 4·2044 + 8 = 8184 on MVE
    "1x511": (_geometry((1, 1, 511, 2), (1, 1, 1, 2), (1, 511)), 0, 2044, 8184),
}


@pytest.mark.parametrize("case", CONV)
def test_convolution_sizes(case):
    geometry, *sizes = CONV[case]
    assert [conv_s16_buffer_size(geometry, level) for level in LEVELS] == sizes


@pytest.mark.parametrize("case", DEPTHWISE)
def test_depthwise_sizes(case):
    geometry, *sizes = DEPTHWISE[case]
    assert [depthwise_s16_buffer_size(geometry, level) for level in LEVELS] == sizes


def _conv(weights, bias=None, in_scale=2.0 ** -10, out_scale=2.0 ** -10, **changes):
    """A 16x8 conv of 1x1 pixels (VALID): `weights` [out, kh, kw, in]."""
    channels, kh, kw, depth = weights.shape
    x = spec.QuantTensor((1, kh, kw, depth), "int16", in_scale, 0)
    y = spec.QuantTensor((1, 1, 1, channels), "int16", out_scale, 0)
    bias = np.zeros(channels, np.int64) if bias is None else np.asarray(bias, np.int64)
    return spec.Conv2D(x, y, weights.astype(np.int8), (2.0 ** -7,) * channels, bias, None, **changes)


@pytest.mark.parametrize("op, reason", [
    # 576 products of -128 · -32768 = 2^22 sum to 2^31 + 2^28: CMSIS-NN's int32 sum wraps, LiteRT's int64 does not
    (lambda: _conv(np.full((2, 3, 3, 64), -128)), "a channel's products could overflow CMSIS-NN's int32 sum"),
    # 512 of them reach 2^31 itself, one beyond int32
    (lambda: _conv(np.full((1, 1, 1, 512), -128)), "a channel's products could overflow CMSIS-NN's int32 sum"),
    # a bias of 2^40 at multiplier 1 (m16 2^14, shift 1): (2^40 · 2^14) >> 13 = 2^41 is beyond int32
    (lambda: _conv(np.ones((3, 1, 1, 2)), bias=[0, 1 << 40, 0], in_scale=1.0, out_scale=2.0 ** -7),
     "channel 1's accumulators could overflow arm_nn_requantize_s64's int32 step"),
    # 0.125 / float32(0.3) = 0.41666665...: mantissa 0x6aaaaa64 (frexp, rounded), not a multiple of 2^16
    (lambda: _spec(models.make("fully_connected", 0, dtype="int16", in_scale=0.5, w_scales=[0.25], out_scale=0.3)),
     "LiteRT rounds with the full multiplier 0x6aaaaa64 and CMSIS-NN with its upper 16 bits: they differ"),
    (lambda: _spec(models.make("fully_connected", 0, dtype="int16", per_channel=True)),
     "per-channel weights (arm_fully_connected_s16 is per tensor)"),
    (lambda: spec.Pool2D("avg", spec.QuantTensor((1, 256, 256, 1), "int16", 0.5, 0),
                         spec.QuantTensor((1, 1, 1, 1), "int16", 0.5, 0), (256, 256), (1, 1)),
     "a window of 65536 elements could overflow CMSIS-NN's int32 sum"),
])
def test_refusals(op, reason):
    assert CmsisNn(M55).refusal(op()) == reason


def test_the_sums_just_within_int32_are_taken():
    """511 products of at most -128 · -32768 = 2^22 and one of at most 127 · 32768: below 2^31, taken."""
    weights = np.full((1, 1, 1, 512), -128)
    weights[0, 0, 0, 0] = 127
    assert CmsisNn(M55).refusal(_conv(weights)) == ""


_ON_M7, _ON_M3 = "measured on cortex-m7 (QEMU mps2-an500)", "measured on cortex-m3 (QEMU mps2-an385)"


@pytest.mark.parametrize("op, cpu, reason", [
    ("avg_pool2d", M7, f"faster on DSP cores: 62160 vs 84280 instructions {_ON_M7}"),
    ("max_pool2d", M7, f"faster on DSP cores: 59920 vs 85480 instructions {_ON_M7}"),
    ("avg_pool2d", M3, f"faster on scalar cores: 62160 vs 153240 instructions {_ON_M3}"),
    ("max_pool2d", M3, f"faster on scalar cores: 59920 vs 85600 instructions {_ON_M3}"),
    ("depthwise_conv2d", M3, f"faster on scalar cores: 1814320 vs 2550880 instructions {_ON_M3}"),
])
def test_s16_ops_stay_ours_where_ours_is_faster(op, cpu, reason):
    """The s16 measurements, not the s8 ones: a 16x8 depthwise conv is ours on scalar cores, an int8 one is not."""
    assert CmsisNn(cpu).refusal(_spec(models.make(op, 0, dtype="int16"))) == reason
    assert CmsisNn(M55).refusal(_spec(models.make(op, 0, dtype="int16"))) == ""
    assert op != "depthwise_conv2d" or CmsisNn(cpu).refusal(_spec(models.make(op, 0))) == ""
