"""NEG and SQRT (int8) on the host: every input value against LiteRT's kernels, for several quantizations; QUANTIZE
from int32 over the int32 range."""
import numpy as np
import pytest
import tflite
from host_harness import assert_bit_exact
from host_tflite_ops import host_op

import ethosu_tvm
from ethosu_tvm.frontend.errors import UnsupportedModelError
from ethosu_tvm.frontend.importer import from_tflite
from ethosu_tvm.host import UnsupportedHostOp, build_kernel
from ethosu_tvm.quantization import sqrt_lut
from ethosu_tvm.testing import models
from ethosu_tvm.testing.reference import random_inputs, run_litert, run_tflm
from ethosu_tvm.testing.tflite_builder import ModelBuilder, Quantization

EVERY_INT8 = np.arange(-128, 128, dtype=np.int8).reshape(1, 256)


def _every_value(model: bytes, compile_kernel) -> tuple[np.ndarray, np.ndarray]:
    kernel = compile_kernel(build_kernel(host_op(model)))
    return kernel(EVERY_INT8).reshape(1, 256), run_litert(model, [EVERY_INT8])[0]


@pytest.mark.parametrize("params", [{}, dict(in_zp=5), dict(in_zp=127), dict(in_zp=-100, in_scale=0.3)])
def test_neg_every_input_value(params, compile_kernel):
    """LiteRT negates the raw integers: −128 stays −128 (newer TFLite's kernel saturates it to 127)."""
    host, expected = _every_value(models.make("neg", seed=1, in_shape=(1, 256), **params), compile_kernel)
    np.testing.assert_array_equal(host, expected)
    assert host[0, 0] == -128


@pytest.mark.parametrize("params,message", [
    (dict(in_zp=-128), "scale 0.02 zero point -128 → scale 0.02 zero point 127"),
    (dict(in_zp=4, out_zp=0), "scale 0.02 zero point 4 → scale 0.02 zero point 0"),
    (dict(in_zp=4, out_scale=0.03), "scale 0.02 zero point 4 → scale 0.03 zero point -4"),
])
def test_neg_quantization_litert_gets_wrong_is_refused(params, message):
    """LiteRT's −x is wrong on the real values unless the scales are equal and the zero points opposite."""
    with pytest.raises(UnsupportedModelError) as err:
        from_tflite(models.make("neg", seed=1, **params))
    assert str(err.value) == ("the TFLite frontend cannot convert operator #0 NEG: int8 NEG needs equal scales and "
                              f"opposite zero points, got {message}")


@pytest.mark.parametrize("params", [
    {}, dict(in_scale=0.7), dict(in_scale=0.0031, out_scale=0.004, out_zp=-100), dict(in_scale=1.9, out_zp=0),
    dict(in_scale=0.05, out_scale=0.011, out_zp=-128),
])
def test_sqrt_every_input_value(params, compile_kernel):
    """SQRT truncates its float32 quotient (it does not round): every non-negative input (in_zp = −128)."""
    host, expected = _every_value(models.make("sqrt", seed=1, in_shape=(1, 256), **params), compile_kernel)
    np.testing.assert_array_equal(host, expected)


def test_sqrt_above_a_zero_point():
    """LiteRT refuses an input below the zero point at run time; the ones above it match."""
    model = models.make("sqrt", seed=1, in_shape=(1, 256), in_zp=-20, in_scale=0.02)
    with pytest.raises(RuntimeError, match="Sqrt is only defined for non-negative values"):
        run_litert(model, [EVERY_INT8])
    valid = EVERY_INT8[:, 108:]
    op = host_op(model)
    table = sqrt_lut(op.input.scale, op.input.zero_point, op.output.scale, op.output.zero_point)
    np.testing.assert_array_equal(table[valid.astype(np.int64) + 128], run_litert(
        models.make("sqrt", seed=1, in_shape=(1, 148), in_zp=-20, in_scale=0.02), [valid])[0])


@pytest.mark.parametrize("params", [
    {}, dict(adj_x=True), dict(adj_y=True), dict(adj_x=True, adj_y=True),
    dict(in_shape=(2, 3, 5), in2_shape=(1, 5, 7)),  # batch axes broadcast
    dict(in_shape=(4, 1, 3, 6), in2_shape=(2, 6, 5), adj_y=False, in2_zp=9, out_scale=0.05, out_zp=-20),
    dict(in_shape=(1, 2, 8, 8), constant_rhs=(8, 8)), dict(in_shape=(3, 4, 6), constant_rhs=(6, 5)),
    dict(in_shape=(2, 8, 8), constant_lhs=(8, 8), adj_x=True), dict(in_shape=(1, 16), in2_shape=(16, 3)),
    dict(in_shape=(2, 5, 32), in2_shape=(2, 4, 32), adj_y=True, in_scale=0.1, in2_scale=0.004),
])
def test_batch_matmul_matches_litert(params, compile_kernel):
    assert_bit_exact(models.make("batch_matmul", seed=4, **params), compile_kernel)


