"""The cost of one NPU operation (`codegen.operation_cost`) equals the simulator's estimate for the command Vela's
API generates from it, on the operations code generation builds; the cascader's cost of a whole primitive as one
stripe (`codegen.stripe_cost`) is that operation's cost."""
import math

import pytest
from ethosu.vela import api as vapi

from ethosu_tvm.arch.cycles import least_compute_cycles, memory_cycles
from ethosu_tvm.arch.system import CONSTANTS_REGION, DEFAULT_SYSTEM, SCRATCH_REGION
from ethosu_tvm.codegen import artifact as artifact_module
from ethosu_tvm.codegen.block_config import find_block_configs
from ethosu_tvm.codegen.operation_cost import costing, estimate_cycles
from ethosu_tvm.codegen.stripe_cost import stripe_buffering, stripe_cost
from ethosu_tvm.sim import Simulator
from ethosu_tvm.sim.stats import estimate
from ethosu_tvm.target import EthosuTarget
from ethosu_tvm.testing import models

from cost_support import SINGLE_OPS, codegen_operations
from sim_support import ACCELERATORS


@pytest.mark.parametrize("accelerator", ACCELERATORS)
@pytest.mark.parametrize("case", SINGLE_OPS)
def test_estimate_equals_simulator_on_codegen_streams(case, accelerator, monkeypatch):
    """One operation per primitive: the depth split (`test_depth_split.py`), which runs kws_first_conv on
    ethos-u55-64 as four, is left out."""
    monkeypatch.setattr(artifact_module, "part_depth", lambda depth: None)
    kind, params = SINGLE_OPS[case]
    graph, npu_ops, artifact = codegen_operations(models.make(kind, seed=3, **params), accelerator)
    npu_accelerator = EthosuTarget(accelerator).npu_accelerator
    assert tuple(vapi.npu_generate_register_command_stream(npu_ops, npu_accelerator)) == artifact.command_stream
    simulator = Simulator(accelerator)
    stats = [op for op in estimate(simulator.commands(artifact.driver_payload), simulator.accelerator).ops
             if op.kind != "DMA"]
    block_ops = [op for op in npu_ops if isinstance(op, vapi.NpuBlockOperation)]
    assert len(stats) == len(block_ops) == len(graph.ops)
    for sim_op, npu_op, primitive in zip(stats, block_ops, graph.ops):
        cost = estimate_cycles(npu_op, npu_accelerator)
        assert cost.cycles == sim_op.cycles
        assert cost.bytes_read == sum(sim_op.bytes_read.values())
        assert cost.bytes_written == sum(sim_op.bytes_written.values())
        weights_region = npu_op.weights[0].region if npu_op.weights else CONSTANTS_REGION
        assert cost.weight_bytes == sim_op.bytes_read.get(weights_region, 0)
        # The cascader's view of the whole primitive: the same operation, weights encoded as codegen encodes them
        # and read from flash, or (buffered) from the SRAM copy with its own block config.
        shapes = (primitive.ofm.tensor.shape, [o.tensor.shape for o in primitive.inputs])
        whole = stripe_cost(primitive, *shapes, npu_accelerator)
        if weights_region == SCRATCH_REGION:  # buffered: the operation reads the SRAM copy
            option = stripe_buffering(primitive, *shapes, npu_accelerator)
            assert (option.streamed, option.buffered) == (whole.cycles, cost.cycles) and whole.cycles > cost.cycles
            assert option.nbytes == npu_op.weights[0].length + npu_op.biases[0].length
        else:
            assert whole == cost


@pytest.mark.parametrize("case", SINGLE_OPS)
def test_the_ranking_bound_reads_the_operations_own_compute_terms(case):
    """`Costing.least_cycles` reads the compute bound's block-independent terms once per operation (a memo that
    must be the operation's own): for every block config of every kind of operation (a fully connected layer's OFM
    one row high among them: no compute bound), the bound is the larger of the memory cycles and
    `least_compute_cycles`, asked of that operation and block."""
    kind, params = SINGLE_OPS[case]
    _, npu_ops, _ = codegen_operations(models.make(kind, seed=3, **params), "ethos-u55-64")
    accelerator = EthosuTarget("ethos-u55-64").npu_accelerator
    for npu_op in (op for op in npu_ops if isinstance(op, vapi.NpuBlockOperation)):
        costed = costing(npu_op, accelerator, DEFAULT_SYSTEM)
        for block in find_block_configs(npu_op, accelerator):
            traffic = costed.traffic(block)
            compute = least_compute_cycles(costed.accelerator, costed.kind, costed.fused, costed.ifm, costed.ofm,
                                           costed.kernel, tuple(block), costed.acc_bits)
            assert costed.least_cycles(block, traffic) == max(math.ceil(memory_cycles(DEFAULT_SYSTEM, traffic)),
                                                              compute)
