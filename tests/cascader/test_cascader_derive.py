"""Propagators derived from the ethosu_tvm.te computes agree with the hand-written per-operator definitions."""
import itertools

import pytest

from ethosu_tvm.cascader import (
    NotAffineError,
    StripeConfig,
    binary_elementwise_propagator,
    conv2d_propagator,
    depthwise_conv2d_propagator,
    derive_propagator,
    identity_propagator,
    pooling_propagator,
    propagator_for,
    stage_propagator,
    whole_tensor_propagator,
)
from ethosu_tvm.legalize.ops import Padding

import cascader_support as ops

KERNELS = [(1, 1), (2, 3), (3, 3), (4, 5), (5, 2), (5, 5)]
STRIDES = [(1, 1), (2, 2), (3, 1), (1, 3), (3, 3)]
DILATIONS = [(1, 1), (2, 2), (1, 2)]
PADDINGS = [Padding(), Padding(1, 1, 1, 1), Padding(2, 0, 1, 3)]
# Every kernel with every stride; dilation and padding cycle through their values so that all pairs occur.
CONV_CASES = [
    (k, s, DILATIONS[i % 3], PADDINGS[(i // 3) % 3])
    for i, (k, s) in enumerate(itertools.product(KERNELS, STRIDES))
]


def hand_conv(op, depthwise=False):
    pad = (op.padding.top, op.padding.left)
    if depthwise:
        multiplier = op.ofm.tensor.shape[3] // op.ifm.tensor.shape[3]
        return depthwise_conv2d_propagator(op.kernel, op.strides, op.dilation, pad, multiplier)
    return conv2d_propagator(op.kernel, op.ifm.tensor.shape[3], op.strides, op.dilation, pad)


@pytest.mark.parametrize("kernel,strides,dilation,padding", CONV_CASES)
def test_conv2d(kernel, strides, dilation, padding):
    op, out, ifm = ops.conv((1, 13, 12, 3), kernel, strides, dilation, padding, out_channels=5)
    assert derive_propagator(out, ifm) == hand_conv(op)


@pytest.mark.parametrize("kernel,strides,dilation,padding", CONV_CASES[::3])
@pytest.mark.parametrize("multiplier", [1, 2, 3])
def test_depthwise_conv2d(kernel, strides, dilation, padding, multiplier):
    op, out, ifm = ops.conv((1, 13, 12, 4), kernel, strides, dilation, padding, multiplier=multiplier)
    assert derive_propagator(out, ifm) == hand_conv(op, depthwise=True)


@pytest.mark.parametrize("pool_type", ["MAX", "AVG"])
@pytest.mark.parametrize("pool_shape,strides,padding", [
    ((2, 2), (2, 2), Padding()),
    ((3, 3), (1, 1), Padding(1, 1, 1, 1)),
    ((3, 3), (2, 2), Padding(0, 0, 1, 1)),
    ((5, 4), (3, 2), Padding(2, 1, 2, 2)),
    ((1, 1), (1, 1), Padding()),
])
def test_pooling(pool_type, pool_shape, strides, padding):
    op, out, ifm = ops.pool((1, 11, 10, 6), pool_type, pool_shape, strides, padding)
    assert derive_propagator(out, ifm) == pooling_propagator(pool_shape, strides, (padding.top, padding.left))


@pytest.mark.parametrize("operator", ["ADD", "SUB", "MUL", "MIN", "MAX"])
@pytest.mark.parametrize("lhs_shape,rhs_shape", [
    ((1, 4, 5, 6), (1, 4, 5, 6)),
    ((1, 4, 5, 6), (1, 1, 1, 6)),
    ((1, 4, 5, 6), (1, 4, 1, 1)),
    ((1, 1, 5, 1), (1, 4, 5, 6)),
])
def test_binary_elementwise_with_broadcast(operator, lhs_shape, rhs_shape):
    op, out, lhs, rhs = ops.binary(operator, lhs_shape, rhs_shape)
    out_shape = op.ofm.tensor.shape
    assert derive_propagator(out, lhs) == binary_elementwise_propagator(lhs_shape, out_shape)
    assert derive_propagator(out, rhs) == binary_elementwise_propagator(rhs_shape, out_shape)


@pytest.mark.parametrize("lut", [False, True])
def test_identity_copy(lut):
    op, out, ifm = ops.identity((1, 4, 5, 6), (1, 4, 5, 6), lut=lut)
    assert derive_propagator(out, ifm) == identity_propagator((1, 4, 5, 6), (1, 4, 5, 6))


def test_table_lookup_index_is_data_dependent():
    op, out, _ = ops.identity((1, 4, 5, 6), (1, 4, 5, 6), lut=True)
    table = ops.find_tensor(out, "_lut")
    with pytest.raises(NotAffineError, match="non-affine"):
        derive_propagator(out, table)
    assert propagator_for(out, table, whole_tensor_propagator((256,), 4)).propagate(
        StripeConfig.for_tensor((1, 4, 5, 6), (1, 2, 5, 6))
    ).shape == (256,)


def test_reshape_falls_back_to_the_explicit_definition():
    op, out, ifm = ops.identity((1, 4, 5, 6), (1, 1, 20, 6))
    with pytest.raises(NotAffineError):
        derive_propagator(out, ifm)
    with pytest.raises(NotAffineError):
        propagator_for(out, ifm)
    fallback = identity_propagator((1, 4, 5, 6), (1, 1, 20, 6))
    assert propagator_for(out, ifm, fallback) is fallback
    needed = fallback.propagate(StripeConfig.for_tensor((1, 1, 20, 6), (1, 1, 5, 6)))
    assert needed.shape == (1, 4, 5, 6) and needed.stripes == (1, 1, 1, 1)


def test_conv_weights_are_derived_too():
    # weights[o, ry, rx, rc] (OHWI): an output depth stripe needs its output channels, the whole kernel and
    # every input channel; a spatial stripe does not change what it needs.
    op, out, ifm = ops.conv((1, 9, 9, 8), (3, 3), out_channels=12)
    weights = ops.find_tensor(out, "_weights")
    needed = derive_propagator(out, weights).propagate(StripeConfig.for_tensor((1, 7, 7, 12), (1, 3, 3, 4)))
    assert needed.shape == (4, 3, 3, 8) and needed.stripes == (3, 1, 1, 1)


def test_derived_chain_reproduces_the_rfc_example():
    op, out, ifm = ops.conv((1, 5, 5, 8), (3, 3), out_channels=4)
    assert derive_propagator(out, ifm).propagate(StripeConfig.for_tensor((1, 3, 3, 4), (1, 3, 3, 4))).shape == (
        1, 5, 5, 8
    )


def test_single_stage_and_unrelated_tensors():
    op, out, ifm = ops.conv((1, 6, 6, 2), (3, 3), padding=Padding(1, 1, 1, 1), out_channels=2)
    padded = ops.find_tensor(out, "_conv2d_ifm")
    # The padding stage only shifts: padded[y] reads ifm[y - 1].
    assert stage_propagator(padded, ifm).offset == (0, -1, -1, 0)
    _, other_out, other_ifm = ops.conv((1, 6, 6, 2), (1, 1), out_channels=2)
    with pytest.raises(ValueError, match="does not feed"):
        derive_propagator(out, other_ifm)
    with pytest.raises(ValueError, match="not a te.compute"):
        stage_propagator(ifm, ifm)
