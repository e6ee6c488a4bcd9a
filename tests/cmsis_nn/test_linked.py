"""The opt-in tier: the generated C linked with a real CMSIS-NN (the folder ETHOSU_TVM_CMSIS_NN names, laid out as
docs/firmware.md says) and run on this PC, bit-exact with LiteRT: every factory op CMSIS-NN takes, in the forms
that steer its wrappers to each path, sweeps over their parameters, and the MLPerf Tiny models host-only. Without
the variable the tier skips."""
from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import ethosu_tvm
from ethosu_tvm.testing import models, shared_model
from ethosu_tvm.testing.reference import random_inputs, run_litert

pytestmark = pytest.mark.skipif(not os.environ.get("ETHOSU_TVM_CMSIS_NN"),
                                reason="ETHOSU_TVM_CMSIS_NN names no CMSIS-NN build (include/, lib/x86_64/): the "
                                       "linked tier needs one (docs/firmware.md)")
TARGET = "cmsis-nn -mcpu=cortex-m55,c"
SEEDS = range(3)

FACTORY = {
    "conv2d": {},
    "conv2d 1x1": {"kernel": (1, 1)},
    "conv2d 1x1 strided": {"kernel": (1, 1), "stride": (2, 2), "padding": "VALID"},
    "conv2d strided relu6": {"stride": (2, 2), "activation": "RELU6"},
    "conv2d dilated": {"dilation": (2, 2), "in_shape": (1, 9, 9, 4)},
    "conv2d 1xN": {"in_shape": (1, 1, 12, 8), "kernel": (1, 3)},
    "conv2d two batches": {"in_shape": (2, 6, 6, 4)},
    "depthwise_conv2d": {},
    "depthwise_conv2d 5x5": {"kernel": (5, 5)},
    "depthwise_conv2d multiplier": {"depth_multiplier": 3, "in_shape": (1, 8, 8, 2), "activation": "RELU"},
    "depthwise_conv2d dilated": {"dilation": (2, 2), "in_shape": (1, 9, 9, 8)},
    "depthwise_conv2d one channel": {"depth_multiplier": 8, "in_shape": (1, 8, 8, 1)},
    "depthwise_conv2d strided": {"stride": (2, 2), "padding": "VALID", "in_shape": (1, 9, 9, 8)},
    # LiteRT rounds an FC once: only a multiplier where both roundings agree (here 1) is CMSIS-NN's
    "fully_connected": {"in_scale": 0.5, "in_zp": 3, "w_scales": [0.25], "out_scale": 0.125, "out_zp": -5,
                        "bias": False},
    "avg_pool2d": {},
    "avg_pool2d same relu": {"pool": (3, 3), "stride": (2, 2), "padding": "SAME", "activation": "RELU"},
    "max_pool2d": {},
    "max_pool2d same": {"pool": (3, 3), "stride": (1, 1), "padding": "SAME", "activation": "RELU6"},
}


def _assert_exact(model: bytes, target: str = TARGET, seeds=SEEDS) -> ethosu_tvm.CompiledModel:
    compiled = ethosu_tvm.build(ethosu_tvm.from_tflite(model), target=target)
    for seed in seeds:
        inputs = random_inputs(model, seed)
        for got, want in zip(compiled.run(inputs).values(), run_litert(model, inputs)):
            np.testing.assert_array_equal(got.reshape(want.shape), want, err_msg=f"seed {seed}")
    return compiled


@pytest.mark.parametrize("case", FACTORY)
def test_factory_ops(case):
    compiled = _assert_exact(models.make(case.split()[0], 1, **FACTORY[case]))
    assert [step.kernel.library for step in compiled.program.steps] == ["cmsis-nn"]


WINDOW = dict(h=st.integers(1, 9), w=st.integers(1, 9), c=st.integers(1, 12),
              stride=st.tuples(st.integers(1, 3), st.integers(1, 3)), padding=st.sampled_from(["SAME", "VALID"]),
              activation=st.sampled_from(["NONE", "RELU", "RELU6"]), in_zp=st.integers(-128, 127),
              cpu=st.sampled_from(["cortex-m0", "cortex-m7", "cortex-m55"]), seed=st.integers(0, 1000))


@settings(max_examples=25, deadline=None)
@given(op=st.sampled_from(["conv2d", "depthwise_conv2d"]), kernel=st.tuples(st.integers(1, 4), st.integers(1, 4)),
       dilation=st.tuples(st.integers(1, 2), st.integers(1, 2)), multiplier=st.integers(1, 3),
       out_zp=st.integers(-128, 127), per_channel=st.booleans(), **WINDOW)
def test_convolution_sweep(op, kernel, dilation, multiplier, out_zp, per_channel, h, w, c, stride, padding,
                           activation, in_zp, cpu, seed):
    if padding == "VALID":
        assume(h >= dilation[0] * (kernel[0] - 1) + 1 and w >= dilation[1] * (kernel[1] - 1) + 1)
    extra = dict(out_channels=c + 3) if op == "conv2d" else dict(depth_multiplier=multiplier)
    model = models.make(op, seed=seed, in_shape=(1, h, w, c), kernel=kernel, stride=stride, dilation=dilation,
                        padding=padding, activation=activation, in_zp=in_zp, out_zp=out_zp, per_channel=per_channel,
                        **extra)
    compiled = _assert_exact(model, f"cmsis-nn -mcpu={cpu},c", seeds=range(2))
    assert [step.kernel.library for step in compiled.program.steps] == ["cmsis-nn"]


@settings(max_examples=15, deadline=None)
@given(op=st.sampled_from(["avg_pool2d", "max_pool2d"]), pool=st.tuples(st.integers(1, 4), st.integers(1, 4)),
       **{**WINDOW, "cpu": st.just("cortex-m55")})  # our pools are faster on DSP and scalar cores (choice.py)
def test_pooling_sweep(op, pool, h, w, c, stride, padding, activation, in_zp, cpu, seed):
    if padding == "VALID":
        assume(h >= pool[0] and w >= pool[1])
    model = models.make(op, seed=seed, in_shape=(1, h, w, c), pool=pool, stride=stride, padding=padding,
                        activation=activation, in_zp=in_zp)
    compiled = _assert_exact(model, f"cmsis-nn -mcpu={cpu},c", seeds=range(2))
    assert [step.kernel.library for step in compiled.program.steps] == ["cmsis-nn"]


@pytest.mark.parametrize("name", ["mlperf_tiny_kws_dscnn_int8", "mlperf_tiny_ic_resnet8_int8",
                                  "mlperf_tiny_vww_mobilenetv1_96_int8", "mlperf_tiny_ad_fc_autoencoder_int8"])
def test_mlperf_tiny_host_only(name):
    compiled = _assert_exact(shared_model(f"{name}.tflite"), seeds=range(2))
    assert "cmsis-nn" in compiled.kernel_libraries or name.startswith("mlperf_tiny_ad")  # AD is FCs only
