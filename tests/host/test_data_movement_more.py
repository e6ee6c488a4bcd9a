"""Hypothesis sweeps over the remaining data-movement operators (most rewritten by the importer into slices,
transposes, pads and concatenations): each generated model, compiled for the host (`--target=c`) and run as C,
returns LiteRT's outputs exactly: DEPTH_TO_SPACE and SPACE_TO_DEPTH block sizes, MIRROR_PAD modes and widths, PADV2
widths and values, REVERSE_V2 axes, GATHER axes and indices, BROADCAST_TO shapes, SPACE_TO_BATCH_ND and
BATCH_TO_SPACE_ND blocks, paddings and crops."""
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_data_movement_sweeps import SWEEP, _check, dtypes, shapes

import ethosu_tvm
from ethosu_tvm.frontend.errors import UnsupportedModelError
from ethosu_tvm.testing import models
from ethosu_tvm.testing.reference import random_inputs, run_litert

blocks = st.integers(2, 4)


@st.composite
def paddings(draw, shape, limit=lambda size: 4):
    return tuple((draw(st.integers(0, limit(d))), draw(st.integers(0, limit(d)))) for d in shape)


@SWEEP
@given(block=blocks, n=st.integers(1, 2), h=st.integers(1, 3), w=st.integers(1, 3), c=st.integers(1, 3))
def test_depth_to_space(block, n, h, w, c):
    _check("depth_to_space", in_shape=(n, h, w, c * block * block), block_size=block)


@SWEEP
@given(block=blocks, n=st.integers(1, 2), h=st.integers(1, 3), w=st.integers(1, 3), c=st.integers(1, 3))
def test_space_to_depth(block, n, h, w, c):
    _check("space_to_depth", in_shape=(n, h * block, w * block, c), block_size=block)


@SWEEP
@given(mode=st.sampled_from(["REFLECT", "SYMMETRIC"]), shape=shapes, data=st.data())
def test_mirror_pad(mode, shape, data):
    edge = mode == "REFLECT"
    pads = data.draw(paddings(shape, lambda size: size - edge))
    _check("mirror_pad", in_shape=shape, paddings=pads, mode=mode)


@SWEEP
@given(dtype=dtypes, shape=shapes, value=st.integers(-128, 127), data=st.data())
def test_padv2(dtype, shape, value, data):
    _check("padv2", dtype=dtype, in_shape=shape, paddings=data.draw(paddings(shape)), value=value)


@SWEEP
@given(dtype=dtypes, shape=shapes, data=st.data())
def test_reverse_v2(dtype, shape, data):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    _check("reverse_v2", dtype=dtype, in_shape=shape, axis=(axis,))


@SWEEP
@given(shape=shapes, data=st.data())
def test_gather(shape, data):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    index = st.integers(0, shape[axis] - 1)
    indices = data.draw(st.lists(index, min_size=1, max_size=5) | st.lists(st.lists(index, min_size=2, max_size=2),
                                                                              min_size=1, max_size=3))
    _check("gather", in_shape=shape, indices=indices, axis=axis)


@SWEEP
@given(dtype=dtypes, target=shapes, data=st.data())
def test_broadcast_to(dtype, target, data):
    rank = data.draw(st.integers(1, len(target)))
    shape = tuple(data.draw(st.sampled_from([1, d])) for d in target[len(target) - rank:])
    _check("broadcast_to", dtype=dtype, in_shape=shape, shape=target)


@SWEEP
@given(block=st.tuples(blocks, blocks), n=st.integers(1, 2), c=st.integers(1, 3), data=st.data())
def test_space_to_batch_nd(block, n, c, data):
    pads = [(data.draw(st.integers(0, 3)), data.draw(st.integers(0, 3))) for _ in block]
    size = [b * data.draw(st.integers(1, 3)) - sum(p) for b, p in zip(block, pads)]
    _check("space_to_batch_nd", in_shape=(n, *size, c), block_shape=block, paddings=pads)


@SWEEP
@given(block=st.tuples(blocks, blocks), n=st.integers(1, 2), h=st.integers(1, 3), w=st.integers(1, 3),
       c=st.integers(1, 3), data=st.data())
def test_batch_to_space_nd(block, n, h, w, c, data):
    crops = [(data.draw(st.integers(0, b)), data.draw(st.integers(0, b))) for b in block]
    _check("batch_to_space_nd", in_shape=(n * block[0] * block[1], h, w, c), block_shape=block, crops=crops)


def test_gather_with_batch_dims_is_refused():
    model = models.make("gather", indices=[[1, 0, 4]], batch_dims=1)
    assert run_litert(model, random_inputs(model, 0))[0].shape == (1, 8, 8, 3)  # a model LiteRT runs
    with pytest.raises(UnsupportedModelError, match=r"^the TFLite frontend cannot convert operator #0 GATHER: "
                                                    r"batch_dims 1 is not supported$"):
        ethosu_tvm.from_tflite(model)
