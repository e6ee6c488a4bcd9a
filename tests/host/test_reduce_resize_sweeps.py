"""Hypothesis sweeps over MEAN, SUM, REDUCE_MAX/MIN axes and RESIZE sizes and flags: each generated model is
compiled (host only, and for the NPU target, where MEAN may run on the NPU) and the program's outputs equal the
reference exactly: LiteRT's reference kernels, or for SUM TFLite Micro (REF_KERNEL_WRONG)."""
import numpy as np
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

import ethosu_tvm
from ethosu_tvm.frontend.importer import from_tflite
from ethosu_tvm.testing import models
from ethosu_tvm.testing.models.net import Net
from ethosu_tvm.testing.reference import random_inputs, reference_runner

SWEEP = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SEEDS = range(3)
TARGETS = st.sampled_from(["c", "ethos-u -accelerator-config=ethos-u55-128,c"])
shapes = st.lists(st.integers(1, 6), min_size=1, max_size=4).map(tuple)
int8_zero_points = st.integers(-128, 127)


def _check(op: str, target: str, **params) -> None:
    try:
        model = models.make(op, seed=5, **params)
    except ValueError:  # a combination the factory (TFLite) cannot express
        reject()
    _compare(model, op, target)


def _int16_model(op: str, in_shape: tuple[int, ...], **params) -> bytes:
    """An int16 model of an op TFLite Micro has no int16 kernel for (so the factory's `make` refuses it): LiteRT
    alone is the reference."""
    net = Net(5, description=f"int16 {op}")
    net.output(getattr(net, op)(net.input(in_shape, "int16", None, None), **params))
    return net.build()


def _compare(model: bytes, op: str, target: str) -> None:
    compiled = ethosu_tvm.build(from_tflite(model), target)
    reference = reference_runner(op)
    for seed in SEEDS:
        inputs = random_inputs(model, seed)
        (expected,) = reference(model, inputs)
        (got,) = compiled.run(inputs).values()
        np.testing.assert_array_equal(got.reshape(expected.shape), expected, err_msg=f"seed {seed}")


@st.composite
def axes_of(draw):
    """A shape and a non-empty list of axes of it (negative ones and repeats included, as TFLite allows)."""
    shape = draw(shapes)
    axes = draw(st.lists(st.integers(-len(shape), len(shape) - 1), min_size=1, max_size=len(shape)))
    return shape, tuple(axes)


@SWEEP
@given(op=st.sampled_from(["mean", "sum"]), dtype=st.sampled_from(["int8", "int16"]), shape_axes=axes_of(),
       keep_dims=st.booleans(), in_scale=st.floats(1e-3, 1.0), out_scale=st.floats(1e-3, 2.0),
       in_zp=int8_zero_points, out_zp=int8_zero_points, target=TARGETS)
def test_mean_sum(op, dtype, shape_axes, keep_dims, in_scale, out_scale, in_zp, out_zp, target):
    (shape, axes), narrow = shape_axes, dtype == "int8"
    quant = dict(in_scale=in_scale, out_scale=out_scale, in_zp=in_zp, out_zp=out_zp) if narrow else dict(
        in_scale=in_scale / 256, out_scale=out_scale / 256)  # TFLite's int16 reductions take zero points 0
    _check(op, target, dtype=dtype, in_shape=shape, axis=axes, keep_dims=keep_dims, **quant)


@SWEEP
@given(op=st.sampled_from(["reduce_max", "reduce_min"]), shape_axes=axes_of(), keep_dims=st.booleans(),
       in_zp=int8_zero_points, target=TARGETS)
def test_reduce_max_min(op, shape_axes, keep_dims, in_zp, target):
    shape, axes = shape_axes
    _check(op, target, in_shape=shape, axis=axes, keep_dims=keep_dims, in_zp=in_zp)


@SWEEP
@given(op=st.sampled_from(["reduce_max", "reduce_min"]), shape_axes=axes_of(), keep_dims=st.booleans())
def test_reduce_max_min_int16(op, shape_axes, keep_dims):
    shape, axes = shape_axes
    _compare(_int16_model(op, shape, axis=axes, keep_dims=keep_dims), op, "c")


sizes = st.tuples(st.integers(1, 13), st.integers(1, 13))
in_sizes = st.tuples(st.integers(1, 7), st.integers(1, 7))
flag_pairs = st.sampled_from([(False, False), (True, False), (False, True)])  # (align_corners, half_pixel_centers)


@SWEEP
@given(op=st.sampled_from(["resize_nearest_neighbor", "resize_bilinear"]), dtype=st.sampled_from(["int8", "int16"]),
       in_size=in_sizes, size=sizes, flags=flag_pairs, depth=st.integers(1, 3), target=TARGETS)
def test_resize(op, dtype, in_size, size, flags, depth, target):
    if op == "resize_bilinear" and dtype == "int16":
        model = _int16_model(op, (1, *in_size, depth), size=size, align_corners=flags[0],
                             half_pixel_centers=flags[1])
        _compare(model, op, target)
    else:
        _check(op, target, dtype=dtype, in_shape=(1, *in_size, depth), size=size, align_corners=flags[0],
               half_pixel_centers=flags[1])
