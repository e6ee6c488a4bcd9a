"""Bit-exactness of the TE definitions against LiteRT's reference kernels on single-operator factory models."""
import numpy as np
import pytest

from ethosu_tvm.testing import models
from ethosu_tvm.testing.reference import run_litert

from te_support import assert_single_subgraph_exact, compile_npu

CASES = {
    "conv2d 3x3 same relu6 per-channel": ("conv2d", dict(activation="RELU6", per_channel=True)),
    "conv2d 3x3 valid stride 2": ("conv2d", dict(stride=(2, 2), padding="VALID", in_shape=(1, 9, 9, 3))),
    "conv2d 5x3 dilated per-tensor relu": ("conv2d", dict(kernel=(5, 3), dilation=(2, 2), per_channel=False,
                                                          activation="RELU", in_shape=(1, 12, 10, 5))),
    "conv2d 1x1 stride 3": ("conv2d", dict(kernel=(1, 1), stride=(3, 3), in_shape=(1, 10, 11, 16),
                                           out_channels=24)),
    "depthwise 3x3 relu": ("depthwise_conv2d", dict(activation="RELU")),
    "depthwise multiplier 4 on one channel": ("depthwise_conv2d", dict(in_shape=(1, 9, 9, 1), depth_multiplier=4,
                                                                       stride=(2, 2))),
    "depthwise 5x5 valid dilated": ("depthwise_conv2d", dict(kernel=(5, 5), padding="VALID", dilation=(2, 1),
                                                             in_shape=(1, 14, 12, 6))),
    "transpose conv stride 2 same": ("transpose_conv", {}),
    "transpose conv stride 2 valid 4x4 no bias": ("transpose_conv", dict(kernel=(4, 4), padding="VALID", bias=False)),
    "transpose conv stride 1": ("transpose_conv", dict(stride=(1, 1), kernel=(2, 3), in_shape=(1, 5, 7, 3))),
    "transpose conv 1x2 over one row": ("transpose_conv", dict(stride=(1, 2), kernel=(1, 3), in_shape=(1, 1, 8, 4))),
    "fully connected": ("fully_connected", {}),
    "fully connected no bias relu": ("fully_connected", dict(bias=False, activation="RELU", units=10)),
    "fully connected 4-D input": ("fully_connected", dict(in_shape=(1, 2, 2, 8), units=6)),
    "fully connected per-channel": ("fully_connected", dict(per_channel=True, units=7)),
    # 16x8: int16 feature maps, int8 weights, int64 bias (accumulators beyond 32 bits)
    "conv2d 16x8 stride 2 relu": ("conv2d", dict(dtype="int16", stride=(2, 2), activation="RELU",
                                                 in_shape=(1, 9, 9, 20))),
    "depthwise 16x8 5x5": ("depthwise_conv2d", dict(dtype="int16", kernel=(5, 5))),
    "fully connected 16x8 batch": ("fully_connected", dict(dtype="int16", in_shape=(16, 70), units=12)),
    "avg pool 2x2": ("avg_pool2d", {}),
    "avg pool 3x3 same": ("avg_pool2d", dict(pool=(3, 3), stride=(1, 1), padding="SAME", in_shape=(1, 7, 9, 4))),
    "avg pool global": ("avg_pool2d", dict(pool=(6, 5), stride=(1, 1), in_shape=(1, 6, 5, 8))),
    "max pool 2x2": ("max_pool2d", {}),
    "max pool 3x3 same stride 2 relu": ("max_pool2d", dict(pool=(3, 3), stride=(2, 2), padding="SAME",
                                                           activation="RELU")),
    "avg pool int16 global": ("avg_pool2d", dict(dtype="int16", pool=(6, 5), stride=(1, 1), in_shape=(1, 6, 5, 8))),
    "avg pool int16 3x3 same relu6": ("avg_pool2d", dict(dtype="int16", pool=(3, 3), stride=(1, 1), padding="SAME",
                                                         activation="RELU6")),
    "max pool int16 3x3 same stride 2": ("max_pool2d", dict(dtype="int16", pool=(3, 3), stride=(2, 2),
                                                            padding="SAME")),
    "quantize int16 down": ("quantize", dict(dtype="int16", in_scale=1e-3, out_scale=3e-3)),
    "quantize int16 up": ("quantize", dict(dtype="int16", in_scale=1e-3, out_scale=7.7e-7)),
    "tanh int16": ("tanh", dict(dtype="int16", in_scale=3.1e-4)),
    "tanh int16 power-of-two scale": ("tanh", dict(dtype="int16", in_scale=2.0**-11)),
    "logistic int16": ("logistic", dict(dtype="int16", in_scale=1e-3)),
    "mean int16": ("mean", dict(dtype="int16", out_scale=0.05)),
    "mean int16 not keeping dims": ("mean", dict(dtype="int16", in_shape=(1, 5, 7, 3), keep_dims=False)),
    "add": ("add", {}),
    "add relu broadcast": ("add", dict(in2_shape=(1, 1, 1, 8), activation="RELU")),
    "add relu6 other scales": ("add", dict(in2_scale=0.11, in2_zp=20, activation="RELU6")),
    "sub": ("sub", dict(in2_shape=(1, 8, 1, 8))),
    "mul": ("mul", {}),
    "mul broadcast relu": ("mul", dict(in2_shape=(1, 1, 8, 1), activation="RELU")),
    "minimum": ("minimum", {}),
    "maximum broadcast": ("maximum", dict(in2_shape=(1, 1, 1, 8))),
    "reshape": ("reshape", {}),
    "reshape odd size": ("reshape", dict(in_shape=(1, 3, 5, 7), new_shape=(1, 105))),
    "squeeze": ("squeeze", {}),
    "expand_dims": ("expand_dims", {}),
    "mean": ("mean", dict(in_zp=50)),
    "mean not keeping dims": ("mean", dict(in_shape=(1, 5, 7, 3), in_zp=-100, out_zp=20, keep_dims=False)),
    "softmax": ("softmax", {}),
    "softmax rows of a feature map with beta": ("softmax", dict(in_shape=(1, 3, 4, 24), in_scale=0.07, beta=1.7)),
    "softmax long rows": ("softmax", dict(in_shape=(2, 600), in_scale=0.25, in_zp=-128)),
    "softmax int16": ("softmax", dict(dtype="int16", in_shape=(3, 40), in_scale=1 / 1024)),
    "softmax int16 rows of a feature map with beta": ("softmax", dict(dtype="int16", in_shape=(1, 3, 4, 24),
                                                                     in_scale=1 / 256, beta=0.37)),
    "batch_matmul of run-time operands": ("batch_matmul", {}),
    "batch_matmul of run-time operands adj_y zero points": ("batch_matmul", dict(
        in_shape=(1, 3, 5, 24), in2_shape=(1, 3, 11, 24), adj_y=True, in_zp=-128, in2_zp=127, out_zp=9)),
}


