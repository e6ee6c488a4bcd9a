"""Hypothesis sweeps over the data-movement operators: each generated model, compiled for the host (`--target=c`)
and run as C, returns LiteRT's outputs exactly: STRIDED_SLICE masks, offsets and negative strides, SLICE, TRANSPOSE
permutations, SPLIT, SPLIT_V, UNPACK and PACK axes and counts, int8 and int16."""
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

import ethosu_tvm
from ethosu_tvm.frontend.errors import UnsupportedModelError
from ethosu_tvm.frontend.tflite_file import output_infos
from ethosu_tvm.testing import models
from ethosu_tvm.testing.reference import random_inputs, run_litert, run_tflm

SWEEP = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SEEDS = range(2)
dtypes = st.sampled_from(["int8", "int16"])
shapes = st.lists(st.integers(1, 5), min_size=1, max_size=5).map(tuple)


def _check(op: str, **params) -> None:
    """Compile the factory model for the host; its outputs equal LiteRT's for every seed."""
    try:
        model = models.make(op, seed=7, **params)
    except ValueError:  # a combination TFLite cannot express, e.g. an empty slice
        reject()
    expected = {seed: run_litert(model, random_inputs(model, seed)) for seed in SEEDS}
    infos = output_infos(model)
    if any(want.shape != info.shape for want, info in zip(expected[0], infos)):
        reject()  # LiteRT resizes the output: the model's declared shape is not TFLite's (e.g. with offset)
    module = ethosu_tvm.build(ethosu_tvm.from_tflite(model), target="c")
    for seed in SEEDS:
        outputs = module.run(random_inputs(model, seed))
        for info, want in zip(infos, expected[seed]):
            np.testing.assert_array_equal(outputs[info.name].reshape(want.shape), want, err_msg=f"seed {seed}")


@st.composite
def strided_slices(draw):
    """A shape and STRIDED_SLICE operands: indices past either end, negative strides and every mask (one
    ellipsis bit at most; shrunk axes keep a positive stride, with which TFLite's kernel copies one element)."""
    shape = draw(shapes)
    count = draw(st.integers(1, len(shape)))
    indices = st.lists(st.integers(-7, 7), min_size=count, max_size=count)
    strides = draw(st.lists(st.sampled_from([-3, -2, -1, 1, 2, 3]), min_size=count, max_size=count))
    masks = st.integers(0, (1 << count) - 1)
    ellipsis = draw(st.sampled_from([0] + [1 << i for i in range(count)]))
    shrink = draw(masks) & sum(1 << i for i, s in enumerate(strides) if s > 0)
    return dict(in_shape=shape, begin=tuple(draw(indices)), end=tuple(draw(indices)), strides=tuple(strides),
                begin_mask=draw(masks), end_mask=draw(masks), ellipsis_mask=ellipsis,
                new_axis_mask=draw(masks) & ~ellipsis, shrink_axis_mask=shrink & ~ellipsis)


@st.composite
def offset_slices(draw):
    """STRIDED_SLICE with `offset` (end counts from begin), kept inside the input: LiteRT sizes the output from
    `end` alone but copies from the clamped range, and overruns the output when they differ."""
    shape = draw(shapes)
    begin, end, strides = [], [], []
    for size in shape:
        start = draw(st.integers(0, size - 1))
        stride = draw(st.sampled_from([-2, -1, 1, 2] if start else [1, 2]))
        begin.append(start)
        strides.append(stride)
        end.append(draw(st.integers(1, size - start)) if stride > 0 else -draw(st.integers(1, start)))
    masks = st.integers(0, (1 << len(shape)) - 1)
    return dict(in_shape=shape, begin=tuple(begin), end=tuple(end), strides=tuple(strides),
                shrink_axis_mask=draw(masks) & sum(1 << i for i, s in enumerate(strides) if s > 0), offset=True)


@SWEEP
@given(dtype=dtypes, operands=strided_slices())
def test_strided_slice(dtype, operands):
    _check("strided_slice", dtype=dtype, **operands)


@SWEEP
@given(dtype=dtypes, operands=offset_slices())
def test_strided_slice_offset(dtype, operands):
    _check("strided_slice", dtype=dtype, **operands)


@SWEEP
@given(dtype=dtypes, shape=shapes, data=st.data())
def test_slice(dtype, shape, data):
    begin = [data.draw(st.integers(0, d - 1)) for d in shape]
    size = [data.draw(st.sampled_from([-1, *range(1, d - b + 1)])) for d, b in zip(shape, begin)]
    _check("slice", dtype=dtype, in_shape=shape, begin=tuple(begin), size=tuple(size))


@SWEEP
@given(dtype=dtypes, shape=st.lists(st.integers(1, 4), min_size=2, max_size=6).map(tuple), data=st.data())
def test_transpose(dtype, shape, data):
    perm = data.draw(st.permutations(range(len(shape))))
    _check("transpose", dtype=dtype, in_shape=shape, perm=tuple(perm))


@SWEEP
@given(dtype=dtypes, shape=shapes, count=st.integers(1, 4), data=st.data())
def test_split(dtype, shape, count, data):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    _check("split", dtype=dtype, in_shape=shape[:axis] + (shape[axis] * count,) + shape[axis:][1:],
           num_splits=count, axis=axis)


