"""Legalization: primitive kinds and their integer parameters, computed as TFLite computes them."""
import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ethosu_tvm.frontend.importer import from_tflite
from ethosu_tvm.frontend.tflite_file import read_model
from ethosu_tvm.legalize import legalize
from ethosu_tvm.legalize.ops import (
    BinaryElementwise,
    Clamp,
    Conv2D,
    DepthwiseConv2D,
    Identity,
    NpuGraph,
    Padding,
    Pooling,
    Requantize,
    Softmax,
    Transpose,
    TransposeConv2D,
)
from ethosu_tvm.quantization import (mean_multiplier, npu_scale_shift, quantize_multiplier, quantize_multipliers,
                                     softmax_input_scaling)
from ethosu_tvm.partition import partition_for_ethosu
from ethosu_tvm.testing import models, shared_model


def _weights(model: bytes, index: int) -> np.ndarray:
    """The int8 constant of the first operator's input `index`, in its TFLite shape."""
    tfl = read_model(model)
    graph = tfl.Subgraphs(0)
    tensor = graph.Tensors(graph.Operators(0).Inputs(index))
    return tfl.Buffers(tensor.Buffer()).DataAsNumpy().view(np.int8).reshape(tensor.ShapeAsNumpy())


def _ops(model: bytes):
    mod, _ = partition_for_ethosu(from_tflite(model), "ethos-u55-64")
    (graph,) = legalize(mod)
    return graph.ops


def test_quantize_multiplier_matches_tflite_rules():
    assert quantize_multiplier(0.5) == (1 << 30, 0)
    assert quantize_multiplier(0.0) == (0, 0)
    # A mantissa that rounds up to 2^31 is halved and the exponent bumped.
    assert quantize_multiplier(1.0 - 2.0**-33) == (1 << 30, 1)
    assert quantize_multiplier(2.0**-40) == (0, 0)  # below 2^-31 TFLite flushes to zero
    scale, shift = npu_scale_shift(0.0123)
    assert math.isclose(scale / 2.0**shift, 0.0123, rel_tol=1e-9) and 2**30 <= scale < 2**31


# Reals whose mantissa ends in exactly half a unit of the Q31 multiplier (rounded away from zero), rounds up to 2^31,
# or falls just above and below TFLite's flush to zero, at both signs.
_EDGES = [sign * value for sign in (1, -1) for value in
          (0.0, 0.5, (2**30 + 0.5) / 2**31, 1.0 - 2.0**-33, 1.0 - 2.0**-32, 2.0**-31, 2.0**-32, 2.0**-32 * (1 - 2**-40),
           5e-324, 2.0**1000)]


@given(st.lists(st.one_of(st.sampled_from(_EDGES), st.floats(allow_nan=False, allow_infinity=False)), max_size=40))
def test_quantize_multipliers_is_quantize_multiplier_channel_by_channel(reals):
    """The array form (numpy over every channel at once) gives quantize_multiplier's integers."""
    multipliers, shifts = quantize_multipliers(reals)
    assert multipliers.dtype == shifts.dtype == np.int32
    assert list(zip(multipliers.tolist(), shifts.tolist())) == [quantize_multiplier(real) for real in reals]


@pytest.mark.parametrize("bad, error", [(math.inf, OverflowError), (-math.inf, OverflowError), (math.nan, ValueError)])
def test_quantize_multipliers_refuses_a_non_finite_real_as_quantize_multiplier_does(bad, error):
    with pytest.raises(error) as scalar:
        quantize_multiplier(bad)
    with pytest.raises(error) as array:
        quantize_multipliers([0.5, bad, math.nan])
    assert str(array.value) == str(scalar.value)


