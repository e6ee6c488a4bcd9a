"""Hypothesis sweeps: convolution, depthwise and pooling shapes, strides, paddings, dilations and quantization."""
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ethosu_tvm.testing import models

from te_support import assert_single_subgraph_exact

SWEEP = settings(max_examples=30, deadline=None)
sizes = st.integers(1, 11)
kernels = st.tuples(st.integers(1, 5), st.integers(1, 5))
strides = st.tuples(st.integers(1, 3), st.integers(1, 3))
dilations = st.tuples(st.integers(1, 2), st.integers(1, 2))
paddings = st.sampled_from(["SAME", "VALID"])
activations = st.sampled_from(["NONE", "RELU", "RELU6"])
quant = st.fixed_dictionaries({
    "in_scale": st.floats(0.002, 0.2),
    "in_zp": st.integers(-128, 127),
    "out_zp": st.integers(-128, 127),
})


def _fits(size: int, kernel: int, dilation: int, padding: str) -> bool:
    return padding == "SAME" or size >= dilation * (kernel - 1) + 1


@SWEEP
@given(h=sizes, w=sizes, c=st.integers(1, 8), out_channels=st.integers(1, 8), kernel=kernels, stride=strides,
       dilation=dilations, padding=paddings, activation=activations, per_channel=st.booleans(), q=quant,
       seed=st.integers(0, 1000))
def test_conv2d_sweep(h, w, c, out_channels, kernel, stride, dilation, padding, activation, per_channel, q, seed):
    assume(_fits(h, kernel[0], dilation[0], padding) and _fits(w, kernel[1], dilation[1], padding))
    model = models.make("conv2d", seed=seed, in_shape=(1, h, w, c), out_channels=out_channels, kernel=kernel,
                        stride=stride, dilation=dilation, padding=padding, activation=activation,
                        per_channel=per_channel, **q)
    assert_single_subgraph_exact(model, seeds=(seed,))


@SWEEP
@given(h=sizes, w=sizes, c=st.integers(1, 8), kernel=kernels, stride=strides, dilation=dilations, padding=paddings,
       activation=activations, multiplier=st.integers(1, 3), q=quant, seed=st.integers(0, 1000))
def test_depthwise_conv2d_sweep(h, w, c, kernel, stride, dilation, padding, activation, multiplier, q, seed):
    assume(_fits(h, kernel[0], dilation[0], padding) and _fits(w, kernel[1], dilation[1], padding))
    if multiplier > 1:
        c = 1  # the NPU takes depth multipliers only on single-channel IFMs
    model = models.make("depthwise_conv2d", seed=seed, in_shape=(1, h, w, c), kernel=kernel, stride=stride,
                        dilation=dilation, padding=padding, activation=activation, depth_multiplier=multiplier, **q)
    assert_single_subgraph_exact(model, seeds=(seed,))


@SWEEP
@given(kind=st.sampled_from(["avg_pool2d", "max_pool2d"]), h=sizes, w=sizes, c=st.integers(1, 8),
       pool=st.tuples(st.integers(1, 4), st.integers(1, 4)), stride=strides, padding=paddings,
       activation=activations, in_scale=st.floats(0.002, 0.2), in_zp=st.integers(-128, 127),
       seed=st.integers(0, 1000))
def test_pooling_sweep(kind, h, w, c, pool, stride, padding, activation, in_scale, in_zp, seed):
    assume(_fits(h, pool[0], 1, padding) and _fits(w, pool[1], 1, padding))
    model = models.make(kind, seed=seed, in_shape=(1, h, w, c), pool=pool, stride=stride, padding=padding,
                        activation=activation, in_scale=in_scale, in_zp=in_zp)
    assert_single_subgraph_exact(model, seeds=(seed,))
