"""StripeConfig: exact stripe counting with edge stripes, clipping to a tensor, and the candidate stripe shapes."""
import itertools
import math
from collections import Counter
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ethosu_tvm.cascader import StripeConfig, candidate_stripe_configs, candidate_stripe_shapes, split_sizes


def test_321x212_in_64x64_stripes():
    config = StripeConfig.for_tensor((1, 321, 212, 16), (1, 64, 64, 16))
    assert config.stripes == (1, 6, 4, 1) and config.order == (0, 1, 2, 0)
    # 321 = 5*64 + 1 and 212 = 3*64 + 20
    assert config.stripe_counts() == {
        (1, 64, 64, 16): 15,
        (1, 64, 20, 16): 5,
        (1, 1, 64, 16): 3,
        (1, 1, 20, 16): 1,
    }
    assert sum(config.stripe_counts().values()) == config.num_stripes == 24
    assert config.covered_volume() == 321 * 212 * 16


def _brute_force_counts(config: StripeConfig, within):
    """Visit every stripe of the grid one by one and clip it: the definition stripe_counts must match."""
    counts = Counter()
    for index in itertools.product(*(range(n) for n in config.stripes)):
        shape = []
        for axis, i in enumerate(index):
            start = config.offset[axis] + math.floor(i * config.strides[axis])
            end = min(start + config.shape[axis], config.offset[axis] + config.extent[axis])
            if within is not None:
                start, end = max(start, 0), min(end, within[axis])
            shape.append(end - start)
        if min(shape) > 0:
            counts[tuple(shape)] += 1
    return dict(counts)


@st.composite
def configs(draw):
    ndim = draw(st.integers(1, 3))
    shape, extent, strides, stripes, offset, order = [], [], [], [], [], []
    for _ in range(ndim):
        stripes.append(draw(st.integers(1, 5)))
        shape.append(draw(st.integers(0, 9)))
        strides.append(draw(st.integers(0, 9) | st.fractions(0, 6, max_denominator=4)))
        extent.append(draw(st.integers(0, 40)))
        offset.append(draw(st.integers(-4, 4)))
        order.append(len(order) + 1 if stripes[-1] > 1 else draw(st.integers(0, 1)))
    within = draw(st.none() | st.tuples(*(st.integers(0, 30) for _ in range(ndim))))
    return StripeConfig(shape, extent, strides, order, stripes, offset), within


@given(configs())
def test_stripe_counts_match_stripe_by_stripe_enumeration(case):
    config, within = case
    counts = config.stripe_counts(within)
    assert counts == _brute_force_counts(config, within)
    # Σ count × volume is the product over axes of the summed stripe sizes.
    per_axis = [
        sum(size * n for size, n in config.axis_stripe_sizes(a, None if within is None else within[a]).items())
        for a in range(config.ndim)
    ]
    assert config.covered_volume(within) == sum(n * math.prod(s) for s, n in counts.items()) == math.prod(per_axis)


@given(st.lists(st.tuples(st.integers(1, 400), st.integers(1, 70)), min_size=1, max_size=4))
def test_tiling_a_tensor_covers_it_exactly_once(axes):
    tensor = tuple(t for t, _ in axes)
    config = StripeConfig.for_tensor(tensor, tuple(s for _, s in axes))
    assert config.covered_volume() == math.prod(tensor)
    assert sum(config.stripe_counts().values()) == config.num_stripes
    assert config.covered_volume(within=tensor) == math.prod(tensor)


def test_fractional_strides_and_negative_offsets():
    config = StripeConfig((3,), (9,), (Fraction(5, 2),), (1,), (4,), (-1,))
    # starts -1, 1, 4, 6 (-1 + floor(i*5/2)); the region ends at -1 + 9 = 8, so the last stripe keeps 2
    assert config.axis_stripe_sizes(0) == {3: 3, 2: 1}
    # inside [0, 8) the first stripe also loses its element at -1
    assert config.axis_stripe_sizes(0, within=8) == {3: 2, 2: 2}


def test_invalid_configs_are_refused():
    with pytest.raises(ValueError, match="differ in length"):
        StripeConfig((1, 2), (1,), (1,), (0,), (1,), (0,))
    with pytest.raises(ValueError, match="order 0"):
        StripeConfig((2,), (4,), (2,), (0,), (2,), (0,))
    with pytest.raises(TypeError, match="exact"):
        StripeConfig((2,), (4,), (2.0,), (1,), (2,), (0,))
    with pytest.raises(TypeError, match="integers"):
        StripeConfig((Fraction(1, 2),), (4,), (2,), (1,), (2,), (0,))


def test_split_sizes():
    assert split_sizes(321) == (321, 161, 81, 41, 1)
    assert split_sizes(5) == (5, 3, 2, 1)
    assert split_sizes(1) == (1,)
    assert split_sizes(100, halvings=2, single=False) == (100, 50, 25)
    assert split_sizes(100, align=16) == (100, 64, 32, 16)


def test_candidate_stripe_shapes_split_h_and_w_and_keep_full_depth():
    shapes = candidate_stripe_shapes((1, 40, 20, 24))
    assert shapes[0] == (1, 40, 20, 24)  # the unstriped baseline comes first
    assert len(shapes) == len(split_sizes(40)) * len(split_sizes(20)) == 25
    assert {s[3] for s in shapes} == {24} and {s[0] for s in shapes} == {1}
    assert {s[1] for s in shapes} == {40, 20, 10, 5, 1}
    assert shapes == candidate_stripe_shapes((1, 40, 20, 24))  # deterministic
    assert candidate_stripe_shapes((1, 8, 8, 32), axes=(3,), halvings=1, single=False, align=(1, 1, 1, 16)) == [
        (1, 8, 8, 32),
        (1, 8, 8, 16),
    ]
    configs_ = candidate_stripe_configs((1, 40, 20, 24))
    assert [c.shape for c in configs_] == shapes
    assert all(c.covered_volume() == 40 * 20 * 24 for c in configs_)