def test_conv2d_parameters():
    model = models.make("conv2d", in_shape=(1, 8, 8, 4), out_channels=8, kernel=(3, 2), stride=(2, 1),
                        padding="SAME", per_channel=True, activation="RELU6", in_scale=0.05, in_zp=-3,
                        out_scale=0.03, out_zp=-100)
    (op,) = _ops(model)
    assert type(op) is Conv2D and op.op_name == "ethosu.conv2d"
    assert op.weights.dtype == np.int8 and op.weights.shape == (8, 3, 2, 4)  # OHWI
    assert op.bias.dtype == np.int64 and op.bias.shape == (8,)
    assert (op.ifm.zero_point, op.ofm.zero_point, op.weight_zero_point) == (-3, -100, 0)
    assert op.strides == (2, 1) and op.dilation == (1, 1)
    assert op.padding == Padding(top=0, left=0, bottom=1, right=1)
    # RELU6 on the quantized output: [zp, zp + round(6 / scale)].
    assert op.clamp == Clamp(-100, -100 + round(6 / 0.03))
    assert op.requant.rounding == "TFL" and op.requant.scale.shape == (8,)
    assert np.all(op.requant.shift >= 31)


def test_depthwise_and_fc_layouts():
    (dw,) = _ops(models.make("depthwise_conv2d", in_shape=(1, 6, 6, 4), kernel=(3, 3)))
    assert type(dw) is DepthwiseConv2D and dw.op_name == "ethosu.depthwise_conv2d"
    assert dw.weights.shape == (4, 3, 3, 1)
    # The NPU's DEPTHWISE needs IFM depth = OFM depth: a multiplier on one channel is a convolution, OHWI with I = 1.
    (conv,) = _ops(models.make("depthwise_conv2d", in_shape=(1, 6, 6, 1), depth_multiplier=3, kernel=(3, 3)))
    assert type(conv) is Conv2D and conv.op_name == "ethosu.conv2d"
    assert conv.weights.shape == (3, 3, 3, 1)
    reshape, fc = _ops(models.make("fully_connected", in_shape=(1, 2, 2, 8), units=5, bias=False))
    assert type(reshape) is Identity and reshape.op_name == "ethosu.identity"
    assert reshape.ofm.tensor.shape == (1, 1, 4, 8)
    assert type(fc) is Conv2D and fc.weights.shape == (5, 1, 1, 8) and fc.ifm.tensor.shape == (1, 1, 4, 8)
    assert not fc.bias.any() and fc.requant.rounding == "NATURAL"


