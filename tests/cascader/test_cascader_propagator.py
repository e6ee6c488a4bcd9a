"""Propagator: the RFC example, chains, strides, dilation, padding, channel multipliers, and exact composition."""
from collections import Counter
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ethosu_tvm.cascader import (
    Propagator,
    StripeConfig,
    binary_elementwise_propagator,
    compose,
    conv2d_propagator,
    depthwise_conv2d_propagator,
)

from cascader_support import window_region


def test_rfc_example_3x3_conv_needs_5x5_input_with_all_channels():
    # RFC tvm-rfcs#37: a (1,3,3,4) output stripe of an unpadded 3x3 stride-1 conv with 8 input channels.
    conv = conv2d_propagator((3, 3), in_channels=8)
    assert conv.transform == (
        (1, 0, 0, 0, 0),
        (0, 1, 0, 0, 2),
        (0, 0, 1, 0, 2),
        (0, 0, 0, 0, 8),
        (0, 0, 0, 0, 1),
    )
    needed = conv.propagate(StripeConfig.for_tensor((1, 9, 9, 4), (1, 3, 3, 4)))
    assert needed.shape == (1, 5, 5, 8)
    assert needed.extent == (1, 11, 11, 8)
    assert needed.strides == (1, 3, 3, 0)
    assert needed.stripes == (1, 3, 3, 1) and needed.order == (0, 1, 2, 0)
    assert needed.offset == (0, 0, 0, 0)


def test_two_chained_3x3_convs_need_7x7():
    first, second = conv2d_propagator((3, 3), in_channels=6), conv2d_propagator((3, 3), in_channels=5)
    out = StripeConfig.for_tensor((1, 12, 12, 6), (1, 3, 3, 6))
    chained = first.then(second)
    assert chained.propagate(out).shape == (1, 7, 7, 5)
    assert chained == compose([first, second])
    assert chained.propagate(out) == second.propagate(first.propagate(out))


def test_stride_2_hand_computed():
    # Rows y*2 + r (r < 3) for output rows [4, 8): inputs 8 .. 8+2*3+2 = 16, i.e. 9 rows starting at 8.
    p = conv2d_propagator((3, 3), in_channels=3, strides=(2, 2))
    needed = p.propagate(StripeConfig((1, 4, 4, 3), (1, 8, 8, 3), (1, 4, 4, 3), (0, 1, 2, 0), (1, 2, 2, 1),
                                      (0, 4, 0, 0)))
    assert needed.shape == (1, 9, 9, 3) and needed.offset == (0, 8, 0, 0) and needed.strides == (1, 8, 8, 0)
    assert needed.extent == (1, 17, 17, 3)


def test_dilation_2_hand_computed():
    # A 3-tap kernel at dilation 2 spans 5 rows; 3 output rows at stride 1 need 3 - 1 + 5 = 7.
    p = conv2d_propagator((3, 3), in_channels=3, dilation=(2, 1))
    assert p.propagate(StripeConfig.for_tensor((1, 6, 6, 3), (1, 3, 3, 3))).shape == (1, 7, 5, 3)
    # Stride 2 and dilation 2 with padding 2: rows y*2 + r*2 - 2, y in [1, 3) -> 0 .. 2*2 + 4 - 2 = 6.
    p = conv2d_propagator((3, 3), in_channels=3, strides=(2, 2), dilation=(2, 2), padding=(2, 2))
    needed = p.propagate(StripeConfig((1, 2, 2, 3), (1, 4, 4, 3), (1, 2, 2, 3), (0, 1, 2, 0), (1, 2, 2, 1),
                                      (0, 1, 1, 0)))
    assert needed.offset[1] == 0 and needed.shape[1] == 7


def test_padding_is_not_clamped_but_counted_within_the_tensor():
    # SAME 3x3 conv on 8x8, 4x4 output stripes: input stripes start at -1 and are 6 wide; inside the
    # tensor every one of the four keeps 5x5 (one row/column of each lies in the padding).
    p = conv2d_propagator((3, 3), in_channels=2, padding=(1, 1))
    needed = p.propagate(StripeConfig.for_tensor((1, 8, 8, 4), (1, 4, 4, 4)))
    assert needed.offset == (0, -1, -1, 0) and needed.extent == (1, 10, 10, 2)
    assert needed.stripe_counts() == {(1, 6, 6, 2): 4}
    assert needed.stripe_counts(within=(1, 8, 8, 2)) == {(1, 5, 5, 2): 4}