@pytest.mark.parametrize("op", ["arg_max", "arg_min"])
@pytest.mark.parametrize("params", [
    {}, dict(axis=0, in_shape=(5, 3)), dict(axis=1), dict(axis=-3, in_shape=(2, 7, 3, 4)), dict(in_shape=(9,)),
    dict(axis=2, output_type="int64"),
])
def test_arg_min_max_matches_litert(op, params, compile_kernel):
    assert_bit_exact(models.make(op, seed=6, **params), compile_kernel)


@pytest.mark.parametrize("op,expected", [("arg_max", [[1, 0, 2], [0, 0, 0]]), ("arg_min", [[2, 0, 0], [1, 0, 1]])])
def test_arg_min_max_ties_give_the_first_index(op, expected, compile_kernel):
    """Equal extremes: the first index, as LiteRT (its comparison replaces the candidate only when strict)."""
    x = np.array([[[3, 5, -1, 5], [0, 0, 0, 0], [-2, -2, 7, 7]],
                  [[4, 1, 4, 4], [9, 9, 9, 9], [-6, -8, -6, -8]]], dtype=np.int8)
    model = models.make(op, seed=0, in_shape=(2, 3, 4))
    kernel = compile_kernel(build_kernel(host_op(model)))
    np.testing.assert_array_equal(kernel(x).reshape(2, 3), run_litert(model, [x])[0])
    assert run_litert(model, [x])[0].tolist() == expected


@pytest.mark.parametrize("out_type", ["int32", "int16", "int8"])
def test_cast_every_int8_value(out_type, compile_kernel):
    host, expected = _every_value(models.make("cast", seed=1, in_shape=(1, 256), out_type=out_type), compile_kernel)
    np.testing.assert_array_equal(host, expected)
    assert expected.dtype == np.dtype(out_type)


@pytest.mark.parametrize("out_type", ["int32", "int8"])
def test_cast_int16(out_type, compile_kernel):
    """int16 to int8 keeps the low byte (LiteRT's static_cast)."""
    x = (np.arange(512) * 128 - 32768).astype(np.int16).reshape(1, 512)
    model = models.make("cast", seed=1, dtype="int16", in_shape=(1, 512), out_type=out_type)
    kernel = compile_kernel(build_kernel(host_op(model)))
    expected = run_litert(model, [x])[0]
    np.testing.assert_array_equal(kernel(x).reshape(1, 512), expected)
    np.testing.assert_array_equal(expected, x.astype(out_type))


@pytest.mark.parametrize("params", [
    {}, dict(in_scale=0.1, in_zp=20), dict(in_scale=0.005), dict(in_shape=(3, 1000), in_scale=0.08),
    dict(in_shape=(1, 4, 4, 7), in_scale=0.5, in_zp=-100), dict(in_shape=(5, 1)), dict(in_scale=2.0),
])
def test_log_softmax_matches_litert(params, compile_kernel):
    assert_bit_exact(models.make("log_softmax", seed=8, **params), compile_kernel)


@pytest.mark.parametrize("in_scale", [0.004, 0.03, 0.2, 1.0, 7.5])
def test_log_softmax_rows_of_every_value(in_scale, compile_kernel):
    """Rows holding every int8 value, and rows of a few values far apart (most beyond diff_min), at scales from
    fine to coarse."""
    model = models.make("log_softmax", seed=0, in_shape=(4, 256), in_scale=in_scale)
    kernel = compile_kernel(build_kernel(host_op(model)))
    rng = np.random.default_rng(1)
    x = np.stack([EVERY_INT8[0], rng.permutation(EVERY_INT8[0]), np.repeat([-128, 0, 90, 127], 64).astype(np.int8),
                  np.full(256, 5, dtype=np.int8)])
    np.testing.assert_array_equal(kernel(x).reshape(4, 256), run_litert(model, [x])[0])


@pytest.mark.parametrize("params", [
    {}, dict(num_inputs=3, in_zp=50, in_scale=0.1), dict(num_inputs=5, in_zp=-100, in_scale=0.01, out_scale=0.03,
                                                         out_zp=10),
    dict(in_zp=0, in_shape=(3, 7)), dict(num_inputs=8, in_scale=0.004),
])
def test_add_n_matches_tflite_micro(params, compile_kernel):
    """TFLite Micro is ADD_N's reference (LiteRT refuses int8); its sum carries one extra −zero_point term."""
    model = models.make("add_n", seed=2, **params)
    kernel = compile_kernel(build_kernel(host_op(model)))
    for seed in range(3):
        inputs = random_inputs(model, seed)
        (expected,) = run_tflm(model, inputs)
        np.testing.assert_array_equal(kernel(*inputs).reshape(expected.shape), expected, err_msg=f"seed {seed}")


