"""Weight buffering: a convolution that re-reads its weights from flash for many OFM blocks gets them DMAed into a
planned SRAM buffer first, when the cost model says that pays; the builds stay bit-exact with LiteRT."""
import itertools
import math

import numpy as np
import pytest

from ethosu_tvm.arch import find_accelerator
from ethosu_tvm.arch.system import find_system
from ethosu_tvm.cascader.buffering import choose_buffering
from ethosu_tvm.codegen.operation_cost import estimate_cycles
from ethosu_tvm.codegen import artifact as artifact_module
from ethosu_tvm.codegen import compile_npu_graph
from ethosu_tvm.codegen.memory import SCRATCH_REGION, ConstantPool, plan, weight_buffer
from ethosu_tvm.codegen.operations import OperationBuilder
from ethosu_tvm.codegen.tir_to_npu import translate
from ethosu_tvm.frontend.importer import from_tflite
from ethosu_tvm.legalize import legalize
from ethosu_tvm.legalize.ops import Conv2D, DepthwiseConv2D
from ethosu_tvm.partition import partition_for_ethosu
from ethosu_tvm.sim import Simulator
from ethosu_tvm.sim.stats import estimate
from ethosu_tvm.target import EthosuTarget
from ethosu_tvm.testing import models, shared_model
from ethosu_tvm.testing.reference import random_inputs, run_litert

from sim_support import run_artifact

ACCELERATORS = ("ethos-u55-128", "ethos-u55-256")
SEEDS = (0, 1)


def weight_heavy_conv(depth: int = 32) -> bytes:
    """A 3x3 convolution of a 32x32 feature map: many OFM blocks in height x width, each fetching the weights."""
    return models.make("conv2d", seed=4, in_shape=(1, 32, 32, depth), out_channels=depth)


def graph_of(model: bytes, accelerator: str):
    mod, _ = partition_for_ethosu(from_tflite(model), accelerator)
    (graph,) = legalize(mod)
    return graph


def stream_ops(artifact, memory_mode="Shared_Sram"):
    commands = Simulator(artifact.accelerator).commands(artifact.command_stream)
    return estimate(commands, find_accelerator(artifact.accelerator),
                    find_system(memory_mode=memory_mode)).ops


def elapsed(artifact) -> int:
    """The simulator's estimate of the stream's cycles, DMAs overlapping the operations as its waits allow."""
    commands = Simulator(artifact.accelerator).commands(artifact.command_stream)
    return estimate(commands, find_accelerator(artifact.accelerator)).elapsed_cycles


def assert_exact(artifact, model):
    for seed in SEEDS:
        inputs = random_inputs(model, seed)
        (got,), (ref,) = run_artifact(artifact, inputs), run_litert(model, inputs)
        assert np.array_equal(got.reshape(ref.shape), ref), f"seed {seed}"


@pytest.mark.parametrize("accelerator", ACCELERATORS)
def test_buffering_pays_and_its_numbers(accelerator):
    """The cost model's numbers for the chosen blocks: streaming re-reads the encoded weight and scale streams from
    flash (1 byte/cycle) once per OFM block in height x width; the DMA reads them once (plus flash's 64-cycle
    latency), after which the operation, its block config chosen for weights in SRAM, re-reads them from SRAM
    (8 bytes/cycle) behind its compute."""
    model = weight_heavy_conv()
    graph = graph_of(model, accelerator)
    npu_accelerator = EthosuTarget(accelerator).npu_accelerator
    stripes = translate(graph)
    placements, *_ = plan(graph, stripes)
    builder = OperationBuilder(npu_accelerator, placements, ConstantPool())
    (conv,) = builder.build(graph.ops[0], stripes[0])  # not among the stripes to buffer: the conv streams
    (choice,) = builder.choices
    assert builder.weight_buffers == {}
    block = conv.block_config
    blocks_hw = math.ceil(32 / block.height) * math.ceil(32 / block.width)
    streams = conv.weights[0].length + conv.biases[0].length
    assert (tuple(block), blocks_hw, streams) == {"ethos-u55-128": ((8, 8, 16), 16, 9552),
                                                  "ethos-u55-256": ((8, 16, 16), 8, 9552)}[accelerator]
    assert choice.streamed == streams * blocks_hw > estimate_cycles(conv, npu_accelerator).compute_cycles
    copy = builder.convolution(graph.ops[0], stripes[0], "conv", SCRATCH_REGION, encode=False)
    assert choice.buffer.nbytes == copy.weights[0].length + copy.biases[0].length
    assert choice.buffer.transfer == choice.buffer.nbytes + 64
    assert choice.buffer.cycles == estimate_cycles(copy, npu_accelerator).compute_cycles
    assert choose_buffering(builder.choices).buffered == (True,)


