"""TFLite's 16x8 CONV_2D, DEPTHWISE_CONV_2D, TRANSPOSE_CONV and FULLY_CONNECTED (int16 activations with zero point
0, int8 weights, int64 bias) on the NPU: command streams from Vela's API, run in the simulator on every U55
configuration, equal LiteRT's reference kernels exactly; cascades of 16x8 layers compute what the uncascaded stream
does; layers whose worst case LiteRT's own arithmetic cannot hold stay on the host with a one-line reason."""
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ethosu_tvm.codegen import compile_npu_graph
from ethosu_tvm.codegen.cascade import cascade_proposals, cascade_schedule
from ethosu_tvm.frontend.importer import from_tflite
from ethosu_tvm.partition import partition_for_ethosu
from ethosu_tvm.quantization import quantize_multiplier
from ethosu_tvm.target import EthosuTarget
from ethosu_tvm.testing import models
from ethosu_tvm.testing.reference import random_inputs, run_litert

from sim_support import ACCELERATORS, assert_model_exact, compile_model, run_artifact
from test_tir_schedules import _graph

SEEDS = (0, 1, 2)
LAYERS = {  # name -> (op, parameters): shapes, strides, paddings, dilations, activations, quantization granularity
    "conv_default": ("conv2d", {}),
    "conv_stride2_relu": ("conv2d", dict(stride=(2, 2), in_shape=(1, 9, 9, 20), activation="RELU")),
    "conv_valid_5x3_relu6": ("conv2d", dict(kernel=(5, 3), padding="VALID", in_shape=(1, 11, 7, 6),
                                            activation="RELU6")),
    "conv_dilated": ("conv2d", dict(dilation=(2, 2), in_shape=(1, 10, 10, 4), out_channels=5)),
    "conv_deep_per_tensor": ("conv2d", dict(out_channels=40, in_shape=(1, 6, 6, 70), per_channel=False)),
    "conv_1x1_relu_n1_to_1": ("conv2d", dict(kernel=(1, 1), activation="RELU_N1_TO_1", out_channels=17)),
    "depthwise_default": ("depthwise_conv2d", {}),
    "depthwise_5x5_stride2_relu": ("depthwise_conv2d", dict(kernel=(5, 5), stride=(2, 2), activation="RELU",
                                                            in_shape=(1, 11, 11, 20))),
    "depthwise_valid_dilated": ("depthwise_conv2d", dict(padding="VALID", dilation=(2, 2), in_shape=(1, 10, 9, 8))),
    "depthwise_multiplier3": ("depthwise_conv2d", dict(depth_multiplier=3, in_shape=(1, 8, 8, 1))),
    "depthwise_relu6": ("depthwise_conv2d", dict(activation="RELU6", in_shape=(1, 7, 6, 24))),
    "transpose_conv_default": ("transpose_conv", {}),
    "transpose_conv_stride1_valid": ("transpose_conv", dict(stride=(1, 1), padding="VALID", kernel=(2, 3))),
    "transpose_conv_one_row": ("transpose_conv", dict(in_shape=(1, 1, 7, 16), kernel=(1, 4), stride=(1, 2),
                                                      out_channels=12, per_channel=False)),
    "fc_default": ("fully_connected", {}),
    # many outputs: the rare results where TFLite's double rounding would differ from LiteRT's single rounding
    "fc_relu_wide_batch": ("fully_connected", dict(activation="RELU", units=40, in_shape=(40, 70))),
    "fc_batch": ("fully_connected", dict(in_shape=(64, 24), units=32)),
    "fc_per_channel_no_bias": ("fully_connected", dict(per_channel=True, bias=False, units=12)),
}


@pytest.mark.parametrize("accelerator", ACCELERATORS)
@pytest.mark.parametrize("name", LAYERS)
def test_16x8_layer_bit_exact(name, accelerator):
    op, params = LAYERS[name]
    assert_model_exact(models.make(op, 4, dtype="int16", **params), accelerator, seeds=SEEDS)


DEPTH = 64
IN_SCALE, W_SCALE = 1.0 / 32768, 0.01
# |accumulator + bias| < 127 · DEPTH · 2^15 + 2^31: an output scale that maps it into int16 without saturating, so
# every input below reaches the rounding of the output stage
UNSATURATED = IN_SCALE * W_SCALE * (127 * DEPTH * 32768 + 2**31) / 32767


@pytest.mark.parametrize("accelerator", ["ethos-u55-32", "ethos-u55-256"])
@pytest.mark.parametrize("op", ["conv2d", "depthwise_conv2d", "fully_connected"])
@pytest.mark.parametrize("bias", [2**31 - 1, -(2**31), 12345])
def test_16x8_extremes_bit_exact(op, bias, accelerator):
    """The int16 extremes (constant ±32767/−32768, alternating, random) with int32-extreme biases and an output
    scale that keeps the largest accumulators unsaturated."""
    shape = (1, DEPTH) if op == "fully_connected" else (1, 5, 5, DEPTH)
    channels = 6 if op == "fully_connected" else (DEPTH if op == "depthwise_conv2d" else 7)
    extra = {"fully_connected": dict(units=channels), "conv2d": dict(out_channels=channels, kernel=(1, 1)),
             "depthwise_conv2d": {}}[op]
    per_channel = op != "fully_connected"
    model = models.make(op, 6, dtype="int16", in_shape=shape, in_scale=IN_SCALE,
                        w_scales=[W_SCALE] * (channels if per_channel else 1), per_channel=per_channel,
                        out_scale=UNSATURATED, bias_values=[bias] * channels, **extra)
    _, (artifact,) = compile_model(model, accelerator)
    alternating = np.where(np.indices(shape).sum(axis=0) % 2, 32767, -32768)
    for x in (np.full(shape, 32767), np.full(shape, -32768), alternating, random_inputs(model, 0)[0]):
        x = x.astype(np.int16)
        expected = run_litert(model, [x])[0]
        np.testing.assert_array_equal(run_artifact(artifact, [x])[0].reshape(expected.shape), expected)


