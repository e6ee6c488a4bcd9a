"""Models the importer needed fixes for, compiled with `tvmc compile` and bit-exact with the reference kernels."""
from __future__ import annotations

import pytest
from aot_support import assert_bit_exact, compile_model, npu_target

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