@SWEEP
@given(dtype=dtypes, shape=shapes, sizes=st.lists(st.integers(1, 3), min_size=1, max_size=4), data=st.data())
def test_split_v(dtype, shape, sizes, data):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    unknown = data.draw(st.sampled_from([None, *range(len(sizes))]))
    size_splits = [-1 if i == unknown else s for i, s in enumerate(sizes)]
    _check("split_v", dtype=dtype, in_shape=shape[:axis] + (sum(sizes),) + shape[axis:][1:],
           size_splits=tuple(size_splits), axis=axis)


@SWEEP
@given(dtype=dtypes, shape=shapes, data=st.data())
def test_unpack(dtype, shape, data):
    _check("unpack", dtype=dtype, in_shape=shape, axis=data.draw(st.integers(-len(shape), len(shape) - 1)))


@SWEEP
@given(dtype=dtypes, shape=st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple), count=st.integers(1, 4),
       data=st.data())
def test_pack(dtype, shape, count, data):
    axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
    _check("pack", dtype=dtype, in_shape=shape, num_inputs=count, axis=axis)


def test_shrinking_backward_is_refused():
    """A shrunk axis with a negative stride: TFLite's kernel copies nothing (its output is whatever the buffer held),
    so the import refuses it, naming the operator."""
    model = models.make("strided_slice", begin=(0, 2, 0, 0), end=(1, 3, 8, 4), strides=(1, -1, 1, 1),
                        shrink_axis_mask=2)
    message = ("the TFLite frontend cannot convert operator #0 STRIDED_SLICE: axis 1 shrinks to index 2 of 8 with "
               "stride -1: TFLite's kernel copies no element")
    with pytest.raises(UnsupportedModelError, match=f"^{re.escape(message)}$"):
        ethosu_tvm.from_tflite(model)


@pytest.mark.parametrize("dtype", ["int8", "int16"])
@pytest.mark.parametrize("op", ["transpose", "slice", "strided_slice", "split", "split_v"])
def test_other_output_quantization_keeps_the_integers(op, dtype):
    """LiteRT's (and TFLite Micro's) kernels copy the integers whatever the output's quantization: so do ours."""
    quant = dict(out_scale=0.5) | (dict(out_zp=17) if dtype == "int8" else {})
    params = dict(perm=(3, 1, 0, 2)) if op == "transpose" else {}
    _check(op, dtype=dtype, **quant, **params)
    model = models.make(op, dtype=dtype, **quant, **params)
    if op == "transpose":  # the integers themselves, not their real values
        (x,) = random_inputs(model, 0)
        np.testing.assert_array_equal(run_litert(model, [x])[0], x.transpose(3, 1, 0, 2))


@pytest.mark.parametrize("dtype", ["int8", "int16"])
@pytest.mark.parametrize("op", ["pack", "unpack"])
def test_other_output_quantization_follows_tflite_micro(op, dtype):
    """LiteRT refuses PACK and UNPACK whose output is quantized unlike the input; TFLite Micro copies the integers
    and is the reference: the compiled model returns its outputs exactly."""
    model = models.make(op, dtype=dtype, out_scale=0.5, **(dict(out_zp=17) if dtype == "int8" else {}))
    inputs = random_inputs(model, 0)
    with pytest.raises(RuntimeError, match="zero_point|scale"):
        run_litert(model, inputs)
    outputs = ethosu_tvm.build(ethosu_tvm.from_tflite(model), target="c").run(inputs)
    for info, want in zip(output_infos(model), run_tflm(model, inputs)):
        np.testing.assert_array_equal(outputs[info.name].reshape(want.shape), want)


@pytest.mark.parametrize("op,params", [
    ("unpack", dict(in_shape=(2, 1, 4, 4, 8))),
    ("strided_slice", dict(shrink_axis_mask=1, new_axis_mask=4, begin=(0, 7, 1, 0), end=(1, 0, 7, 4),
                           strides=(1, -2, 1, 1))),
    ("strided_slice", dict(dtype="int16", shrink_axis_mask=9, begin=(0, 7, 1, 0), end=(1, 0, 7, 4),
                           strides=(1, -2, 1, 1))),
])
def test_reshaped_slices_are_one_host_kernel(op, params):
    """Shrunk or new axes reshape the slice: where the NPU refuses the slice (a 5-D input, a backward stride), the
    slice's host kernel writes the reshaped output itself, with no NPU launch for the reshape, and equals LiteRT."""
    model = models.make(op, **params)
    module = ethosu_tvm.build(ethosu_tvm.from_tflite(model), target="ethos-u -accelerator-config=ethos-u55-128,c")
    steps = module.program.steps
    assert [step.target for step in steps] == ["c"] * len(output_infos(model))
    assert {step.kernel.op for step in steps} == {"strided_slice"}
    inputs = random_inputs(model, 0)
    for info, want in zip(output_infos(model), run_litert(model, inputs)):
        np.testing.assert_array_equal(module.run(inputs)[info.name].reshape(want.shape), want)
