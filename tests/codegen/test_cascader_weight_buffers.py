"""The cascader counts the weight buffers code generation emits: in its proposals' memory and, with their DMAs
overlapping the operation before, in their cycles, so that a proposal's estimate is the simulator's elapsed time
of the stream built from it; the builds stay bit-exact with LiteRT."""
import numpy as np
import pytest

from ethosu_tvm.arch import find_accelerator
from ethosu_tvm.codegen import compile_npu_graph
from ethosu_tvm.codegen.cascade import cascade_proposals, cascade_schedule
from ethosu_tvm.frontend.importer import from_tflite
from ethosu_tvm.host import fuse_host_ops
from ethosu_tvm.legalize import legalize
from ethosu_tvm.partition import partition_for_ethosu
from ethosu_tvm.sim import Simulator
from ethosu_tvm.sim.stats import estimate
from ethosu_tvm.target import EthosuTarget
from ethosu_tvm.testing import shared_model
from ethosu_tvm.testing.reference import random_inputs, run_litert

from sim_support import run_artifact

RESNET8 = "mlperf_tiny_ic_resnet8_int8.tflite"


def npu_graph(model: bytes, accelerator: str):
    mod, _ = partition_for_ethosu(from_tflite(model), EthosuTarget(accelerator))
    (graph,) = legalize(fuse_host_ops(mod))
    return graph


def elapsed(artifact) -> int:
    commands = Simulator(artifact.accelerator).commands(artifact.command_stream)
    return estimate(commands, find_accelerator(artifact.accelerator)).elapsed_cycles


@pytest.mark.parametrize("accelerator", ["ethos-u55-128", "ethos-u55-256"])
def test_estimate_is_the_built_streams_elapsed_time_with_weight_buffers(accelerator):
    """ResNet-8 (one NPU graph, softmax included): at the smallest and the fastest proposal, and at one between
    that buffers weights, the estimated cycles are the built stream's, the scratch fits the estimated memory and
    the outputs are LiteRT's."""
    model = shared_model(RESNET8)
    graph, target = npu_graph(model, accelerator), EthosuTarget(accelerator)
    proposals = cascade_proposals(graph, target)
    buffering = [index for index, proposal in enumerate(proposals) if proposal.buffered]
    assert buffering and buffering[-1] == len(proposals) - 1  # the fastest proposal buffers
    inputs = random_inputs(model, 0)
    (expected,) = run_litert(model, inputs)
    for index in sorted({0, buffering[len(buffering) // 2], len(proposals) - 1}):
        proposal = proposals[index]
        artifact = compile_npu_graph(graph, target, cascade_schedule(proposal), buffered=proposal.buffered)
        assert elapsed(artifact) == proposal.cycles, index
        assert artifact.scratch_size <= proposal.memory, index
        (got,) = run_artifact(artifact, inputs)
        assert np.array_equal(got.reshape(expected.shape), expected), index


def test_weight_dma_waits_for_the_flash_reads_of_the_operation_before():
    """On ethos-u55-128 the fastest ResNet-8 proposal buffers the weights of its first 32x32x16 convolution
    (2,720 bytes, a 2,784-cycle DMA from flash). The first convolution reads flash for 12,288 of its 12,800 cycles,
    so the DMA overlaps only its last 512 and the buffered convolution waits 2,272 cycles: in the plans (the second
    carries its transfer, the proposal takes back the 512) and in the built stream alike."""
    accelerator = "ethos-u55-128"
    graph, target = npu_graph(shared_model(RESNET8), accelerator), EthosuTarget(accelerator)
    fastest = cascade_proposals(graph, target)[-1]
    first, second = fastest.plans[:2]
    assert first.buffered == () and second.buffered == ((1, 0),)
    assert (first.cycles, first.exit_cycles) == (12800, 512)
    assert (second.entry_buffer, second.entry_transfer) == (2720, 2784)
    assert second.memory == second.exit_memory >= first.exit_memory + 2720  # both live during the second one
    artifact = compile_npu_graph(graph, target, cascade_schedule(fastest), buffered=fastest.buffered)
    ops = estimate(Simulator(accelerator).commands(artifact.command_stream), find_accelerator(accelerator)).ops
    conv0, dma, conv1 = ops[:3]
    assert (conv0.kind, dma.kind, conv1.kind) == ("CONV", "DMA", "CONV")
    assert (conv0.finish, dma.cycles, dma.finish) == (12800, 2784, 12288 + 2784)
    assert conv1.finish == dma.finish + conv1.cycles
    assert conv1.finish - second.cycles + min(second.entry_transfer, first.exit_cycles) == first.cycles
