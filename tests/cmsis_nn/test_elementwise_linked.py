"""The opt-in tier for CMSIS-NN's ADD and MUL calls (ETHOSU_TVM_CMSIS_NN names the library folder): the generated C
linked with CMSIS-NN and run on this PC, bit-exact with LiteRT over a sweep of shapes (odd sizes reach the kernels'
tail loops), quantizations, int8 and int16, fused activations and constant operands; broadcasts stay ours and are
exact too. Without the variable the tier skips."""
from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ethosu_tvm
from ethosu_tvm.testing import models
from ethosu_tvm.testing.reference import random_inputs, run_litert

pytestmark = pytest.mark.skipif(not os.environ.get("ETHOSU_TVM_CMSIS_NN"),
                                reason="ETHOSU_TVM_CMSIS_NN names no CMSIS-NN build (include/, lib/x86_64/): the "
                                       "linked tier needs one (docs/firmware.md)")
TARGET = "cmsis-nn -mcpu=cortex-m55,c"  # MVE: CMSIS-NN's calls are chosen (ours is faster on DSP and scalar cores)


def _libraries_if_exact(model: bytes) -> list[str]:
    compiled = ethosu_tvm.build(ethosu_tvm.from_tflite(model), target=TARGET)
    for seed in range(2):
        inputs = random_inputs(model, seed)
        for got, want in zip(compiled.run(inputs).values(), run_litert(model, inputs)):
            np.testing.assert_array_equal(got.reshape(want.shape), want, err_msg=f"seed {seed}")
    return [step.kernel.library for step in compiled.program.steps]


def _quantization(dtype: str):
    """in_scale, in_zp and the second operand's: int16's zero points are 0 (LiteRT's int16 ADD and MUL need it)."""
    zero_point = st.just(0) if dtype == "int16" else st.integers(-128, 127)
    scale = st.floats(1e-4, 1e-2) if dtype == "int16" else st.floats(1e-3, 0.5)
    return st.fixed_dictionaries(dict(in_scale=scale, in_zp=zero_point, in2_scale=scale, in2_zp=zero_point))


@settings(max_examples=40, deadline=None)
@given(op=st.sampled_from(["add", "mul"]), dtype=st.sampled_from(["int8", "int16"]),
       shape=st.lists(st.integers(1, 9), min_size=1, max_size=4).map(tuple),
       activation=st.sampled_from(["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]), data=st.data(),
       seed=st.integers(0, 1000))
def test_equal_shapes_are_calls(op, dtype, shape, activation, data, seed):
    quantization = data.draw(_quantization(dtype))
    model = models.make(op, seed=seed, in_shape=shape, dtype=dtype, activation=activation, **quantization)
    assert _libraries_if_exact(model) == ["cmsis-nn"]


@pytest.mark.parametrize("op, params", [
    ("add", {"constant_lhs": (1, 8, 8, 8), "activation": "RELU"}),
    ("mul", {"constant_rhs": (1, 8, 8, 8), "dtype": "int16"}),
])
def test_a_constant_operand(op, params):
    assert _libraries_if_exact(models.make(op, 2, **params)) == ["cmsis-nn"]


@pytest.mark.parametrize("op, params", [
    ("add", {"in2_shape": (1, 1, 1, 8)}),
    ("mul", {"in2_shape": (8,), "activation": "RELU6"}),
    ("add", {"constant_rhs": (1,), "dtype": "int16"}),
])
def test_broadcasts_stay_ours(op, params):
    assert _libraries_if_exact(models.make(op, 3, **params)) == [""]
