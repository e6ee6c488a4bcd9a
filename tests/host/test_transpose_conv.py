"""TRANSPOSE_CONV through the whole flow on the host (import, fusion, spec, kernel, C): bit-exact with LiteRT's
reference kernel for strides, kernels, paddings, per-tensor weights, a missing bias (which TVM's converter alone
cannot import), 16x8 and an output shape given at run time."""
import numpy as np
import pytest

import ethosu_tvm
from ethosu_tvm.testing import models
from ethosu_tvm.testing.reference import random_inputs, run_litert

CASES = [
    dict(),
    dict(padding="VALID"),
    dict(stride=(1, 1)),
    dict(stride=(2, 3), kernel=(2, 4)),
    dict(stride=(3, 3), kernel=(2, 2), padding="VALID"),
    dict(stride=(3, 2), kernel=(5, 3), in_shape=(2, 4, 5, 6), out_channels=3),
    dict(per_channel=False, bias=False, in_zp=40, in_scale=0.1),
    dict(dtype="int16"),  # 16x8: int16 activations, int8 weights, an int64 bias
    dict(dtype="int16", in_shape=(1, 2, 5, 6), kernel=(3, 4), stride=(1, 2), padding="VALID", per_channel=False),
]


@pytest.mark.parametrize("params", CASES, ids=[str(i) for i in range(len(CASES))])
def test_transpose_conv_matches_litert(params):
    model = models.make("transpose_conv", 1, **params)
    module = ethosu_tvm.build(ethosu_tvm.from_tflite(model), target="c")
    for seed in range(3):
        inputs = random_inputs(model, seed)
        (expected,) = run_litert(model, inputs)
        (got,) = module.run({"input_0": inputs[0]}).values()
        np.testing.assert_array_equal(got.reshape(expected.shape), expected)


@pytest.mark.parametrize("target, placement", [("ethos-u -accelerator-config=ethos-u55-128,c", "ethos-u"),
                                               ("c", "host")], ids=["npu", "host"])
def test_output_shape_given_at_run_time(target, placement):
    """An output shape that is a model input (TFLite Micro's SEANet models) is the output tensor's static shape:
    the program keeps the input, and reads nothing of it (LiteRT resizes the output to the values given)."""
    model = models.make("transpose_conv", 2, dtype="int16", shape_input=True)
    module = ethosu_tvm.build(ethosu_tvm.from_tflite(model), target=target)
    assert [op.target for op in module.offload.ops] == [placement]
    shape = np.array((1, 16, 16, 8), dtype=np.int32)
    for seed in range(2):
        data = random_inputs(model, seed)[0]
        (expected,) = run_litert(model, [data, shape])
        (got,) = module.run({"input_0": data, "input_1": shape}).values()
        np.testing.assert_array_equal(got.reshape(expected.shape), expected)
