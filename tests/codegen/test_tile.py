"""TILE (int8, int16): the importer concatenates the input with itself along each tiled axis, so the NPU copies it
box by box (Vela 5.2 likewise splits TILE into one tiled axis at a time); a tiled batch axis, which a concatenation
on the NPU cannot take, stays on the host, and `--target=c` builds run it on the host whole. Every result equals
LiteRT's (TFLite Micro registers no TILE kernel), which copies the integers whatever the quantizations."""
import numpy as np
import pytest
import tflite
from hypothesis import given, settings
from hypothesis import strategies as st

import ethosu_tvm
from ethosu_tvm.compiled_model import CompiledModel
from ethosu_tvm.frontend.errors import UnsupportedModelError
from ethosu_tvm.testing import models
from ethosu_tvm.testing.models import Net
from ethosu_tvm.testing.reference import output_infos, random_inputs, run_litert
from ethosu_tvm.testing.tflite_builder import ModelBuilder, Quantization

from sim_support import ACCELERATORS, assert_model_exact

CASES = {
    "default": {},
    "int16": dict(dtype="int16", multiples=(1, 3, 1, 2)),
    "every-axis": dict(in_shape=(1, 2, 3, 5), multiples=(1, 3, 2, 4)),
    "untiled": dict(multiples=(1, 1, 1, 1)),
    "1-D": dict(in_shape=(5,), multiples=(4,)),
    "2-D": dict(in_shape=(3, 5), multiples=(2, 3)),
    "3-D": dict(in_shape=(2, 3, 4), multiples=(3, 1, 2), dtype="int16"),
}


@pytest.mark.parametrize("accelerator", ACCELERATORS)
@pytest.mark.parametrize("case", CASES)
def test_tile_on_the_npu(case, accelerator):
    assert_model_exact(models.make("tile", 3, **CASES[case]), accelerator)


@st.composite
def tiles(draw):
    """A shape of rank 1-4 and its multiples; a 4-D shape keeps batch 1, untiled (the NPU's concatenations)."""
    rank = draw(st.integers(1, 4))
    shape = [draw(st.integers(1, 5)) for _ in range(rank)]
    multiples = [draw(st.integers(1, 4)) for _ in range(rank)]
    if rank == 4:
        shape[0] = multiples[0] = 1
    return dict(in_shape=tuple(shape), multiples=tuple(multiples))


@settings(max_examples=25, deadline=None)
@given(params=tiles(), dtype=st.sampled_from(["int8", "int16"]), accelerator=st.sampled_from(ACCELERATORS),
       seed=st.integers(0, 1000))
def test_tile_sweep_on_the_npu(params, dtype, accelerator, seed):
    assert_model_exact(models.make("tile", seed, dtype=dtype, **params), accelerator)


def _assert_runs_exact(model: bytes, target: str) -> CompiledModel:
    """The model built for `target` and run as C returns LiteRT's outputs for two seeds."""
    compiled = ethosu_tvm.build(ethosu_tvm.from_tflite(model), target=target)
    for seed in (0, 1):
        inputs = random_inputs(model, seed)
        got = compiled.run(inputs)
        for info, want in zip(output_infos(model), run_litert(model, inputs)):
            np.testing.assert_array_equal(got[info.name], want, err_msg=f"seed {seed}")
    return compiled


@settings(max_examples=10, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=4), dtype=st.sampled_from(["int8", "int16"]),
       data=st.data())
def test_tile_sweep_on_the_host(shape, dtype, data):
    """`--target=c`: the concatenations are host kernels, for every axis, batch included."""
    multiples = tuple(data.draw(st.integers(1, 3)) for _ in shape)
    _assert_runs_exact(models.make("tile", 5, dtype=dtype, in_shape=tuple(shape), multiples=multiples), "c")


def test_tiled_batch_stays_on_the_host():
    model = models.make("tile", 2, in_shape=(2, 3, 2, 4), multiples=(2, 1, 2, 1))
    compiled = _assert_runs_exact(model, "ethos-u -accelerator-config=ethos-u55-128,c")
    assert [(op.op, op.target) for op in compiled.offload.ops] == [("TILE", "host")]


def test_tile_in_a_network():
    """A convolution, its output tiled and added to a second input: one NPU launch, built and run as C."""
    net = Net(4)
    x, y = net.input((1, 4, 4, 3)), net.input((1, 8, 4, 6))
    net.output(net.add(net.tile(net.conv2d(x, out_channels=3), multiples=(1, 2, 1, 2)), y))
    compiled = _assert_runs_exact(net.build(), "ethos-u -accelerator-config=ethos-u55-64,c")
    assert compiled.offload.counts() == {"ethos-u": 3} and len(compiled.program.steps) == 1


def _tile_requantized() -> bytes:
    """TILE whose output quantization is not its input's (LiteRT copies the integers all the same), with int64
    multiples (TFLite's other multiples type)."""
    builder = ModelBuilder()
    x = builder.add_tensor("x", (1, 3, 2, 4), np.int8, quantization=Quantization((0.05,), (3,)))
    y = builder.add_tensor("y", (1, 6, 2, 8), np.int8, quantization=Quantization((0.1,), (-7,)))
    multiples = builder.add_tensor("multiples", (4,), np.int64, np.array([1, 2, 1, 2], np.int64))
    builder.add_operator(tflite.BuiltinOperator.TILE, [x, multiples], [y], "TileOptions")
    return builder.build([x], [y], ["x"], ["y"])


@pytest.mark.parametrize("target", ["c", "ethos-u -accelerator-config=ethos-u55-256,c"])
def test_tile_copies_the_integers(target):
    model = _tile_requantized()
    (x,) = random_inputs(model, 0)
    assert np.array_equal(run_litert(model, [x])[0], np.tile(x, (1, 2, 1, 2)))
    _assert_runs_exact(model, target)


def test_multiples_computed_at_run_time_are_refused():
    model = models.make("tile", 0, runtime_multiples=True)
    x, _ = random_inputs(model, 0)
    assert run_litert(model, [x, np.array([1, 2, 3, 1], np.int32)])[0].shape == (1, 8, 9, 4)  # LiteRT runs it
    with pytest.raises(UnsupportedModelError, match=r"^the TFLite frontend cannot convert operator #0 TILE: multiples "
                                                    r"computed at run time \(only constant multiples are supported\)$"):
        ethosu_tvm.from_tflite(model)


def test_unquantized_tile_is_refused():
    builder = ModelBuilder()
    x, y = builder.add_tensor("x", (1, 2, 3), np.int32), builder.add_tensor("y", (1, 4, 3), np.int32)
    multiples = builder.add_tensor("multiples", (3,), np.int32, np.array([1, 2, 1], np.int32))
    builder.add_operator(tflite.BuiltinOperator.TILE, [x, multiples], [y], "TileOptions")
    with pytest.raises(UnsupportedModelError, match=r"^the TFLite frontend cannot convert operator #0 TILE: an "
                                                    r"unquantized int32 tensor \(only quantized int8 and int16 ones "
                                                    r"are supported\)$"):
        ethosu_tvm.from_tflite(builder.build([x], [y], ["x"], ["y"]))
