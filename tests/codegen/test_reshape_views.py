"""Identity inputs written in their outputs' places (`legalize.reuse.reshape_views`): the reshape or copy goes,
the two tensors share one buffer, and every result stays bit-exact with LiteRT in the simulator."""
import pytest

from sim_support import ACCELERATORS, assert_model_exact, compile_model
from ethosu_tvm.testing import models

SHARED = dict(out_scale=0.05, out_zp=2)  # a concatenation's inputs share its quantization


def _count(artifact, op: str) -> int:
    return sum(summary.op == op for summary in artifact.ops)


def _box_head(seed: int = 0) -> bytes:
    """An SSD box head: two convolutions' outputs reshaped to (1, boxes, 4) and concatenated along the boxes."""
    net = models.Net(seed)
    x = net.input((1, 4, 4, 8), scale=0.05, zero_point=2)
    a = net.conv2d(x, out_channels=8, **SHARED)
    b = net.conv2d(net.max_pool2d(x), out_channels=8, kernel=(1, 1), **SHARED)
    net.output(net.concatenation([net.reshape(a, (1, 32, 4)), net.reshape(b, (1, 8, 4))], axis=1))
    return net.build()


@pytest.mark.parametrize("accelerator", ACCELERATORS)
def test_reshaped_outputs_are_written_into_the_concatenation(accelerator):
    """Each convolution writes its output straight into its rows of the model's output: no reshape copies, no
    concatenation copies, and nothing of them in the scratch, which holds the max pool's 2x2x8 output alone."""
    model = _box_head()
    assert_model_exact(model, accelerator, seeds=(0, 1, 2))
    _, (artifact,) = compile_model(model, accelerator)
    assert _count(artifact, "ethosu.identity") == 0 and _count(artifact, "ethosu.concatenate") == 0
    assert artifact.scratch_size == 2 * 2 * 8


def _shared_input(overwrite: bool, seed: int = 3) -> bytes:
    """A pool's output read by a convolution and reshaped; the reshaped tensor is then pooled, or (`overwrite`)
    added to another, and the ADD's output, pooled in turn, may take the reshaped tensor's buffer."""
    net = models.Net(seed)
    x = net.input((1, 6, 6, 8), scale=0.05, zero_point=2)
    pooled = net.max_pool2d(x, pool=(3, 3), stride=(1, 1), padding="SAME")
    reshaped = net.reshape(pooled, (1, 12, 3, 8))
    net.output(net.conv2d(pooled, out_channels=4, kernel=(1, 1)))
    if overwrite:
        reshaped = net.add(reshaped, net.input((1, 12, 3, 8), scale=0.05, zero_point=2))
    net.output(net.avg_pool2d(reshaped, pool=(2, 1), stride=(2, 1)))
    return net.build()


@pytest.mark.parametrize("accelerator", ACCELERATORS)
def test_an_input_others_read_is_viewed_only_where_its_place_is_kept(accelerator):
    """The convolution finds the pool's output where the reshape's output lives, unless an elementwise output may
    take that buffer over (it would overwrite what the convolution reads): then the reshape copies."""
    for overwrite, identities in ((False, 0), (True, 1)):
        model = _shared_input(overwrite)
        assert_model_exact(model, accelerator, seeds=(0, 1))
        assert _count(compile_model(model, accelerator)[1][0], "ethosu.identity") == identities


def test_an_input_two_reshapes_read_is_viewed_by_neither():
    """An input has one place: read by two reshapes, it stays in its own buffer and both copy it (the cascader
    costs both copies, as code generation issues them)."""
    net = models.Net(6)
    x = net.input((1, 6, 6, 8), scale=0.05, zero_point=2)
    pooled = net.max_pool2d(x, pool=(3, 3), stride=(1, 1), padding="SAME")
    net.output(net.avg_pool2d(net.reshape(pooled, (1, 12, 3, 8)), pool=(2, 1), stride=(2, 1)))
    net.output(net.avg_pool2d(net.reshape(pooled, (1, 3, 12, 8)), pool=(1, 2), stride=(1, 2)))
    model = net.build()
    assert_model_exact(model, "ethos-u55-128", seeds=(0,))
    assert _count(compile_model(model, "ethos-u55-128")[1][0], "ethosu.identity") == 2