def test_buffering_that_does_not_pay_streams():
    """On u55-256 an 8-deep 32x32 conv has 6 OFM blocks: 6 x 752 flash bytes cost less than the 816-cycle DMA
    plus the operation reading the copy, so the conv reads the flash and nothing is planned for it."""
    accelerator = "ethos-u55-256"
    model = weight_heavy_conv(8)
    graph = graph_of(model, accelerator)
    stripes = translate(graph)
    builder = OperationBuilder(EthosuTarget(accelerator).npu_accelerator, plan(graph, stripes)[0], ConstantPool())
    builder.build(graph.ops[0], stripes[0])
    (choice,) = builder.choices
    assert 6 * 752 <= choice.streamed < choice.buffer.transfer + choice.buffer.cycles
    artifact = compile_npu_graph(graph, EthosuTarget(accelerator))
    (conv,) = stream_ops(artifact)
    assert conv.kind == "CONV" and conv.bytes_read[0] == 752 and artifact.scratch_size == 0
    assert_exact(artifact, model)


@pytest.mark.parametrize("accelerator, system_config", [(a, None) for a in ACCELERATORS]
                         + [("ethos-u65-512", "Ethos_U65_Embedded")])
def test_buffered_build_dmas_weights_into_planned_scratch_and_is_exact(accelerator, system_config):
    """On the U65-512 (with weights in flash: from its DRAMs, buffering does not pay here) the DMA copies both cores'
    weight and scale/bias streams."""
    model = weight_heavy_conv()
    graph = graph_of(model, accelerator)
    artifact = compile_npu_graph(graph, EthosuTarget(accelerator, system_config=system_config))
    dma, conv = stream_ops(artifact)
    assert dma.kind == "DMA" and set(dma.bytes_read) == {0} and set(dma.bytes_written) == {SCRATCH_REGION}
    assert conv.kind == "CONV" and 0 not in conv.bytes_read  # weights and scales come from the SRAM copy
    # The I/O have regions of their own: the scratch is the weight buffer, placed by the memory plan.
    streams = dma.bytes_written[SCRATCH_REGION]
    stripes = translate(graph)
    placements, scratch, _ = plan(graph, stripes, weight_buffers={weight_buffer(stripes[0]): streams})
    assert placements[weight_buffer(stripes[0])].region == SCRATCH_REGION
    assert artifact.scratch_size == scratch == streams
    streamed = compile_npu_graph(graph, EthosuTarget(accelerator, system_config=system_config, memory_mode="Sram_Only"))
    assert streamed.scratch_size == 0
    assert_exact(artifact, model)
    assert_exact(artifact, model)


@pytest.mark.parametrize("accelerator", ACCELERATORS)
def test_sram_only_does_not_buffer(accelerator):
    """With the constants in SRAM a copy only adds a transfer: the conv reads its weights where they are."""
    model = weight_heavy_conv()
    artifact = compile_npu_graph(graph_of(model, accelerator), EthosuTarget(accelerator, memory_mode="Sram_Only"))
    (conv,) = stream_ops(artifact, "Sram_Only")
    assert conv.kind == "CONV" and conv.bytes_read[0] > 0
    assert_exact(artifact, model)