def _reason(model: bytes) -> str:
    _, report = partition_for_ethosu(from_tflite(model), "ethos-u55-128")
    (op,) = report.ops
    assert op.target == "host"
    return op.reason


def test_16x8_scaled_beyond_int32_stays_on_the_host():
    """An output scale so fine that the largest accumulator, scaled, leaves LiteRT's int32 result."""
    model = models.make("conv2d", 1, dtype="int16", out_scale=1e-8)
    assert _reason(model) == "the scaled accumulators could reach magnitude 45083120183, beyond LiteRT's int32 result"


def test_16x8_scale_beyond_the_shift_stays_on_the_host():
    """An effective scale of 2^16 or more: the 16-bit multiplier's right shift 15 − e would be negative."""
    model = models.make("conv2d", 1, dtype="int16", out_scale=1e-10)
    assert _reason(model) == "effective output scale 5.67e+04 is outside what the NPU's 16x8 scale can represent"


def test_16x8_fully_connected_product_beyond_int64_stays_on_the_host():
    """LiteRT's fully connected multiplies |accumulator| up to ~2^38 by the 32-bit multiplier in int64."""
    model = models.make("fully_connected", 1, dtype="int16", in_shape=(1, 4096), units=4)
    assert _reason(model) == "the accumulators times the output multiplier could overflow LiteRT's 64-bit product"


def _chain() -> bytes:
    """conv → depthwise → conv → fully connected, all 16x8."""
    net = models.Net(seed=7)
    x = net.input((1, 12, 12, 6), "int16")
    x = net.conv2d(x, out_channels=16, activation="RELU")
    x = net.depthwise_conv2d(x, stride=(2, 2))
    x = net.conv2d(x, out_channels=8, kernel=(1, 1))
    net.output(net.fully_connected(net.reshape(x, (1, 6 * 6 * 8)), units=10))
    return net.build()


def test_16x8_chain_bit_exact_and_every_cascade_agrees():
    model = _chain()
    assert_model_exact(model, "ethos-u55-64", seeds=SEEDS)
    graph = _graph(model)
    target = EthosuTarget("ethos-u55-64")
    proposals = cascade_proposals(graph, target)
    assert any(plan.interior for p in proposals for plan in p.cascades)
    inputs = random_inputs(model, 1)
    expected = run_artifact(compile_npu_graph(graph, target), inputs)
    for proposal in proposals:
        for got, want in zip(run_artifact(compile_npu_graph(graph, target, cascade_schedule(proposal)), inputs),
                             expected):
            np.testing.assert_array_equal(got, want)


@settings(max_examples=15, deadline=None)
@given(op=st.sampled_from(["conv2d", "depthwise_conv2d", "fully_connected"]), h=st.integers(1, 9),
       w=st.integers(1, 9), c=st.integers(1, 24), kernel=st.tuples(st.integers(1, 4), st.integers(1, 4)),
       stride=st.tuples(st.integers(1, 3), st.integers(1, 3)), padding=st.sampled_from(["SAME", "VALID"]),
       activation=st.sampled_from(["NONE", "RELU", "RELU6"]), accelerator=st.sampled_from(ACCELERATORS),
       seed=st.integers(0, 1000))
def test_16x8_sweep(op, h, w, c, kernel, stride, padding, activation, accelerator, seed):
    if op == "fully_connected":
        params = dict(in_shape=(h, w * c), units=c + 2)
    else:
        assume(padding == "SAME" or (h >= kernel[0] and w >= kernel[1]))
        params = dict(in_shape=(1, h, w, c), kernel=kernel, stride=stride, padding=padding)
        params |= dict(out_channels=c + 3) if op == "conv2d" else {}
    assert_model_exact(models.make(op, seed, dtype="int16", activation=activation, **params), accelerator)


@pytest.mark.parametrize("op", ["conv2d", "depthwise_conv2d"])
def test_16x8_saturated_multiplier_bit_exact(op):
    """A Q31 multiplier of 0x7FFF0000 or more: TFLite's 16-bit multiplier saturates at 0x7FFF instead of rounding up
    to 2^15."""
    real = 0.999995 * 2.0**-10
    assert quantize_multiplier(real)[0] >= 0x7FFF0000
    in_scale, w_scale = 1.0 / 32768, 0.01
    channels = 8
    model = models.make(op, 2, dtype="int16", in_scale=in_scale, w_scales=[w_scale] * channels,
                        out_scale=float(np.float32(in_scale) * np.float32(w_scale)) / real)
    assert_model_exact(model, "ethos-u55-128", seeds=SEEDS)
