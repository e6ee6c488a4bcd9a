"""Every host kernel against LiteRT's BUILTIN_REF kernels: bit-exact on seeded random inputs (no tolerance)."""
import numpy as np
import pytest
from host_harness import assert_bit_exact
from host_tflite_ops import host_op

from ethosu_tvm.host import build_kernel
from ethosu_tvm.testing import models
from ethosu_tvm.testing.reference import run_litert

# (factory op, dtype, factory parameters): the factory defaults plus the variants each kernel must handle.
CASES = [
    ("softmax", "int8", {}),
    ("softmax", "int8", dict(in_shape=(1, 8, 8, 8), beta=0.7, in_scale=0.3, in_zp=10)),
    ("softmax", "int8", dict(in_shape=(2, 1000), in_scale=0.05)),
    ("softmax", "int8", dict(in_shape=(1, 37), in_scale=1.5, beta=2.0)),  # most inputs beyond diff_min
    ("softmax", "int16", {}),
    ("softmax", "int16", dict(in_shape=(3, 300), in_scale=0.002, beta=0.5)),
    ("logistic", "int8", {}),
    ("logistic", "int8", dict(in_scale=0.2, in_zp=-60)),
    ("tanh", "int8", {}),
    ("tanh", "int8", dict(in_scale=0.004, in_zp=100)),
    ("exp", "int8", {}),
    ("exp", "int8", dict(in_scale=0.05, in_zp=100, out_scale=0.01, out_zp=-128)),
    ("log", "int8", {}),
    ("log", "int8", dict(in_scale=0.3, in_zp=20, out_scale=0.02, out_zp=-50)),  # log of x <= 0: the lowest value
    ("gelu", "int8", {}),
    ("gelu", "int8", dict(approximate=True, in_scale=0.08, in_zp=30, out_scale=0.004, out_zp=-100)),
    ("rsqrt", "int8", {}),
    ("abs", "int8", {}),
    ("abs", "int8", dict(in_zp=60, out_scale=0.01, out_zp=-128)),
    ("rsqrt", "int8", dict(in_scale=0.004, out_scale=0.5, out_zp=-100)),
    ("hard_swish", "int8", {}),
    ("hard_swish", "int8", dict(in_scale=0.01, in_zp=-30, out_scale=0.05, out_zp=20)),
    ("hard_swish", "int8", dict(in_scale=0.2, in_zp=90)),
    ("logistic", "int16", {}),
    ("tanh", "int16", dict(in_scale=0.0003)),
    ("quantize", "int8", {}),
    ("quantize", "int8", dict(out_scale=0.5, out_zp=-100)),
    ("quantize", "int16", {}),
    ("relu", "int8", {}),
    ("relu", "int8", dict(out_scale=0.01, out_zp=-20)),
    ("relu6", "int8", dict(in_scale=0.05, in_zp=-100)),
    ("relu_n1_to_1", "int8", dict(in_scale=0.01, in_zp=10)),
    ("relu_0_to_1", "int8", dict(in_scale=0.01, in_zp=-20)),
    ("leaky_relu", "int8", {}),
    ("leaky_relu", "int8", dict(alpha=0.7, out_scale=0.03, out_zp=40)),
    ("leaky_relu", "int16", {}),
    ("leaky_relu", "int16", dict(alpha=-0.4, in_scale=0.002, out_scale=0.0005)),
    ("reshape", "int8", {}),
    ("reshape", "int16", dict(new_shape=(4, -1))),
    ("squeeze", "int8", {}),
    ("expand_dims", "int8", {}),
    ("pad", "int8", {}),
    ("pad", "int8", dict(in_zp=50, paddings=((0, 0), (0, 3), (2, 0), (1, 1)))),
    ("concatenation", "int8", {}),
    ("concatenation", "int8", dict(num_inputs=3, axis=1)),
    ("conv2d", "int8", {}),
    ("conv2d", "int8", dict(in_shape=(1, 9, 11, 3), out_channels=5, kernel=(3, 2), stride=(2, 3), activation="RELU6")),
    ("conv2d", "int8", dict(padding="VALID", dilation=(2, 2), per_channel=False, activation="RELU")),
    ("conv2d", "int8", dict(in_shape=(2, 6, 6, 4), kernel=(1, 1), out_scale=0.02, out_zp=50)),
    ("conv2d", "int16", {}),
    ("conv2d", "int16", dict(stride=(2, 2), activation="RELU6", per_channel=False)),
    ("depthwise_conv2d", "int8", {}),
    ("depthwise_conv2d", "int8", dict(depth_multiplier=2, in_shape=(1, 7, 7, 3), stride=(2, 2), activation="RELU")),
    ("depthwise_conv2d", "int8", dict(padding="VALID", dilation=(2, 1), per_channel=False)),
    ("depthwise_conv2d", "int16", {}),
    ("fully_connected", "int8", {}),
    ("fully_connected", "int8", dict(in_shape=(4, 64), units=24, per_channel=True, activation="RELU")),
    ("fully_connected", "int8", dict(in_shape=(2, 3, 40), keep_num_dims=True, bias=False)),
    ("fully_connected", "int16", {}),
    ("fully_connected", "int16", dict(in_shape=(3, 100), units=7, activation="RELU6")),
    ("avg_pool2d", "int8", {}),
    ("avg_pool2d", "int8", dict(pool=(3, 3), stride=(2, 2), padding="SAME", activation="RELU6")),
    ("avg_pool2d", "int16", dict(pool=(3, 2), stride=(1, 2), padding="SAME")),
    ("max_pool2d", "int8", {}),
    ("max_pool2d", "int8", dict(pool=(3, 3), stride=(2, 2), padding="SAME", activation="RELU")),
    ("max_pool2d", "int16", dict(pool=(2, 3), padding="SAME")),
    ("add", "int8", {}),
    ("add", "int8", dict(in2_shape=(1, 1, 1, 8), activation="RELU", in2_scale=0.1, in2_zp=20)),
    ("add", "int16", dict(in2_shape=(8,))),
    ("sub", "int8", {}),
    ("sub", "int8", dict(in2_shape=(1, 8, 1, 1), activation="RELU6")),
    ("sub", "int16", {}),
    ("mul", "int8", {}),
    ("mul", "int8", dict(in2_shape=(1, 1, 8, 8), activation="RELU")),
    ("mul", "int16", {}),
    ("minimum", "int8", {}),
    ("minimum", "int8", dict(in2_shape=(1, 1, 1, 8))),
    ("minimum", "int16", {}),
    ("maximum", "int8", {}),
    ("maximum", "int16", dict(in2_shape=(8, 1, 8))),
]