def test_buffer_left_out_when_it_exceeds_the_sram_limit(monkeypatch):
    """The buffer needs 9,552 bytes of scratch: within a limit of 9,552 the conv buffers, below it it streams whole
    (split along its depth, each half's buffer fits: `test_depth_split`)."""
    accelerator = "ethos-u55-128"
    model = weight_heavy_conv()
    graph = graph_of(model, accelerator)
    assert compile_npu_graph(graph, EthosuTarget(accelerator), sram_limit=9552).scratch_size == 9552
    split = compile_npu_graph(graph, EthosuTarget(accelerator), sram_limit=9551)
    assert split.scratch_size <= 9551 and [op.ofm_shape for op in stream_ops(split) if op.kind == "CONV"] == \
        [(32, 32, 16)] * 2
    assert_exact(split, model)
    monkeypatch.setattr(artifact_module, "part_depth", lambda depth: None)
    artifact = compile_npu_graph(graph, EthosuTarget(accelerator), sram_limit=9551)
    (conv,) = stream_ops(artifact)
    assert artifact.scratch_size == 0 and conv.bytes_read[0] == 9552
    assert elapsed(split) < elapsed(artifact)
    assert_exact(artifact, model)


def test_a_limit_keeps_the_fastest_buffers_that_fit():
    """KWS on ethos-u55-256 buffers all its weights in 22,080 bytes (two 8,000-byte feature maps, a 1x1
    convolution's 4,752-byte buffer and a depthwise one's 1,328 while the first's DMA overlaps it). Within 20,752
    bytes a 1x1 buffer fits but not beside a depthwise one: the build buffers the 1x1 convolutions, and the
    depthwise ones stream frugally (26x6x16: one OFM block in height x width, 4,369 cycles of which 1,328 read
    flash, against 4,038 of which all but 54 do), so that each 1x1 convolution's DMA runs under the depthwise one.
    That is faster than every set of 1x1 buffers that fits with the depthwise convolutions streaming as fast as
    they can on their own (all 32 tried, 69,285 cycles at best, which this build took before the flash port
    swayed block configs), and than streaming everything (which it did before that: the largest buffer was left
    out until all were)."""
    accelerator = "ethos-u55-256"
    model = shared_model("mlperf_tiny_kws_dscnn_int8.tflite")
    graph = graph_of(model, accelerator)
    target = EthosuTarget(accelerator)
    assert compile_npu_graph(graph, target).scratch_size == 2 * 8000 + 4752 + 1328
    limited = compile_npu_graph(graph, target, sram_limit=20752)
    assert limited.scratch_size == 2 * 8000 + 4752
    pointwise = [i for i, op in enumerate(graph.ops) if not isinstance(op, DepthwiseConv2D)
                 and isinstance(op, Conv2D) and op.kernel == (1, 1)]
    fitting = []
    for count in range(len(pointwise) + 1):
        for chosen in itertools.combinations(pointwise, count):
            artifact = compile_npu_graph(graph, target, buffered=frozenset((i, 0) for i in chosen))
            if artifact.scratch_size <= 20752:
                fitting.append(elapsed(artifact))
    assert len(fitting) == 2 ** len(pointwise) == 32
    assert elapsed(limited) == 58661 < min(fitting) == 69285 < fitting[0]  # fitting[0]: nothing buffered
    assert [summary.block_config for summary in limited.ops[1:9:2]] == [(26, 6, 16)] * 4
    assert_exact(limited, model)


def test_a_convolution_streams_frugally_when_the_next_transfer_runs_under_it():
    """KWS on ethos-u55-256: the first convolution streams its 4,448 weight and scale bytes (no operation before it
    for a DMA to overlap). With the block config of its fewest cycles (26x2x16: 3 OFM blocks in height x width,
    13,344 cycles all reading flash) the first depthwise convolution's DMA waited for it on the flash port; with
    14x6x16 (2 blocks) it takes 14,041 cycles, 8,896 of them reading flash, and the 1,392-cycle DMA runs under it:
    the stream takes 695 cycles fewer (54,741 before)."""
    accelerator = "ethos-u55-256"
    model = shared_model("mlperf_tiny_kws_dscnn_int8.tflite")
    artifact = compile_npu_graph(graph_of(model, accelerator), EthosuTarget(accelerator))
    conv, dma, depthwise = stream_ops(artifact)[:3]
    assert artifact.ops[0].block_config == (14, 6, 16)
    assert (conv.cycles, conv.memory_cycles, conv.bytes_read[0]) == (14041, 8896, 4448)
    assert dma.kind == "DMA" and dma.finish == 8896 + 1392 < conv.finish
    assert depthwise.finish == 14041 + 4038 and elapsed(artifact) == 54741 - 695
    assert_exact(artifact, model)
