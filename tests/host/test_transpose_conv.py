"""TRANSPOSE_CONV through the whole flow on the host (import, fusion, spec, kernel, C): bit-exact with LiteRT's
reference kernel for strides, kernels, paddings, per-tensor weights and a missing bias (which TVM's converter
alone cannot import)."""
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