@pytest.mark.parametrize("op,dtype,params", CASES, ids=[f"{o}-{d}-{i}" for i, (o, d, _) in enumerate(CASES)])
def test_matches_litert(op, dtype, params, compile_kernel):
    assert_bit_exact(models.make(op, seed=7, dtype=dtype, **params), compile_kernel)


@pytest.mark.parametrize("op,dtype,scale", [
    ("logistic", "int8", 0.05), ("tanh", "int8", 0.02), ("logistic", "int16", 1 / 4096), ("logistic", "int16", 0.01),
    ("tanh", "int16", 1 / 2048), ("tanh", "int16", 2e-5), ("quantize", "int8", 0.3), ("quantize", "int16", 0.002),
    ("hard_swish", "int8", 0.03), ("hard_swish", "int8", 0.15), ("exp", "int8", 0.01), ("exp", "int8", 0.02),
    ("log", "int8", 0.05), ("log", "int8", 0.7), ("rsqrt", "int8", 0.01), ("rsqrt", "int8", 0.3),
    ("abs", "int8", 0.02), ("gelu", "int8", 0.03), ("gelu", "int8", 0.2),
])
def test_every_input_value(op, dtype, scale, compile_kernel):
    """Elementwise kernels on every value of their input type at once."""
    info = np.iinfo(dtype)
    size = info.max - info.min + 1
    model = models.make(op, seed=3, dtype=dtype, in_shape=(1, size), in_scale=scale)
    kernel = compile_kernel(build_kernel(host_op(model)))
    values = np.arange(info.min, info.max + 1, dtype=dtype).reshape(1, size)
    np.testing.assert_array_equal(kernel(values).reshape(1, size), run_litert(model, [values])[0])


@pytest.mark.parametrize("op", ["relu", "relu6", "relu_n1_to_1", "relu_0_to_1", "leaky_relu", "quantize", "abs"])
def test_every_input_value_where_tflite_overflows(op, compile_kernel):
    """An input/output scale ratio of 3e7 makes TFLite's requantization shift int8 inputs out of int32 (undefined
    in C; LiteRT wraps): the kernel wraps as LiteRT does."""
    model = models.make(op, seed=3, in_shape=(1, 256), in_scale=0.125, in_zp=5, out_scale=4e-9, out_zp=-3)
    kernel = compile_kernel(build_kernel(host_op(model)))
    values = np.arange(-128, 128, dtype=np.int8).reshape(1, 256)
    np.testing.assert_array_equal(kernel(values).reshape(1, 256), run_litert(model, [values])[0])
