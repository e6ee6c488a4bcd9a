"""L2_NORMALIZATION (int8) on the host: bit-exact with LiteRT over row lengths and input quantizations, every
single value, sums of squares from 0 to past 2^29 (both branches of TFLite's inverse square root), and the refusal
of an output quantization TFLite does not allow."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from host_harness import assert_bit_exact
from host_tflite_ops import host_op

from ethosu_tvm.frontend.errors import UnsupportedModelError
from ethosu_tvm.frontend.importer import from_tflite
from ethosu_tvm.host import UnsupportedHostOp, build_kernel, spec
from ethosu_tvm.testing import models
from ethosu_tvm.testing.reference import run_litert

SWEEP = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _check(model: bytes, inputs: np.ndarray, compile_kernel) -> None:
    expected = run_litert(model, [inputs])[0]
    kernel = compile_kernel(build_kernel(host_op(model)))
    np.testing.assert_array_equal(kernel(inputs).reshape(expected.shape), expected)


@SWEEP
@given(rows=st.integers(1, 4), depth=st.integers(1, 64), in_scale=st.floats(1e-3, 2.0), in_zp=st.integers(-128, 127))
def test_l2_normalization_sweep(rows, depth, in_scale, in_zp, compile_kernel):
    assert_bit_exact(models.make("l2_normalization", seed=rows + depth, in_shape=(rows, depth), in_scale=in_scale,
                                 in_zp=in_zp), compile_kernel, range(3))


@pytest.mark.parametrize("in_zp", [-128, -3, 0, 127])
def test_l2_normalization_every_single_value(in_zp, compile_kernel):
    """Rows of one element: sums of squares 0 and 1 (TFLite's special case) and every square up to 255²."""
    model = models.make("l2_normalization", in_shape=(256, 1), in_zp=in_zp)
    _check(model, np.arange(-128, 128, dtype=np.int8).reshape(256, 1), compile_kernel)


def test_l2_normalization_small_sums(compile_kernel):
    """Sums of squares 2 to 9, where the inverse square root's shift is negative (its multiplier shifts left)."""
    model = models.make("l2_normalization", in_shape=(6, 9), in_zp=0)
    x = np.zeros((6, 9), np.int8)
    for row, ones in enumerate(range(2, 8)):
        x[row, :ones] = np.where(np.arange(ones) % 2, 1, -1)
    x[5, :3] = (2, -2, 1)  # 9
    _check(model, x, compile_kernel)


def test_l2_normalization_sums_past_2_to_the_29(compile_kernel):
    """Rows of 20000 elements at ±255 from the zero point: sums of squares above 2^29 (divided by 4 first)."""
    model = models.make("l2_normalization", in_shape=(3, 20000), in_zp=127)
    rng = np.random.default_rng(0)
    x = np.full((3, 20000), -128, np.int8)
    x[1] = rng.integers(-128, 127, size=20000, endpoint=True)
    x[2, ::2] = 127
    _check(model, x, compile_kernel)


def test_l2_normalization_output_quantization_must_be_tflites():
    x = spec.QuantTensor((1, 8), "int8", 0.02, -3)
    with pytest.raises(UnsupportedHostOp, match=r"^l2_normalization: int8 output must have scale 1/128 and zero "
                                                r"point 0 \(as TFLite requires\)$"):
        build_kernel(spec.L2Normalization(x, spec.QuantTensor((1, 8), "int8", 1 / 256, 0)))


def test_l2_normalization_fused_activation_is_refused():
    from ethosu_tvm.testing.tflite_builder import ModelBuilder, Quantization
    import tflite

    builder = ModelBuilder()
    x = builder.add_tensor("x", (1, 8), np.int8, quantization=Quantization((0.02,), (-3,)))
    y = builder.add_tensor("y", (1, 8), np.int8, quantization=Quantization((1 / 128,), (0,)))
    builder.add_operator(tflite.BuiltinOperator.L2_NORMALIZATION, [x], [y], "L2NormOptions",
                         dict(FusedActivationFunction=1))
    with pytest.raises(UnsupportedModelError, match=r"^the TFLite frontend cannot convert operator #0 "
                                                    r"L2_NORMALIZATION: fused activation 1 \(TFLite's kernel takes "
                                                    r"none\)$"):
        from_tflite(builder.build([x], [y], ["input_0"], ["output_0"]))
