"""Models the importer needed fixes for, compiled with `tvmc compile` and bit-exact with the reference kernels."""
from __future__ import annotations

import pytest
from aot_support import assert_bit_exact, compile_model, members, npu_target

from ethosu_tvm.testing import models
from ethosu_tvm.testing.reference import random_inputs, run_litert, run_tflm


@pytest.mark.parametrize("target", [npu_target("ethos-u55-128"), "c"], ids=["npu", "host"])
@pytest.mark.parametrize("make", [lambda: models.make_graph("ds_cnn", per_tensor_axis=3),
                                  lambda: models.make("fully_connected", per_tensor_axis=3),
                                  lambda: models.make("softmax", per_tensor_axis=3)], ids=["ds_cnn", "fc", "softmax"])
def test_per_tensor_quantized_dimension_3(make, target, tmp_path):
    """TFLite Micro's person_detect writes QuantizedDimension 3 on single-scale tensors of every rank. LiteRT
    rejects such a model ("quantized_dimension must be in range [0, 2)"), TFLite Micro runs it: it is the
    reference."""
    model = make()
    with pytest.raises(ValueError, match="quantized_dimension must be in range"):
        run_litert(model, random_inputs(model, 0))
    assert_bit_exact(model, compile_model(model, tmp_path, target), tmp_path, seeds=range(3), reference=run_tflm)


@pytest.mark.parametrize("op, params", [
    ("conv2d", dict(per_channel=False, activation="RELU", stride=2)),
    ("depthwise_conv2d", dict(in_shape=(1, 7, 7, 5), stride=2, activation="RELU6", padding="VALID")),
    ("fully_connected", dict(in_shape=(2, 3, 10), keep_num_dims=True)),
    ("fully_connected", dict(in_shape=(1, 2, 2, 8), bias=False)),
], ids=["conv2d", "depthwise_conv2d", "fc_keep_dims", "fc_4d_no_bias"])
def test_16x8_weighted_ops_run_on_the_host(op, params, tmp_path):
    """int16 activations with int8 weights and an int64 bias: host kernels bit-exact with LiteRT; the offload
    report says why the NPU does not take them."""
    model = models.make(op, 1, dtype="int16", **params)
    archive = compile_model(model, tmp_path, npu_target("ethos-u55-256"))
    assert_bit_exact(model, archive, tmp_path, seeds=range(3))
    report = members(archive)["./src/offload_report.txt"].decode()
    assert "host    IFM has data type int16; tensors must be of type int8" in report, report
