"""DIV (int8, int16) on the host: every pair of int8 values, random int16 pairs and broadcast shapes, bit-exact
with LiteRT, including the quotients where TFLite's rounding shift reaches 32 bits and more (see ops/binary.py)."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st
from host_harness import assert_bit_exact
from host_tflite_ops import host_op

from ethosu_tvm.host import UnsupportedHostOp, build_kernel
from ethosu_tvm.testing import models
from ethosu_tvm.testing.reference import run_litert, run_tflm

SWEEP = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
EVERY_INT8 = np.arange(-128, 128, dtype=np.int8)
QUANTIZATIONS = [
    {},
    dict(in2_scale=0.03, in2_zp=5),
    dict(in_scale=0.0101, in2_scale=0.01, in_zp=127, in2_zp=-128, out_scale=0.5, out_zp=3),
    dict(out_scale=0.001),
    dict(out_scale=3.0, activation="RELU"),
    dict(in_scale=0.5, in2_scale=0.001, out_scale=200.0, out_zp=-100, activation="RELU6"),
]


def _every_pair(model: bytes, divisor_zp: int):
    """Every int8 dividend against every int8 divisor but the divisor's zero point (LiteRT fails on it)."""
    return EVERY_INT8.reshape(256, 1), EVERY_INT8[EVERY_INT8 != divisor_zp].reshape(1, 255)


@pytest.mark.parametrize("quant", QUANTIZATIONS)
def test_div_every_pair_of_values(quant, compile_kernel):
    divisor_zp = quant.get("in2_zp", -3)
    model = models.make("div", seed=0, in_shape=(256, 1), in2_shape=(1, 255), **quant)
    x, y = _every_pair(model, divisor_zp)
    expected = run_litert(model, [x, y])[0]
    np.testing.assert_array_equal(compile_kernel(build_kernel(host_op(model)))(x, y).reshape(256, 255), expected)


def test_div_int8_litert_and_tflite_micro_agree():
    """TFLite Micro's int8 DIV (on x86) gives LiteRT's results, the quotients past a 31-bit shift included."""
    model = models.make("div", seed=0, in_shape=(256, 1), in2_shape=(1, 255))
    inputs = list(_every_pair(model, -3))
    np.testing.assert_array_equal(run_tflm(model, inputs)[0], run_litert(model, inputs)[0])


@pytest.mark.parametrize("quant", [dict(in_scale=1 / 2048, in2_scale=1 / 1024, out_scale=1 / 512),
                                   dict(in_scale=0.01, in2_scale=1 / 32768, out_scale=1.0, activation="RELU")])
def test_div_int16_random_pairs(quant, compile_kernel):
    model = models.make("div", seed=0, dtype="int16", in_shape=(4096,), in2_shape=(4096,), **quant)
    kernel = compile_kernel(build_kernel(host_op(model)))
    rng = np.random.default_rng(1)
    for _ in range(3):
        x = rng.integers(-32768, 32767, size=4096, endpoint=True, dtype=np.int16)
        y = rng.integers(-32768, 32767, size=4096, endpoint=True, dtype=np.int16)
        y[y == 0] = 1
        x[:64], y[:64] = rng.integers(-3, 3, size=64), rng.choice([-32768, 32767, 30000, -20000], size=64)
        np.testing.assert_array_equal(kernel(x, y), run_litert(model, [x, y])[0])


@SWEEP
@given(shapes=st.sampled_from([((1, 8, 8, 8), (8,)), ((2, 1, 5), (3, 1)), ((4,), ()), ((1, 3, 1), (2, 1, 4))]),
       dtype=st.sampled_from(["int8", "int16"]), constant=st.booleans(), seed=st.integers(0, 100))
def test_div_broadcast_and_constant_divisor_sweep(shapes, dtype, constant, seed, compile_kernel):
    """A constant divisor (drawn without its zero point) or a feature map one (random inputs that hit its zero
    point are skipped: LiteRT fails on them)."""
    x_shape, y_shape = shapes
    second = dict(constant_rhs=y_shape) if constant else dict(in2_shape=y_shape)
    model = models.make("div", seed=seed, dtype=dtype, in_shape=x_shape, **second)
    try:
        assert_bit_exact(model, compile_kernel, range(2))
    except RuntimeError as err:
        if "zero_point" not in str(err):
            raise
        reject()


def test_div_scale_ratio_needing_a_left_shift_is_refused():
    model = models.make("div", seed=0, in_scale=0.5, in2_scale=1e-6, out_scale=1e-3)
    with pytest.raises(UnsupportedHostOp, match=r"^div: a scale ratio s1/\(s2·s_out\) of 5e\+08 \(TFLite's kernel "
                                                r"would shift left or by 64 bits or more\)$"):
        build_kernel(host_op(model))