@pytest.mark.parametrize("case", CASES)
def test_single_op_bit_exact(case):
    op, params = CASES[case]
    assert_single_subgraph_exact(models.make(op, seed=len(case), **params))


@pytest.mark.parametrize("op", ["conv2d", "fully_connected"])
def test_16x8_accumulators_beyond_32_bits(op):
    """Inputs of ±32767 that follow the signs of the first output channel's weights (and their negation): its
    accumulator leaves int32, as the NPU's 40-bit ones may, and the TE graph still equals LiteRT."""
    shape = (1, 1, 1, 1100) if op == "conv2d" else (1, 1100)
    params = dict(kernel=(1, 1), out_channels=2) if op == "conv2d" else dict(units=2)
    model = models.make(op, 3, dtype="int16", in_shape=shape, in_scale=1.0 / 32768, out_scale=4.0, **params)
    _, (graph,), (run,) = compile_npu(model)
    (conv,) = graph.ops
    signs = np.sign(conv.weights[0].astype(np.int64)).reshape(shape)
    assert int(np.abs(conv.weights[0].astype(np.int64)).sum()) * 32767 >= 1 << 31
    for x in (signs * 32767, signs * -32767):
        x = x.astype(np.int16)
        ref = run_litert(model, [x])[0]
        np.testing.assert_array_equal(run([x])[0].reshape(ref.shape), ref)
