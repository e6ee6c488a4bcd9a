"""The cascader's stripe costs (`codegen.stripe_cost`) follow what code generation builds: a softmax costs its
sequence of operations as simulated, and an average pool no block fits costs the depthwise convolution code
generation falls back to."""
import numpy as np
import pytest
from ethosu.vela import api as vapi

from ethosu_tvm.codegen import block_config
from ethosu_tvm.codegen.stripe_cost import stripe_cost
from ethosu_tvm.legalize.ops import DepthwiseConv2D, Pooling, Requantize
from ethosu_tvm.sim import Simulator
from ethosu_tvm.sim.stats import estimate
from ethosu_tvm.target import EthosuTarget
from ethosu_tvm.testing import models

from cost_support import SINGLE_OPS, U55_128, codegen_operations


def test_average_pool_falls_back_to_depthwise_when_no_block_fits(monkeypatch, unremembered_block_configs):
    kind, params = SINGLE_OPS["avg_pool"]
    graph, _, _ = codegen_operations(models.make(kind, seed=0, **params), "ethos-u55-128")
    (pool,) = graph.ops
    assert (pool.pooling_type, pool.upscale) == ("AVG", False)
    real = block_config.find_block_configs
    monkeypatch.setattr(block_config, "find_block_configs", lambda op, accelerator: (
        [] if isinstance(op, vapi.NpuPoolingOperation) else real(op, accelerator)))
    block_config._choose_block_config.cache_clear()
    unit = Requantize(np.array([1 << 30], dtype=np.int64), np.array([31], dtype=np.int64))
    depthwise = DepthwiseConv2D(pool.ifm, pool.ofm, np.ones((64, 25, 5, 1), dtype=np.int8), 0,
                                np.zeros(64, dtype=np.int64), unit)
    shapes = ((1, 1, 1, 64), [(1, 25, 5, 64)], U55_128)
    assert stripe_cost(pool, *shapes) == stripe_cost(depthwise, *shapes)
    with pytest.raises(ValueError, match="no block config"):
        stripe_cost(Pooling("MAX", pool.ifm, pool.ofm, (25, 5)), *shapes)


@pytest.mark.parametrize("accelerator", ["ethos-u55-32", "ethos-u55-256"])
@pytest.mark.parametrize("shape", [(1, 12), (1, 4, 5, 16), (2, 1000)])
def test_softmax_cost_is_its_sequence_as_simulated(shape, accelerator):
    """A softmax primitive costs what the simulator measures for the stream code generation emits: its block
    operations, and what its LUT DMA outlasts the operation before it."""
    graph, _, artifact = codegen_operations(models.make("softmax", seed=3, in_shape=shape), accelerator)
    simulator = Simulator(accelerator)
    stats = estimate(simulator.commands(artifact.driver_payload), simulator.accelerator)
    measured = [op for op in stats.ops if op.kind != "DMA"]
    (softmax,) = graph.ops
    cost = stripe_cost(softmax, softmax.ofm.tensor.shape, [softmax.ifm.tensor.shape],
                       EthosuTarget(accelerator).npu_accelerator)
    assert cost.cycles == stats.elapsed_cycles >= sum(op.cycles for op in measured)
    assert cost.bytes_written == sum(sum(op.bytes_written.values()) for op in measured)
