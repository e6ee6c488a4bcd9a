"""Hypothesis sweeps over shapes and quantization: every generated model's kernel is bit-exact with LiteRT."""
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st
from host_harness import assert_bit_exact

from ethosu_tvm.testing import models

SWEEP = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SEEDS = range(3)

scales = st.floats(1e-3, 2.0)
int8_zero_points = st.integers(-128, 127)
spatial = st.integers(1, 9)


def _check(op: str, compile_kernel, **params) -> None:
    try:
        model = models.make(op, seed=11, **params)
    except ValueError:  # a combination the factory (TFLite) cannot express, e.g. a kernel larger than the input
        reject()
    assert_bit_exact(model, compile_kernel, SEEDS)


@SWEEP
@given(rows=st.integers(1, 4), depth=st.integers(1, 300), in_scale=scales, in_zp=int8_zero_points,
       beta=st.floats(0.05, 4.0))
def test_softmax(rows, depth, in_scale, in_zp, beta, compile_kernel):
    _check("softmax", compile_kernel, in_shape=(rows, depth), in_scale=in_scale, in_zp=in_zp, beta=beta)


@SWEEP
@given(rows=st.integers(1, 4), depth=st.integers(1, 300), in_scale=st.floats(1e-5, 0.05), beta=st.floats(0.05, 4.0))
def test_softmax_int16(rows, depth, in_scale, beta, compile_kernel):
    _check("softmax", compile_kernel, dtype="int16", in_shape=(rows, depth), in_scale=in_scale, beta=beta)


@SWEEP
@given(op=st.sampled_from(["logistic", "tanh"]), in_scale=st.floats(1e-3, 0.5), in_zp=int8_zero_points)
def test_logistic_tanh(op, in_scale, in_zp, compile_kernel):
    _check(op, compile_kernel, in_shape=(2, 128), in_scale=in_scale, in_zp=in_zp)


@SWEEP
@given(op=st.sampled_from(["logistic", "tanh"]), in_scale=st.floats(1e-5, 0.05))
def test_logistic_tanh_int16(op, in_scale, compile_kernel):
    _check(op, compile_kernel, dtype="int16", in_shape=(4, 256), in_scale=in_scale)


@SWEEP
@given(dtype=st.sampled_from(["int8", "int16"]), in_scale=scales, out_scale=scales, in_zp=int8_zero_points,
       out_zp=int8_zero_points)
def test_quantize(dtype, in_scale, out_scale, in_zp, out_zp, compile_kernel):
    zero_points = dict(in_zp=in_zp, out_zp=out_zp) if dtype == "int8" else {}
    _check("quantize", compile_kernel, dtype=dtype, in_shape=(1, 300), in_scale=in_scale, out_scale=out_scale,
           **zero_points)


@SWEEP
@given(types=st.sampled_from([("uint8", "int8"), ("int8", "uint8")]), in_scale=scales, out_scale=scales,
       in_zp=st.integers(0, 255), out_zp=st.integers(0, 255), shift=st.booleans())
def test_quantize_uint8(types, in_scale, out_scale, in_zp, out_zp, shift, compile_kernel):
    """uint8 to int8 and back (TFLite Micro's pairs), with any scales and zero points (drawn as uint8 values, 128
    less for int8), or as the converter writes a uint8 model's I/O: one scale, zero points 128 apart."""
    in_type, out_type = types
    output = {} if shift else dict(out_scale=out_scale, out_zp=out_zp - 128 * (out_type == "int8"))
    _check("quantize", compile_kernel, dtype=in_type, out_dtype=out_type, in_shape=(1, 300), in_scale=in_scale,
           in_zp=in_zp - 128 * (in_type == "int8"), **output)


@SWEEP
@given(dtype=st.sampled_from(["int8", "int16"]), height=spatial, width=spatial, depth=st.integers(1, 6),
       out_channels=st.integers(1, 6), kernel=st.tuples(st.integers(1, 3), st.integers(1, 3)),
       stride=st.tuples(st.integers(1, 2), st.integers(1, 2)), dilation=st.sampled_from([(1, 1), (2, 1), (2, 2)]),
       padding=st.sampled_from(["SAME", "VALID"]), activation=st.sampled_from(["NONE", "RELU", "RELU6"]),
       per_channel=st.booleans(), in_zp=int8_zero_points)
