"""The opt-in tier for CMSIS-NN's s16 kernels: 16x8 factory ops (int16 activations, int8 weights, int64 bias) built
as calls, linked with a real CMSIS-NN (ETHOSU_TVM_CMSIS_NN) and run on this PC, bit-exact with LiteRT, in the forms
that steer its wrappers to each path, with sweeps over their parameters; and the ones it would not compute as
LiteRT does stay ours. Without the variable the tier skips."""
from __future__ import annotations

import os
from unittest import mock

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from test_linked import TARGET, _assert_exact

import ethosu_tvm
from ethosu_tvm.host.cmsis_nn import exactness_s16
from ethosu_tvm.host.spec import Conv2D, FullyConnected
from ethosu_tvm.testing import models
from ethosu_tvm.testing.reference import random_inputs, run_litert

pytestmark = pytest.mark.skipif(not os.environ.get("ETHOSU_TVM_CMSIS_NN"),
                                reason="ETHOSU_TVM_CMSIS_NN names no CMSIS-NN build (include/, lib/x86_64/): the "
                                       "linked tier needs one (docs/firmware.md)")
INT16 = {"dtype": "int16"}

FACTORY = {
    "conv2d": {},
    "conv2d 1x1": {"kernel": (1, 1)},
    "conv2d strided relu6": {"stride": (2, 2), "activation": "RELU6", "in_shape": (1, 9, 9, 3)},
    "conv2d dilated, two batches": {"dilation": (2, 2), "in_shape": (2, 9, 9, 4)},
    "depthwise_conv2d": {},  # the fast kernel (multiplier 1)
    "depthwise_conv2d 5x5 strided": {"kernel": (5, 5), "stride": (2, 2), "in_shape": (1, 9, 9, 8)},
    "depthwise_conv2d multiplier": {"depth_multiplier": 4, "in_shape": (1, 8, 8, 2), "activation": "RELU"},
    "depthwise_conv2d dilated": {"dilation": (2, 2), "in_shape": (1, 9, 9, 8)},
    # LiteRT's FC multiplies by the full multiplier: only one whose low 16 bits are zero (here 2^30) is CMSIS-NN's
    "fully_connected": {"in_scale": 0.5, "w_scales": [0.25], "out_scale": 0.125, "bias": False},
    "fully_connected two rows": {"in_shape": (2, 24), "in_scale": 0.5, "w_scales": [0.5], "out_scale": 0.125,
                                 "bias": False},
    "avg_pool2d": {},
    "avg_pool2d same relu": {"pool": (3, 3), "stride": (2, 2), "padding": "SAME", "activation": "RELU"},
    "max_pool2d": {},
    "max_pool2d same": {"pool": (3, 3), "stride": (1, 1), "padding": "SAME", "activation": "RELU6"},
}


@pytest.mark.parametrize("case", FACTORY)
def test_factory_ops(case):
    compiled = _assert_exact(models.make(case.split()[0], 1, **INT16, **FACTORY[case]))
    assert [step.kernel.library for step in compiled.program.steps] == ["cmsis-nn"]


def test_an_fc_whose_multiplier_cmsis_nn_would_round_differently_stays_ours():
    model = models.make("fully_connected", 0, in_shape=(1, 64), units=32, **INT16)
    compiled = _assert_exact(model, seeds=[0])
    assert [step.kernel.library for step in compiled.program.steps] == [""]
    _assert_differs_when_forced(model, FullyConnected)


def test_a_conv_whose_requantization_would_overflow_cmsis_nns_int32_step_stays_ours():
    """At a multiplier of 1 (m16 = 2^14, shift 1) CMSIS-NN's first step is 2·acc in int32: a bias of ±(2^31 − 1)
    leaves it, where LiteRT's one step gives acc."""
    model = models.make("conv2d", 0, in_shape=(1, 4, 4, 2), out_channels=4, in_scale=2.0 ** -10,
                        w_scales=[2.0 ** -5] * 4, out_scale=2.0 ** -15, bias_values=[0, 2 ** 31 - 1, 1 - 2 ** 31, 5],
                        **INT16)
    compiled = _assert_exact(model)
    assert [step.kernel.library for step in compiled.program.steps] == [""]
    _assert_differs_when_forced(model, Conv2D)


def _assert_differs_when_forced(model: bytes, kind: type) -> None:
    """Taken by CMSIS-NN anyway (`kind`'s s16 refusal emptied), the model's output differs from LiteRT's."""
    with mock.patch.dict(exactness_s16.REFUSALS, {kind: lambda op: ""}):
        forced = ethosu_tvm.build(ethosu_tvm.from_tflite(model), target=TARGET)
    inputs = random_inputs(model, 0)
    assert [step.kernel.library for step in forced.program.steps] == ["cmsis-nn"]
    got, want = next(iter(forced.run(inputs).values())), run_litert(model, inputs)[0]
    assert not np.array_equal(got.reshape(want.shape), want)


@settings(max_examples=25, deadline=None)
@given(op=st.sampled_from(["conv2d", "depthwise_conv2d"]), kernel=st.tuples(st.integers(1, 4), st.integers(1, 4)),
       dilation=st.tuples(st.integers(1, 2), st.integers(1, 2)), multiplier=st.integers(1, 3),
       per_channel=st.booleans(), h=st.integers(1, 9), w=st.integers(1, 9), c=st.integers(1, 12),
       stride=st.tuples(st.integers(1, 3), st.integers(1, 3)), padding=st.sampled_from(["SAME", "VALID"]),
       activation=st.sampled_from(["NONE", "RELU", "RELU6"]),
       cpu=st.sampled_from(["cortex-m7", "cortex-m55"]), seed=st.integers(0, 1000))  # depthwise: ours on scalar
def test_convolution_sweep(op, kernel, dilation, multiplier, per_channel, h, w, c, stride, padding, activation, cpu,
                           seed):
    if padding == "VALID":
        assume(h >= dilation[0] * (kernel[0] - 1) + 1 and w >= dilation[1] * (kernel[1] - 1) + 1)
    extra = dict(out_channels=c + 3) if op == "conv2d" else dict(depth_multiplier=multiplier)
    model = models.make(op, seed=seed, in_shape=(1, h, w, c), kernel=kernel, stride=stride, dilation=dilation,
                        padding=padding, activation=activation, per_channel=per_channel, **INT16, **extra)
    compiled = _assert_exact(model, f"cmsis-nn -mcpu={cpu},c", seeds=range(2))
    assert [step.kernel.library for step in compiled.program.steps] == ["cmsis-nn"]


@settings(max_examples=15, deadline=None)
@given(op=st.sampled_from(["avg_pool2d", "max_pool2d"]), pool=st.tuples(st.integers(1, 4), st.integers(1, 4)),
       h=st.integers(1, 9), w=st.integers(1, 9), c=st.integers(1, 12),
       stride=st.tuples(st.integers(1, 3), st.integers(1, 3)), padding=st.sampled_from(["SAME", "VALID"]),
       activation=st.sampled_from(["NONE", "RELU", "RELU6"]), seed=st.integers(0, 1000))
def test_pooling_sweep(op, pool, h, w, c, stride, padding, activation, seed):
    if padding == "VALID":
        assume(h >= pool[0] and w >= pool[1])
    model = models.make(op, seed=seed, in_shape=(1, h, w, c), pool=pool, stride=stride, padding=padding,
                        activation=activation, **INT16)
    compiled = _assert_exact(model, "cmsis-nn -mcpu=cortex-m55,c", seeds=range(2))
    assert [step.kernel.library for step in compiled.program.steps] == ["cmsis-nn"]
