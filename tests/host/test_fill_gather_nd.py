"""FILL and GATHER_ND (int8, int16) on the host: bit-exact with LiteRT over shapes, index depths and constant or
run-time indices; indices LiteRT fails on are refused when constant. The importer slices and concatenates GATHER_ND at
a few constant index tuples (so the NPU can copy them) and keeps more as one gather."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st
from host_harness import assert_bit_exact, assert_plain_c
from host_tflite_ops import host_op

from ethosu_tvm.frontend.errors import UnsupportedModelError
from ethosu_tvm.frontend.importer import from_tflite
from ethosu_tvm.frontend.indexing import GATHER_SLICES
from ethosu_tvm.host import UnsupportedHostOp, build_kernel, fuse_host_ops, host_functions, host_spec
from ethosu_tvm.testing import models
from ethosu_tvm.testing.reference import random_inputs, run_litert

SWEEP = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SEEDS = range(3)


@pytest.mark.parametrize("params", [{}, dict(dtype="int16"), dict(shape=(7,)), dict(shape=(1, 1, 1, 1, 5),
                                                                                  in_zp=100)])
def test_fill(params, compile_kernel):
    assert_bit_exact(models.make("fill", seed=2, **params), compile_kernel, SEEDS)


@SWEEP
@given(shape=st.lists(st.integers(1, 6), min_size=1, max_size=5).map(tuple), dtype=st.sampled_from(["int8", "int16"]))
def test_fill_sweep(shape, dtype, compile_kernel):
    assert_bit_exact(models.make("fill", seed=len(shape), dtype=dtype, shape=shape), compile_kernel, SEEDS)


@SWEEP
@given(params_shape=st.lists(st.integers(1, 5), min_size=1, max_size=4).map(tuple),
       lead=st.lists(st.integers(1, 3), min_size=0, max_size=2).map(tuple), depth=st.integers(1, 4),
       dtype=st.sampled_from(["int8", "int16"]), seed=st.integers(0, 1000))
def test_gather_nd_constant_indices_sweep(params_shape, lead, depth, dtype, seed, compile_kernel):
    if depth > len(params_shape):
        reject()
    indices = np.random.default_rng(seed).integers(0, np.array(params_shape[:depth]), size=lead + (depth,))
    assert_bit_exact(models.make("gather_nd", seed=seed, dtype=dtype, in_shape=params_shape, indices=indices),
                     compile_kernel, SEEDS)


@pytest.mark.parametrize("params", [
    {},
    dict(dtype="int16"),
    dict(in_shape=(5, 4), indices=((4, 3), (0, 0), (2, 1))),  # single elements
    dict(in_shape=(5, 4), indices=(((1,), (3,)), ((0,), (4,)))),  # rows, a 3-D index array
    dict(dtype="int16", in_shape=(2, 3, 4, 5), indices=((1, 2, 3, 4),)),
])
def test_gather_nd_constant_indices(params, compile_kernel):
    assert_bit_exact(models.make("gather_nd", seed=3, **params), compile_kernel, SEEDS)


@SWEEP
@given(params_shape=st.lists(st.integers(1, 5), min_size=1, max_size=4).map(tuple),
       lead=st.lists(st.integers(1, 4), min_size=0, max_size=2).map(tuple), depth=st.integers(1, 4),
       dtype=st.sampled_from(["int8", "int16"]))
def test_gather_nd_runtime_indices_sweep(params_shape, lead, depth, dtype, compile_kernel):
    """Random indices, each inside its axis (LiteRT fails the invocation on any other)."""
    if depth > len(params_shape):
        reject()
    model = models.make("gather_nd", seed=5, dtype=dtype, in_shape=params_shape, runtime_indices=True,
                        indices=np.zeros(lead + (depth,), np.int32))
    kernel = build_kernel(host_op(model))
    assert_plain_c(kernel)
    run = compile_kernel(kernel)
    rng = np.random.default_rng(len(params_shape) * 7 + depth)
    for seed in SEEDS:
        indices = rng.integers(0, np.array(params_shape[:depth]), size=lead + (depth,)).astype(np.int32)
        params = random_inputs(model, seed)[0]
        (expected,) = run_litert(model, [params, indices])
        np.testing.assert_array_equal(run(indices, params).reshape(expected.shape), expected, err_msg=f"seed {seed}")


@pytest.mark.parametrize("indices_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("constant_params", [False, True])
def test_gather_nd_runtime_indices_of_both_dtypes(indices_dtype, constant_params, compile_kernel):
    """int64 indices (LiteRT takes them; the factory writes int32), and constant params looked up by run-time
    indices (an embedding table), through the importer and the host composite's spec."""
    import tflite

    from ethosu_tvm.testing.tflite_builder import ModelBuilder, Quantization

    rng = np.random.default_rng(4)
    builder = ModelBuilder()
    quantization = Quantization((0.05,), (7,))
    table = rng.integers(-128, 127, size=(6, 5, 3), endpoint=True, dtype=np.int8)
    params = builder.add_tensor("params", table.shape, np.int8, table if constant_params else None, quantization)
    indices = builder.add_tensor("indices", (4, 2), indices_dtype)
    y = builder.add_tensor("y", (4, 3), np.int8, quantization=quantization)
    builder.add_operator(tflite.BuiltinOperator.GATHER_ND, [params, indices], [y])
    inputs = [indices] if constant_params else [params, indices]
    model = builder.build(inputs, [y], [f"input_{i}" for i in range(len(inputs))], ["output_0"])
    (function,) = [func for _, func in host_functions(fuse_host_ops(from_tflite(model)))]
    op = host_spec(function)
    assert (op.indices_dtype, op.params_values is not None) == (np.dtype(indices_dtype).name, constant_params)
    run = compile_kernel(build_kernel(op))
    for _ in range(3):
        index = rng.integers(0, (6, 5), size=(4, 2)).astype(indices_dtype)
        model_inputs = [index] if constant_params else [table, index]
        (expected,) = run_litert(model, model_inputs)
        np.testing.assert_array_equal(run(*model_inputs[::-1]).reshape(expected.shape), expected)