def test_conv2d(dtype, height, width, depth, out_channels, kernel, stride, dilation, padding, activation,
                per_channel, in_zp, compile_kernel):
    _check("conv2d", compile_kernel, dtype=dtype, in_shape=(1, height, width, depth), out_channels=out_channels,
           kernel=kernel, stride=stride, dilation=dilation, padding=padding, activation=activation,
           per_channel=per_channel, **({"in_zp": in_zp} if dtype == "int8" else {}))


@SWEEP
@given(dtype=st.sampled_from(["int8", "int16"]), height=spatial, width=spatial, depth=st.integers(1, 4),
       multiplier=st.integers(1, 3), kernel=st.tuples(st.integers(1, 3), st.integers(1, 3)),
       stride=st.tuples(st.integers(1, 2), st.integers(1, 2)), padding=st.sampled_from(["SAME", "VALID"]),
       per_channel=st.booleans())
def test_depthwise_conv2d(dtype, height, width, depth, multiplier, kernel, stride, padding, per_channel,
                          compile_kernel):
    _check("depthwise_conv2d", compile_kernel, dtype=dtype, in_shape=(1, height, width, depth),
           depth_multiplier=multiplier, kernel=kernel, stride=stride, padding=padding, per_channel=per_channel)


@SWEEP
@given(dtype=st.sampled_from(["int8", "int16"]), rows=st.integers(1, 4), depth=st.integers(1, 200),
       units=st.integers(1, 40), per_channel=st.booleans(), bias=st.booleans(), out_scale=st.floats(0.01, 5.0))
def test_fully_connected(dtype, rows, depth, units, per_channel, bias, out_scale, compile_kernel):
    _check("fully_connected", compile_kernel, dtype=dtype, in_shape=(rows, depth), units=units,
           per_channel=per_channel, bias=bias, out_scale=out_scale)


@SWEEP
@given(op=st.sampled_from(["add", "sub", "mul"]), dtype=st.sampled_from(["int8", "int16"]),
       in2_shape=st.sampled_from([(1, 4, 4, 8), (1, 1, 1, 8), (4, 1, 8), (1,)]), in_scale=scales, in2_scale=scales,
       out_scale=scales, activation=st.sampled_from(["NONE", "RELU"]))
def test_add_sub_mul(op, dtype, in2_shape, in_scale, in2_scale, out_scale, activation, compile_kernel):
    _check(op, compile_kernel, dtype=dtype, in_shape=(1, 4, 4, 8), in2_shape=in2_shape, in_scale=in_scale,
           in2_scale=in2_scale, out_scale=out_scale, activation=activation)


@SWEEP
@given(op=st.sampled_from(["relu", "relu6", "relu_n1_to_1", "leaky_relu"]), in_scale=st.floats(1e-3, 0.5),
       out_scale=st.floats(1e-3, 0.5), in_zp=int8_zero_points, out_zp=int8_zero_points, alpha=st.floats(0.01, 0.99))
def test_relus(op, in_scale, out_scale, in_zp, out_zp, alpha, compile_kernel):
    extra = {"alpha": alpha} if op == "leaky_relu" else {}
    _check(op, compile_kernel, in_shape=(1, 256), in_scale=in_scale, in_zp=in_zp, out_scale=out_scale, out_zp=out_zp,
           **extra)


@SWEEP
@given(in_scale=st.floats(1e-5, 0.05), out_scale=st.floats(1e-5, 0.05), alpha=st.floats(-2.0, 3.0))
def test_leaky_relu_int16(in_scale, out_scale, alpha, compile_kernel):
    _check("leaky_relu", compile_kernel, dtype="int16", in_shape=(1, 512), in_scale=in_scale, out_scale=out_scale,
           alpha=alpha)