def test_depth_multiplier_over_several_channels():
    """Output channel o reads IFM channel o // M. Up to 8 channels: one convolution, its weights the depthwise ones
    on that channel and 0 elsewhere. Beyond: a 1x1 convolution repeating each channel M times at unit scale (IFM
    zero point in and out), then a depthwise convolution over the C·M channels."""
    model = models.make("depthwise_conv2d", in_shape=(1, 6, 6, 3), depth_multiplier=2, kernel=(3, 3))
    depthwise = _weights(model, 1)[0].transpose(2, 0, 1)  # TFLite [1, H, W, C·M] as (C·M, H, W)
    (conv,) = _ops(model)
    assert type(conv) is Conv2D and conv.weights.shape == (6, 3, 3, 3)
    for o in range(6):
        assert np.array_equal(conv.weights[o, :, :, o // 2], depthwise[o])
        assert not np.delete(conv.weights[o], o // 2, axis=2).any()
    model = models.make("depthwise_conv2d", in_shape=(1, 6, 6, 9), depth_multiplier=2, kernel=(3, 3), in_zp=5)
    repeat, dw = _ops(model)
    assert type(repeat) is Conv2D and type(dw) is DepthwiseConv2D and dw.ifm.tensor == repeat.ofm.tensor
    assert repeat.ofm.tensor.shape == (1, 6, 6, 18) and repeat.ifm.zero_point == repeat.ofm.zero_point == 5
    assert np.array_equal(repeat.weights[:, 0, 0, :], np.repeat(np.eye(9, dtype=np.int8), 2, axis=0))
    assert repeat.requant.scale / 2.0 ** repeat.requant.shift == pytest.approx(1.0, abs=0) and not repeat.bias.any()
    assert np.array_equal(dw.weights[..., 0], _weights(model, 1)[0].transpose(2, 0, 1))


@pytest.mark.parametrize("stride,padding,kernel,expected", [
    ((2, 2), "SAME", (3, 3), (TransposeConv2D, Padding(2, 2, 0, 0))),
    ((2, 2), "SAME", (4, 4), (TransposeConv2D, Padding(2, 2, 1, 1))),
    ((2, 2), "VALID", (3, 3), (TransposeConv2D, Padding(2, 2, 1, 1))),
    ((1, 1), "SAME", (3, 3), (Conv2D, Padding(1, 1, 1, 1))),
    ((1, 1), "VALID", (2, 3), (Conv2D, Padding(1, 2, 1, 2))),
])
def test_transpose_conv_is_a_convolution_with_the_kernel_reversed(stride, padding, kernel, expected):
    """Stride 2 convolves the zero-upscaled IFM, stride 1 the IFM; both with stride 1, TFLite's OHWI weights
    reversed in height and width, and Vela's padding of the (upscaled) IFM."""
    model = models.make("transpose_conv", seed=4, stride=stride, padding=padding, kernel=kernel)
    (op,) = _ops(model)
    assert (type(op), op.padding) == expected
    assert (op.strides, op.dilation) == ((1, 1), (1, 1))
    weights = _weights(model, 1)  # TRANSPOSE_CONV's inputs: output shape, weights, IFM, bias
    np.testing.assert_array_equal(op.weights, weights[:, ::-1, ::-1, :])


def test_pooling_and_elementwise_parameters():
    (avg,) = _ops(models.make("avg_pool2d", pool=(3, 3), stride=(1, 1), padding="SAME", in_zp=7))
    assert type(avg) is Pooling and avg.op_name == "ethosu.pooling" and avg.pooling_type == "AVG"
    # TFLite averages raw values (input and output share one quantization), so the op's zero points are 0.
    assert (avg.ifm.zero_point, avg.ofm.zero_point) == (0, 0) and avg.padding == Padding(1, 1, 1, 1)
    (add,) = _ops(models.make("add", in_scale=0.02, in2_scale=0.05, activation="RELU", out_scale=0.1, out_zp=-20))
    assert type(add) is BinaryElementwise and add.op_name == "ethosu.binary_elementwise"
    assert add.operator == "ADD" and add.input_shift == 20 and add.clamp == Clamp(-20, 127)
    # The larger-scaled operand is multiplied by exactly 0.5; the other by 0.02 / 0.1.
    assert (int(add.ifm2_requant.scale[0]), int(add.ifm2_requant.shift[0])) == (1 << 30, 31)
    assert math.isclose(int(add.ifm_requant.scale[0]) / 2.0 ** int(add.ifm_requant.shift[0]), 0.2, rel_tol=1e-6)
    (mx,) = _ops(models.make("maximum"))
    assert mx.operator == "MAX" and mx.requant is None


def test_fc_needs_single_rounding_to_match_litert():
    """Evidence for NATURAL rounding on FC: with TFL double rounding, the AD autoencoder differs from LiteRT."""
    from ethosu_tvm.te import CompiledTeGraph, te_graph
    from ethosu_tvm.testing.reference import random_inputs, run_litert

    model = shared_model("mlperf_tiny_ad_fc_autoencoder_int8.tflite")
    mod, _ = partition_for_ethosu(from_tflite(model))
    (graph,) = legalize(mod)
    double = NpuGraph(graph.name, graph.inputs, graph.outputs, tuple(
        dataclasses.replace(op, requant=dataclasses.replace(op.requant, rounding="TFL")) for op in graph.ops))
    single_run, double_run = CompiledTeGraph(te_graph(graph)), CompiledTeGraph(te_graph(double))
    mismatches = 0
    for seed in range(3):
        inputs = random_inputs(model, seed)
        (ref,) = run_litert(model, inputs)
        assert np.array_equal(single_run(inputs)[0].reshape(ref.shape), ref)
        mismatches += int(np.count_nonzero(double_run(inputs)[0].reshape(ref.shape) != ref))
    assert mismatches > 0


def test_rounding_mode_is_validated():
    with pytest.raises(ValueError, match="rounding 'UP' is not one of"):
        Requantize(np.array([1]), np.array([31]), "UP")


def test_sum_over_height_and_width_is_one_depthwise_convolution():
    """The window covers height and width in place (no copies); TFLite's multiplier of the float32 scales' ratio
    0.02 / 0.5 (in double), TFL rounding."""
    (op,) = _ops(models.make("sum", in_scale=0.02, in_zp=3, out_scale=0.5, out_zp=-4))
    assert isinstance(op, DepthwiseConv2D) and op.kernel == (8, 8) and op.ifm.zero_point == 3
    assert (op.weights == 1).all() and op.weight_zero_point == 0 and not op.bias.any()
    multiplier, shift = quantize_multiplier(float(np.float32(0.02)) / float(np.float32(0.5)))
    assert (int(op.requant.scale[0]), int(op.requant.shift[0]), op.requant.rounding) == (multiplier, 31 - shift, "TFL")
    assert (op.ofm.zero_point, op.clamp) == (-4, Clamp(-128, 127))


def test_reductions_over_other_axes_are_copied_into_their_view():
    """REDUCE_MIN over depth: the IFM copied through the complement table into (1, H·W, C, 1), a max pool along the
    width, the result copied back through the same table; MEAN over axes 0-1 of a 3-D tensor reduces the NPU's
    height and width in place, with TFLite's MEAN multiplier."""
    first, pool, last = _ops(models.make("reduce_min", axis=(3,), keep_dims=False))
    assert first.ofm.tensor.shape == (1, 64, 8, 1) and pool.pool_shape == (1, 8) and pool.pooling_type == "MAX"
    assert first.lut.tolist() == last.lut.tolist() == list(range(127, -129, -1))
    (mean,) = _ops(models.make("mean", in_shape=(4, 5, 6), axis=(0, 1), keep_dims=False))
    assert mean.kernel == (4, 5) and mean.ifm.tensor.shape == (1, 4, 5, 6)
    multiplier, shift = mean_multiplier(1.0, 20)
    assert (int(mean.requant.scale[0]), int(mean.requant.shift[0])) == (multiplier, 31 - shift)


def test_reduction_over_the_first_and_last_of_three_axes_transposes_first():
    """SUM over height and depth: (H, W, C) transposed to (W, H, C), copied into (1, W, H·C, 1), summed along the
    width, the result copied into the OFM's shape."""
    transpose, copy, total, back = _ops(models.make("sum", in_shape=(1, 3, 4, 5), axis=(1, 3)))
    assert isinstance(transpose, Transpose) and transpose.view == (3, 4, 5)
    assert transpose.ofm.tensor.shape == (1, 4, 3, 5) and copy.ofm.tensor.shape == (1, 4, 15, 1)
    assert isinstance(total, DepthwiseConv2D) and total.kernel == (1, 15) and back.ofm.tensor.shape == (1, 1, 4, 1)


def test_softmax_is_one_primitive_with_its_exp_table():
    """The table holds TFLite's exp of each input difference: exp(0) saturated, exp(−1) (8 steps of 0.125) within
    gemmlowp's accuracy, 0 below TFLite's diff_min."""
    (op,) = _ops(models.make("softmax", in_shape=(4, 12), in_scale=0.25, in_zp=7, beta=0.5))
    assert isinstance(op, Softmax) and op.ifm.tensor.shape == op.ofm.tensor.shape == (1, 1, 4, 12)
    assert (op.ifm.zero_point, op.ofm.zero_point, op.ofm.scale) == (7, -128, 1 / 256)
    table = op.exp_lut
    assert table.dtype == np.int32 and table.shape == (256,)
    assert table[255] == 2**31 - 1
    assert abs(int(table[255 - 8]) - round(math.exp(-1.0) * 2**31)) < 2**10
    _, _, diff_min = softmax_input_scaling(0.5, 0.25)
    assert diff_min == -124 and table[255 + diff_min] > 0 and not table[:255 + diff_min].any()
    assert np.all(np.diff(table.astype(np.int64)) >= 0)