def test_gather_nd_constant_indices_litert_fails_on_are_refused():
    model = models.make("gather_nd", in_shape=(3, 4), indices=((0, 0), (0, 0)))
    op = host_op(model)
    op = type(op)(op.params_shape, op.indices_shape, op.dtype, op.indices_dtype,
                  indices_values=np.array([[1, 1], [2, 4]], np.int64))
    with pytest.raises(UnsupportedHostOp, match=r"^gather_nd: index \[\[2, 4\]\] is outside the params \(3, 4\) "
                                                r"\(LiteRT fails on it\)$"):
        build_kernel(op)


def test_fill_of_a_constant_is_refused():
    from ethosu_tvm.testing.tflite_builder import ModelBuilder, Quantization
    import tflite

    builder = ModelBuilder()
    x = builder.add_tensor("x", (2,), np.int8, quantization=Quantization((0.1,), (0,)))
    dims = builder.add_tensor("dims", (1,), np.int32, np.array([2], np.int32))
    value = builder.add_tensor("value", (), np.int8, np.array(3, np.int8), Quantization((0.1,), (0,)))
    filled = builder.add_tensor("filled", (2,), np.int8, quantization=Quantization((0.1,), (0,)))
    y = builder.add_tensor("y", (2,), np.int8, quantization=Quantization((0.1,), (0,)))
    builder.add_operator(tflite.BuiltinOperator.FILL, [dims, value], [filled])
    builder.add_operator(tflite.BuiltinOperator.MAXIMUM, [x, filled], [y])
    model = builder.build([x], [y], ["input_0"], ["output_0"])
    with pytest.raises(UnsupportedModelError, match=r"^the TFLite frontend cannot convert operator #0 FILL: dims "
                                                    r"computed at run time or a constant value"):
        from_tflite(model)


def test_fill_with_another_output_quantization_copies_the_integer(compile_kernel):
    """LiteRT refuses a value quantized unlike the output; TFLite Micro copies the integer, as the kernel does."""
    import tflite

    from ethosu_tvm.testing.reference import run_tflm
    from ethosu_tvm.testing.tflite_builder import ModelBuilder, Quantization

    builder = ModelBuilder()
    dims = builder.add_tensor("dims", (2,), np.int32, np.array([3, 5], np.int32))
    value = builder.add_tensor("value", (), np.int8, quantization=Quantization((0.2,), (1,)))
    y = builder.add_tensor("y", (3, 5), np.int8, quantization=Quantization((0.1,), (-3,)))
    builder.add_operator(tflite.BuiltinOperator.FILL, [dims, value], [y])
    model = builder.build([value], [y], ["input_0"], ["output_0"])
    x = np.array(-77, np.int8)
    with pytest.raises(RuntimeError, match=r"output->params\.scale != value->params\.scale"):
        run_litert(model, [x])
    expected = run_tflm(model, [x])[0]
    assert np.all(expected == -77)
    np.testing.assert_array_equal(compile_kernel(build_kernel(host_op(model)))(x).reshape(3, 5), expected)


@pytest.mark.parametrize("target", ["c", "ethos-u -accelerator-config=ethos-u55-128,c"])
@pytest.mark.parametrize("count", [3, GATHER_SLICES, GATHER_SLICES + 1])
def test_gather_nd_constant_indices_through_the_importer(count, target):
    """Up to GATHER_SLICES index tuples become slices and a concatenation (on the NPU with an NPU target), more one
    host gather; either way LiteRT's outputs."""
    import ethosu_tvm

    indices = [(i % 9, (i * 5) % 8) for i in range(count)]
    model = models.make("gather_nd", seed=count, in_shape=(9, 8, 3), indices=indices)
    module = ethosu_tvm.build(from_tflite(model), target=target)
    on_npu = target != "c" and count <= GATHER_SLICES
    assert module.offload.counts() == {"ethos-u" if on_npu else "host": 1}
    for seed in SEEDS:
        inputs = random_inputs(model, seed)
        np.testing.assert_array_equal(list(module.run(inputs).values())[0], run_litert(model, inputs)[0])


def test_gather_nd_few_constant_indices_out_of_range_are_refused_at_import():
    """LiteRT fails the invocation on an index outside its axis; the importer, which slices a few constant ones,
    refuses such indices naming them."""
    import tflite

    from ethosu_tvm.testing.tflite_builder import ModelBuilder, Quantization

    builder = ModelBuilder()
    quantization = Quantization((0.1,), (0,))
    params = builder.add_tensor("params", (3, 4), np.int8, quantization=quantization)
    indices = builder.add_tensor("indices", (2, 2), np.int32, np.array([[1, 1], [2, 4]], np.int32))
    y = builder.add_tensor("y", (2,), np.int8, quantization=quantization)
    builder.add_operator(tflite.BuiltinOperator.GATHER_ND, [params, indices], [y])
    model = builder.build([params], [y], ["input_0"], ["output_0"])
    with pytest.raises(UnsupportedModelError, match=r"GATHER_ND: indices \[\[1, 1\], \[2, 4\]\] are out of range for "
                                                    r"\[3, 4\]$"):
        from_tflite(model)
