"""The cascader counts the weight buffers code generation emits: in its proposals' memory and, with their DMAs
overlapping the operation before, in their cycles, so that a proposal's estimate is the simulator's elapsed time
of the stream built from it; the builds stay bit-exact with LiteRT."""
import numpy as np
import pytest

from ethosu_tvm.arch import find_accelerator
from ethosu_tvm.codegen import compile_npu_graph
from ethosu_tvm.codegen.cascade import cascade_proposals, cascade_schedule
from ethosu_tvm.codegen.memory import ConstantPool, plan
from ethosu_tvm.codegen.operations import OperationBuilder
from ethosu_tvm.codegen.tir_to_npu import translate
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
    """On ethos-u55-128 ResNet-8's first 32x32x16 convolution, streaming, reads flash for 12,288 of its 12,800
    cycles. With the second one's weights buffered, their DMA, issued after the first convolution, overlaps only
    its last 512 cycles and the second convolution waits for the rest: `choose_buffering` counts that wait from
    the code generator's choices, and the built stream runs it."""
    accelerator = "ethos-u55-128"
    graph, target = npu_graph(shared_model(RESNET8), accelerator), EthosuTarget(accelerator)
    stripes = translate(graph)
    builder = OperationBuilder(target.npu_accelerator, plan(graph, stripes)[0], ConstantPool(), target.system)
    for stripe in stripes[:2]:
        builder.build(graph.ops[stripe.op], stripe)
    first, second = builder.choices
    assert (first.streamed, first.overlap) == (12800, 512)
    wait = second.buffer.transfer - first.overlap
    artifact = compile_npu_graph(graph, target, buffered=frozenset({(1, 0)}))
    ops = estimate(Simulator(accelerator).commands(artifact.command_stream), find_accelerator(accelerator)).ops
    conv0, dma, conv1 = ops[:3]
    assert (conv0.kind, dma.kind, conv1.kind) == ("CONV", "DMA", "CONV")
    assert (conv0.finish, dma.cycles, dma.finish) == (12800, second.buffer.transfer, 12288 + dma.cycles)
    assert conv1.finish == dma.finish + conv1.cycles == conv0.finish + wait + second.buffer.cycles