@given(
    kernel=st.integers(1, 5), stride=st.integers(1, 3), dilation=st.integers(1, 2), before=st.integers(0, 3),
    out_extent=st.integers(1, 30), stripe=st.integers(1, 12),
)
def test_edge_stripes_match_enumerated_windows(kernel, stride, dilation, before, out_extent, stripe):
    """Every input stripe (including the one under a partial edge stripe) is exactly the enumerated window."""
    p = conv2d_propagator((kernel, 1), in_channels=1, strides=(stride, 1), dilation=(dilation, 1), padding=(before, 0))
    out = StripeConfig.for_tensor((1, out_extent, 1, 1), (1, stripe, 1, 1))
    needed = p.propagate(out)
    expected = Counter()
    for i in range(out.stripes[1]):
        start = i * out.shape[1]
        first, size = window_region(start, min(out.shape[1], out_extent - start), kernel, stride, dilation, before)
        assert first == needed.offset[1] + i * needed.strides[1]
        expected[size] += 1
    assert needed.axis_stripe_sizes(1) == dict(expected)


def test_depthwise_multiplier_maps_aligned_channel_stripes_exactly():
    p = depthwise_conv2d_propagator((3, 3), multiplier=4)
    out = StripeConfig.for_tensor((1, 5, 5, 24), (1, 5, 5, 8))  # channels 8i .. 8i+7 read input 2i, 2i+1
    needed = p.propagate(out)
    assert needed.shape == (1, 7, 7, 2) and needed.strides[3] == 2 and needed.stripes == (1, 1, 1, 3)
    assert needed.extent[3] == 6
    edge = p.propagate(StripeConfig.for_tensor((1, 5, 5, 20), (1, 5, 5, 8)))  # last stripe: channels 16..19
    assert edge.axis_stripe_sizes(3) == {2: 2, 1: 1}


def test_broadcast_operand_is_read_whole_on_size_1_axes():
    p = binary_elementwise_propagator((1, 1, 6, 1), (1, 4, 6, 8))
    needed = p.propagate(StripeConfig.for_tensor((1, 4, 6, 8), (1, 2, 3, 8)))
    assert needed.shape == (1, 1, 3, 1) and needed.stripes == (1, 1, 2, 1) and needed.order == (0, 0, 2, 0)


def test_rereads_count_output_stripes_along_unfollowed_axes():
    conv = conv2d_propagator((3, 3), in_channels=8)
    out = StripeConfig.for_tensor((1, 8, 8, 32), (1, 4, 8, 8))
    assert conv.propagate(out).stripes == (1, 2, 1, 1)
    assert conv.rereads(out) == 4  # four depth stripes each read the same input rows
    assert Propagator.identity(4).rereads(out) == 1


def test_chaining_fractional_axes():
    dw2, dw3 = depthwise_conv2d_propagator((1, 1), multiplier=2), depthwise_conv2d_propagator((1, 1), multiplier=3)
    chained = dw2.then(dw3)
    assert chained.transform[3][3] == Fraction(1, 6)
    out = StripeConfig.for_tensor((1, 2, 2, 36), (1, 2, 2, 12))
    assert chained.propagate(out) == dw3.propagate(dw2.propagate(out))
    doubling = Propagator.affine([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 2]], [0] * 4, [0] * 4)
    with pytest.raises(ValueError, match="not be exact"):
        dw2.then(doubling)


@given(
    first=st.tuples(st.integers(1, 5), st.integers(1, 3), st.integers(1, 2), st.integers(0, 2)),
    second=st.tuples(st.integers(1, 5), st.integers(1, 3), st.integers(1, 2), st.integers(0, 2)),
    extent=st.integers(1, 20), stripe=st.integers(1, 8),
)
def test_composition_equals_sequential_propagation(first, second, extent, stripe):
    def window(k, s, d, pad):
        return conv2d_propagator((k, k), in_channels=3, strides=(s, s), dilation=(d, d), padding=(pad, pad))

    p, q = window(*first), window(*second)
    out = StripeConfig.for_tensor((1, extent, extent, 3), (1, stripe, stripe, 3))
    assert p.then(q).propagate(out) == q.propagate(p.propagate(out))


def test_malformed_propagators_are_refused():
    with pytest.raises(TypeError, match="exact"):
        Propagator.affine([[0.5]], [0], [0])
    with pytest.raises(ValueError, match="axis-separable"):
        Propagator.affine([[1, 1]], [0], [0])
    with pytest.raises(ValueError, match="axis-separable"):
        Propagator.affine([[-1]], [0], [0])
    with pytest.raises(ValueError, match="last row"):
        Propagator(((1, 0), (1, 1)), (0,))
    with pytest.raises(ValueError, match="takes 4 axes"):
        conv2d_propagator((3, 3), 8).propagate(StripeConfig.for_tensor((4, 4), (2, 2)))
