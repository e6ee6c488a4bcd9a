"""Elementwise outputs written over an input that nothing else reads (`legalize.reuse`): bit-exact with LiteRT in
the simulator, and the scratch one feature map smaller; inputs that another operator reads, that broadcast, or
that the model passes in keep their buffers."""
import pytest

from ethosu_tvm.testing import models

from sim_support import ACCELERATORS, assert_model_exact, compile_model

SHAPE = (1, 16, 16, 8)
MAP = 16 * 16 * 8  # bytes of one feature map of SHAPE


def _pools_then(combine, seed: int = 1, read_again: bool = False):
    """a = max pool(x); b = average pool(a); combine(a, b) → c; max pool(c) → output. `a` is read twice, `b` by
    the combination only (unless `read_again`: then also by a second output's pool)."""
    net = models.Net(seed)
    x = net.input(SHAPE, scale=0.05, zero_point=2)
    a = net.max_pool2d(x, pool=(3, 3), stride=(1, 1), padding="SAME")
    b = net.avg_pool2d(a, pool=(3, 3), stride=(1, 1), padding="SAME")
    net.output(net.max_pool2d(combine(net, a, b), pool=(3, 3), stride=(1, 1), padding="SAME"))
    if read_again:
        net.output(net.max_pool2d(b, pool=(3, 3), stride=(1, 1), padding="SAME"))
    return net.build()


COMBINATIONS = {
    "add": lambda net, a, b: net.add(a, b, out_scale=0.07, out_zp=-3),
    "sub": lambda net, a, b: net.sub(a, b, out_scale=0.03, out_zp=1),
    "mul": lambda net, a, b: net.mul(a, b, out_scale=0.2, out_zp=0),
}


@pytest.mark.parametrize("accelerator", ACCELERATORS)
@pytest.mark.parametrize("combination", COMBINATIONS)
def test_the_output_takes_the_buffer_of_an_input_read_once(combination, accelerator):
    """At the combination a, b and c are live; c takes b's buffer, so the scratch holds two feature maps."""
    model = _pools_then(COMBINATIONS[combination])
    assert_model_exact(model, accelerator, seeds=(0, 1, 2))
    _, (artifact,) = compile_model(model, accelerator)
    assert artifact.scratch_size == 2 * MAP


@pytest.mark.parametrize("accelerator", ["ethos-u55-64", "ethos-u55-256"])
def test_an_input_another_operator_reads_keeps_its_buffer(accelerator):
    model = _pools_then(COMBINATIONS["add"], read_again=True)
    assert_model_exact(model, accelerator, seeds=(0, 1))
    _, (artifact,) = compile_model(model, accelerator)
    assert artifact.scratch_size == 3 * MAP


@pytest.mark.parametrize("accelerator", ["ethos-u55-32", "ethos-u55-128"])
def test_a_broadcast_input_or_a_model_input_keeps_its_buffer(accelerator):
    """add(a, mean(a)): `a` is read twice and the mean broadcasts, so a, the mean and the sum are all live; a model
    input added to a pool stays where the application put it."""
    net = models.Net(4)
    x = net.input(SHAPE, scale=0.05, zero_point=2)
    a = net.max_pool2d(x, pool=(3, 3), stride=(1, 1), padding="SAME")
    mean = net.mean(a, axis=(1, 2), keep_dims=True)
    net.output(net.max_pool2d(net.add(a, mean), pool=(3, 3), stride=(1, 1), padding="SAME"))
    model = net.build()
    assert_model_exact(model, accelerator, seeds=(0, 1))
    _, (artifact,) = compile_model(model, accelerator)
    assert artifact.scratch_size == 2 * MAP + 16  # the mean's 8 bytes take 16

    net = models.Net(5)
    x = net.input(SHAPE, scale=0.05, zero_point=2)
    pooled = net.max_pool2d(x, pool=(3, 3), stride=(1, 1), padding="SAME")
    net.output(net.max_pool2d(net.add(x, pooled), pool=(3, 3), stride=(1, 1), padding="SAME"))
    model = net.build()
    assert_model_exact(model, accelerator, seeds=(0, 1))
    _, (artifact,) = compile_model(model, accelerator)
    assert artifact.scratch_size == MAP  # the sum takes the pool's buffer; x has a region of its own
