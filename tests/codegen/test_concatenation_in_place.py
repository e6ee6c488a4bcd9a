"""Concatenation inputs written in place by their producers: bit-exact with LiteRT in the simulator, no copy for
those inputs, and the scratch no larger than the concatenation's output plus what still needs a buffer of its own."""
import numpy as np
import pytest

import ethosu_tvm
from ethosu_tvm.testing import models
from ethosu_tvm.testing.reference import random_inputs, run_litert

from sim_support import ACCELERATORS, assert_model_exact, compile_model

SHARED = dict(out_scale=0.05, out_zp=2)  # a concatenation's inputs share its quantization


def _copies(artifact) -> int:
    return sum(summary.op == "ethosu.concatenate" for summary in artifact.ops)


def _bytes(*shapes) -> int:
    return sum(-(-int(np.prod(shape)) // 16) * 16 for shape in shapes)


def _two_pools(axis: int, seed: int = 1):
    """Pools of two inputs concatenated along `axis`, then a pool: no weights, so the scratch holds feature maps
    only."""
    net = models.Net(seed)
    x = net.input((1, 8, 8, 8), scale=0.05, zero_point=2)
    y = net.input((1, 8, 8, 5 if axis == 3 else 8), scale=0.05, zero_point=2)
    a = net.max_pool2d(x, pool=(3, 3), stride=(1, 1), padding="SAME")
    b = net.avg_pool2d(y, pool=(3, 3), stride=(1, 1), padding="SAME")
    net.output(net.max_pool2d(net.concatenation([a, b], axis=axis)))
    return net.build()


CONCATENATED = {1: (1, 16, 8, 8), 2: (1, 8, 16, 8), 3: (1, 8, 8, 13)}


@pytest.mark.parametrize("accelerator", ACCELERATORS)
@pytest.mark.parametrize("axis", CONCATENATED)
def test_producers_write_in_place(axis, accelerator):
    model = _two_pools(axis)
    assert_model_exact(model, accelerator, seeds=(0, 1, 2))
    _, (artifact,) = compile_model(model, accelerator)
    assert _copies(artifact) == 0
    assert artifact.scratch_size == _bytes(CONCATENATED[axis])  # the inputs take no memory of their own


@pytest.mark.parametrize("accelerator", ACCELERATORS)
@pytest.mark.parametrize("axis", CONCATENATED)
def test_convolutions_write_in_place(axis, accelerator):
    """Convolutions write strided OFMs into the concatenation, which a convolution then reads."""
    net = models.Net(axis)
    x = net.input((1, 8, 8, 8))
    a = net.conv2d(x, out_channels=5 if axis == 3 else 8, **SHARED)
    b = net.conv2d(x, out_channels=8, kernel=(1, 1), **SHARED)
    net.output(net.conv2d(net.concatenation([a, b], axis=axis), out_channels=4, kernel=(1, 1)))
    model = net.build()
    assert_model_exact(model, accelerator, seeds=(0, 1, 2))
    assert _copies(compile_model(model, accelerator)[1][0]) == 0


@pytest.mark.parametrize("accelerator", ACCELERATORS)
def test_only_what_qualifies_is_written_in_place(accelerator):
    """A model input and a tensor another operator also reads are copied; the max pool's output is written in
    place, into a concatenation that is itself written in place into the model's output."""
    net = models.Net(3)
    x = net.input((1, 6, 6, 8), scale=0.05, zero_point=2)
    z = net.input((1, 6, 6, 16), scale=0.05, zero_point=2)
    shared = net.avg_pool2d(x, pool=(3, 3), stride=(1, 1), padding="SAME")
    pooled = net.max_pool2d(x, pool=(3, 3), stride=(1, 1), padding="SAME")
    inner = net.concatenation([pooled, shared], axis=3)
    net.output(net.concatenation([inner, z], axis=2))
    net.output(net.add(shared, x))
    model = net.build()
    assert_model_exact(model, accelerator, seeds=(0, 1, 2))
    _, (artifact,) = compile_model(model, accelerator)
    assert _copies(artifact) == 2  # `shared` into `inner`, and `z` into the output
    # in scratch: only `shared` (the outputs have regions of their own; `pooled` and `inner` are inside output 0)
    assert artifact.scratch_size == _bytes((1, 6, 6, 8))


def test_inputs_of_one_concatenation_are_tried_together():
    """SPACE_TO_DEPTH by 3 regroups its 6x9x5 input (a copy into scratch), slices it three ways and concatenates
    the slices. One slice in place would hold the output's buffer from its copy on while the other two still need
    buffers of their own (736 bytes of scratch instead of 560), so alone none pays; the three together leave the
    regrouped input and the output (544). The output is then copied into its own shape: a reshape reads it whole,
    which does not keep its inputs from being placed in it."""
    model = models.make("space_to_depth", 0, block_size=3, in_shape=(1, 6, 9, 5))
    _, (artifact,) = compile_model(model, "ethos-u55-128")
    assert _copies(artifact) == 0 and artifact.scratch_size == _bytes((1, 2, 9, 15), (1, 2, 3, 45)) == 544
    assert_model_exact(model, "ethos-u55-128")


def test_a_ring_input_joins_a_ring_output_of_as_many_rows():
    """UNet's smallest cascade runs its last five operators in 12 stripes of one row: the 3x3 convolution's
    output (a ring of one 16x8 row) is concatenated along the depth into another ring of one row. Written in place,
    its 128-byte ring and its 12 copies go (7,328 bytes and 48 copies of the two concatenations' four inputs
    before); the stripes still equal LiteRT's."""
    model = models.make_graph("unet")
    target = "ethos-u -accelerator-config=ethos-u55-128 -enable-cascader=1 -enable-striping=1,c"
    module = ethosu_tvm.build(ethosu_tvm.from_tflite(model), target=target, cascader_sram_limit=7200)
    (artifact,) = [step.artifact for step in module.program.steps if hasattr(step, "artifact")]
    assert artifact.cascade.index == 0 and artifact.scratch_size == artifact.cascade.proposal.memory == 7328 - 16 * 8
    assert _copies(artifact) == 12 * 3
    for seed in (0, 1):
        inputs = random_inputs(model, seed)
        assert np.array_equal(list(module.run(inputs).values())[0], run_litert(model, inputs)[0])


def _skip_connection(seed: int, reader: str):
    """A pool's output concatenated with what `reader` makes of it (a U-Net's skip connection): a convolution,
    which reads through strides, or a reshape, which reads it as laid out in its own shape."""
    net = models.Net(seed)
    x = net.input((1, 8, 8, 8), scale=0.05, zero_point=2)
    skip = net.max_pool2d(x, pool=(3, 3), stride=(1, 1), padding="SAME")
    if reader == "conv2d":
        deep = net.conv2d(skip, out_channels=8, **SHARED)
    else:
        deep = net.reshape(net.reshape(skip, (1, 64, 8)), (1, 8, 8, 8))
    net.output(net.max_pool2d(net.concatenation([skip, deep], axis=3)))
    return net.build()


@pytest.mark.parametrize("accelerator", ACCELERATORS)
def test_an_input_a_convolution_also_reads_is_written_in_place(accelerator):
    """The convolution reads the pool's output in its place in the concatenation's output (an unrolled LSTM's
    output states are read by the next step and concatenated in the same way); a reshape cannot, so there the
    pool's output is copied."""
    model = _skip_connection(5, "conv2d")
    assert_model_exact(model, accelerator, seeds=(0, 1, 2))
    assert _copies(compile_model(model, accelerator)[1][0]) == 0
    model = _skip_connection(5, "reshape")
    assert_model_exact(model, accelerator, seeds=(0, 1))
    assert _copies(compile_model(model, accelerator)[1][0]) == 1