def test_add_n_extra_zero_point_term(compile_kernel):
    """Two inputs of zero point −3, scale 0.05 and the same output quantization: 0 + 0 (real 0.3) gives 6, not
    3 (TFLite Micro's sum starts from the offset of a zero input)."""
    model = models.make("add_n", seed=0, in_shape=(1, 4), in_scale=0.05, in_zp=-3, out_scale=0.05, out_zp=-3)
    x = np.zeros((1, 4), np.int8)
    assert run_tflm(model, [x, x])[0].tolist() == [[6, 6, 6, 6]]
    np.testing.assert_array_equal(compile_kernel(build_kernel(host_op(model)))(x, x).reshape(1, 4), [[6, 6, 6, 6]])


COMPARISONS = ["equal", "not_equal", "greater", "greater_equal", "less", "less_equal"]


@pytest.mark.parametrize("op", COMPARISONS)
@pytest.mark.parametrize("quant", [dict(), dict(in2_scale=0.03, in2_zp=5), dict(in_scale=0.0101, in2_scale=0.01,
                                                                            in_zp=127, in2_zp=-128)])
def test_comparison_every_pair_of_values(op, quant, compile_kernel):
    """Every int8 value against every other (a [256, 1] by [1, 256] broadcast), equal and unequal quantizations."""
    model = models.make(op, seed=0, in_shape=(256, 1), in2_shape=(1, 256), **quant)
    kernel = compile_kernel(build_kernel(host_op(model)))
    x, y = EVERY_INT8.reshape(256, 1), EVERY_INT8.reshape(1, 256)
    expected = run_litert(model, [x, y])[0]
    assert expected.dtype == np.bool_
    np.testing.assert_array_equal(kernel(x, y).reshape(256, 256).astype(bool), expected)


@pytest.mark.parametrize("op", ["greater", "less_equal"])
def test_comparison_with_a_constant(op, compile_kernel):
    assert_bit_exact(models.make(op, seed=3, constant_rhs=(8,), in2_scale=0.05, in2_zp=-10), compile_kernel)


def test_comparison_scale_of_one_or_more_is_refused():
    model = models.make("greater", seed=0, in_scale=1.5)
    with pytest.raises(UnsupportedHostOp, match=r"^greater: an operand scale of 1\.5 \(TFLite's kernel needs < 1\)$"):
        build_kernel(host_op(model))


def _quantize_from_int32(in_scale: float, out_dtype, out_scale: float) -> bytes:
    """QUANTIZE from int32 (zero points 0), as TFLite Micro's SEANet quantize0 model has it."""
    builder = ModelBuilder()
    shape = (1, 2, 160, 2)
    x = builder.add_tensor("input_0", shape, np.int32, quantization=Quantization((in_scale,), (0,)))
    y = builder.add_tensor("output_0", shape, out_dtype, quantization=Quantization((out_scale,), (0,)))
    builder.add_operator(tflite.BuiltinOperator.QUANTIZE, [x], [y])
    return builder.build([x], [y], ["input_0"], ["output_0"])


@pytest.mark.parametrize("out_dtype, out_scale", [(np.int16, 0.00092197146), (np.int8, 3e-5)])
def test_quantize_from_int32(out_dtype, out_scale):
    """Bit-exact with LiteRT over the whole int32 range (SEANet's scales; and into int8)."""
    model = _quantize_from_int32(1.4901161e-07, out_dtype, out_scale)
    module = ethosu_tvm.build(from_tflite(model), target="c")
    for seed in range(2):
        x = np.random.default_rng(seed).integers(-(1 << 31), 1 << 31, size=(1, 2, 160, 2), dtype=np.int32)
        x.flat[:2] = (-(1 << 31), (1 << 31) - 1)
        (got,) = module.run({"input_0": x}).values()
        np.testing.assert_array_equal(got, run_litert(model, [x])[0])


def test_quantize_from_int32_refuses_a_left_shift():
    with pytest.raises(UnsupportedHostOp, match="QUANTIZE: an int32 input needs zero point 0 and an input / output"
                                                 " scale ratio below 1"):
        ethosu_tvm.build(from_tflite(_quantize_from_int32(0.01, np.int16, 0.001)), target="c")
