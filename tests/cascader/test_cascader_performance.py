"""Code generation's cost model (`codegen.operation_cost`, `block_config`, `weight_stream`, `stripe_cost`): its
estimates equal the simulator's on the streams code generation produces, the block config it picks is the fastest
valid one, weight traversal follows Vela, and the stripe costs the cascader ranks plans by behave."""
import copy
import tempfile
from pathlib import Path

import numpy as np
import pytest
from ethosu.vela import api as vapi

from ethosu_tvm.arch.system import DEFAULT_SYSTEM
from ethosu_tvm.codegen import block_config, compile_npu_graph
from ethosu_tvm.codegen.artifact import build_operations
from ethosu_tvm.codegen.block_config import choose_block_config, find_block_configs
from ethosu_tvm.codegen.memory import CONSTANTS_REGION, SCRATCH_REGION
from ethosu_tvm.codegen.operation_cost import costing, estimate_cycles
from ethosu_tvm.codegen.stripe_cost import stripe_buffering, stripe_cost
from ethosu_tvm.codegen.tir_to_npu import translate
from ethosu_tvm.codegen.weight_stream import block_traversal, convolution_traversal
from ethosu_tvm.frontend.importer import from_tflite
from ethosu_tvm.legalize import legalize
from ethosu_tvm.legalize.ops import (
    BinaryElementwise,
    Conv2D,
    DepthwiseConv2D,
    Identity,
    Padding,
    Pooling,
)
from ethosu_tvm.partition import partition_for_ethosu
from ethosu_tvm.sim import Simulator, operation, vela_tflite
from ethosu_tvm.sim.stats import estimate
from ethosu_tvm.sim.stream import operations
from ethosu_tvm.sim.vela_compile import compile_model
from ethosu_tvm.target import EthosuTarget
from ethosu_tvm.testing import models, shared_model
from ethosu_tvm.testing.reference import random_inputs, run_litert

from cascader_support import UNIT, operand

PART_KERNEL, DEPTH_FIRST = vapi.NpuBlockTraversal.PART_KERNEL_FIRST, vapi.NpuBlockTraversal.DEPTH_FIRST
U55_128 = vapi.NpuAccelerator.Ethos_U55_128
U55 = ["ethos-u55-32", "ethos-u55-64", "ethos-u55-128", "ethos-u55-256"]
SINGLE_OPS = {
    "kws_first_conv": ("conv2d", dict(in_shape=(1, 49, 10, 1), out_channels=64, kernel=(10, 4), stride=(2, 2))),
    "conv3x3_depth32": ("conv2d", dict(in_shape=(1, 12, 12, 32), out_channels=24)),
    "depthwise": ("depthwise_conv2d", dict(in_shape=(1, 16, 16, 24), stride=(2, 2))),
    "fully_connected": ("fully_connected", dict(in_shape=(1, 1, 1, 64), units=40)),
    "avg_pool": ("avg_pool2d", dict(in_shape=(1, 25, 5, 64), pool=(25, 5), stride=(1, 1))),
    "max_pool": ("max_pool2d", dict(in_shape=(1, 16, 16, 8), pool=(3, 3), stride=(2, 2), padding="SAME")),
    "add_broadcast": ("add", dict(in_shape=(1, 8, 8, 16), in2_shape=(1, 1, 1, 16))),
    "mul": ("mul", dict(in_shape=(1, 8, 1, 8), in2_shape=(1, 8, 8, 8))),
    "lut": ("logistic", dict(in_shape=(1, 10, 10, 8))),
    "reshape": ("reshape", dict(in_shape=(1, 3, 5, 7), new_shape=(1, 105))),
}


def codegen_operations(model: bytes, accelerator: str):
    """(NPU graph, the Vela operations code generation builds for it unscheduled, its artifact)."""
    mod, _ = partition_for_ethosu(from_tflite(model), accelerator)
    (graph,) = legalize(mod)
    target = EthosuTarget(accelerator)
    per_stripe, *_ = build_operations(graph, translate(graph, None), target)
    return graph, [npu_op for npu_ops in per_stripe for npu_op in npu_ops], compile_npu_graph(graph, target)


@pytest.mark.parametrize("accelerator", U55)
@pytest.mark.parametrize("case", SINGLE_OPS)
def test_estimate_equals_simulator_on_codegen_streams(case, accelerator):
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


def test_kws_first_convolution_runs_part_kernel_first_bit_exactly():
    model = models.make("conv2d", seed=5, **SINGLE_OPS["kws_first_conv"][1])
    _, npu_ops, artifact = codegen_operations(model, "ethos-u55-128")
    assert npu_ops[0].block_traversal == PART_KERNEL
    simulator = Simulator("ethos-u55-128")
    (conv,) = [operation.decode(regs, command) for command, regs in
               operations(simulator.commands(artifact.driver_payload)) if command.opcode.name == "NPU_OP_CONV"]
    assert conv.kernel.part_kernel
    (binding,) = artifact.inputs
    for seed in (0, 1):
        (x,) = random_inputs(model, seed)
        regions = {0: bytearray(artifact.constants), 1: bytearray(max(artifact.scratch_size, 16))}
        regions[binding.region] = bytearray(binding.offset) + bytearray(x.tobytes())
        for out in artifact.outputs:
            regions.setdefault(out.region, bytearray(out.offset + out.size))
        simulator.run(artifact.driver_payload, regions)
        (out,) = artifact.outputs
        got = np.frombuffer(bytes(regions[out.region][out.offset:out.offset + out.size]), dtype=out.dtype)
        assert np.array_equal(got, run_litert(model, [x])[0].reshape(-1))


@pytest.mark.parametrize("accelerator", U55)
@pytest.mark.parametrize("case", ["kws_first_conv", "conv3x3_depth32", "depthwise", "max_pool", "mul", "lut"])
def test_chosen_block_config_is_the_fastest_valid_one(case, accelerator):
    kind, params = SINGLE_OPS[case]
    _, npu_ops, _ = codegen_operations(models.make(kind, seed=1, **params), accelerator)
    npu_op = [op for op in npu_ops if isinstance(op, vapi.NpuBlockOperation)][0]
    npu_accelerator = EthosuTarget(accelerator).npu_accelerator
    # Code generation chooses before it encodes the weights (the stream depends on the block depth): the cost model
    # then counts them at their uncompressed size.
    for streams in ("weights", "biases"):
        if getattr(npu_op, streams, None):
            setattr(npu_op, streams, [vapi.NpuAddressRange(r.region, r.address, 0) for r in getattr(npu_op, streams)])
    configs = find_block_configs(npu_op, npu_accelerator)
    chosen = choose_block_config(npu_op, npu_accelerator)
    assert chosen in configs and len(configs) > 1
    assert npu_op.block_config == chosen
    best = estimate_cycles(npu_op, npu_accelerator, chosen).cycles
    assert all(estimate_cycles(npu_op, npu_accelerator, block).cycles >= best for block in configs)
    # A preferred depth wins when some valid config has it, and is ignored otherwise.
    for depth in {c.depth for c in configs}:
        assert choose_block_config(npu_op, npu_accelerator, depth).depth == depth
    assert choose_block_config(npu_op, npu_accelerator, 10_000) == chosen


@pytest.fixture
def unremembered_block_configs():
    """choose_block_config and find_block_configs remember their answers for an equal operation: a test that
    patches Vela's search must not leave its answers to the tests after it (in the same process)."""
    yield
    block_config._choose_block_config.cache_clear()
    block_config._find_block_configs.cache_clear()


def test_no_block_config_when_nothing_fits(monkeypatch, unremembered_block_configs):
    _, (npu_op,), _ = codegen_operations(models.make("max_pool2d", seed=0), "ethos-u55-128")

    def nothing_fits(op, accelerator):
        raise AssertionError("Vela asserts when no block fits in SHRAM")

    monkeypatch.setattr(vapi, "npu_find_block_configs", nothing_fits)
    block_config._choose_block_config.cache_clear()  # the answers before the patch are remembered
    block_config._find_block_configs.cache_clear()
    assert find_block_configs(npu_op, U55_128) == []
    assert choose_block_config(npu_op, U55_128) is None


def _choice_key(npu_op):
    """What choose_block_config remembers its choice by."""
    return (block_config._BlockSearch(npu_op), costing(npu_op, U55_128, DEFAULT_SYSTEM))


def test_block_config_is_remembered_for_operations_that_differ_only_in_what_the_choice_does_not_read():
    _, npu_ops, _ = codegen_operations(models.make("conv2d", seed=2, **SINGLE_OPS["conv3x3_depth32"][1]),
                                       "ethos-u55-128")
    (npu_op,) = [op for op in npu_ops if isinstance(op, vapi.NpuBlockOperation)]
    npu_op.block_config = None  # as code generation asks: before choosing
    chosen = choose_block_config(npu_op, U55_128)
    moved = copy.deepcopy(npu_op)
    moved.ifm.tiles = moved.ifm.tiles._replace(addresses=[a + 4096 for a in moved.ifm.tiles.addresses])
    moved.ofm.name, moved.ifm.name = "elsewhere", "another"
    moved.weights = [r._replace(address=r.address + 64) for r in moved.weights]
    moved.ofm.quantization = vapi.NpuQuantization(scale_f32=0.25, zero_point=3)  # another layer of the same shape
    moved.activation = vapi.NpuActivation(vapi.NpuActivationOp.NONE_OR_RELU)
    moved.activation.min, moved.activation.max = 0.0, 6.0
    assert _choice_key(moved) == _choice_key(npu_op)
    assert block_config._choose_block_config.__wrapped__(*_choice_key(moved), U55_128, None) == chosen
    # Everything the choice reads tells operations apart: regions, shapes, kernels, stream lengths, traversal.
    changes = [
        lambda op: setattr(op.ifm, "region", op.ifm.region + 1),
        lambda op: setattr(op.ofm, "shape", op.ofm.shape._replace(width=op.ofm.shape.width - 1)),
        lambda op: setattr(op.kernel, "stride_x", 2),
        lambda op: setattr(op, "weights", [r._replace(length=r.length + 16) for r in op.weights]),
        lambda op: setattr(op, "block_traversal", PART_KERNEL),
        lambda op: setattr(op, "activation", vapi.NpuActivation(vapi.NpuActivationOp.TABLE_LOOKUP)),
    ]
    for change in changes:
        other = copy.deepcopy(npu_op)
        change(other)
        assert _choice_key(other) != _choice_key(npu_op)


@pytest.mark.parametrize("kernel,depth,bits,expected", [
    ((10, 4), 1, 8, PART_KERNEL),  # KWS's first convolution
    ((3, 3), 32, 8, DEPTH_FIRST),
    ((1, 1), 3, 8, PART_KERNEL),  # every IFM of depth 8 or less
    ((1, 1), 9, 8, DEPTH_FIRST),  # utilisation 9/32 against 9/16 * 1/4
    ((3, 3), 40, 8, PART_KERNEL),  # 40/64 against 40/40 * 9/12
    ((3, 3), 24, 8, PART_KERNEL),  # a tie, 24/32 = 24/24 * 9/12, goes to part-kernel-first
    ((3, 3), 16, 16, DEPTH_FIRST),  # 16-bit: depth in 16s, taps in 2s: 16/16 against 16/16 * 9/10
    ((1, 3), 24, 16, PART_KERNEL),  # 16-bit tie: 24/32 = 24/24 * 3/4
])
def test_block_traversal_by_utilisation(kernel, depth, bits, expected):
    assert block_traversal(kernel, depth, bits) == expected


def _vela_convolutions(model: bytes, accelerator: str, legacy: bool) -> list[operation.BlockOperation]:
    """The CONV operations of Vela's command stream for `model` (Regor, or the legacy Python core)."""
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "model.tflite"
        source.write_bytes(model)
        extra = ("--debug-force-legacy-core",) if legacy else ()
        compiled = compile_model(source, accelerator, "Performance", Path(folder) / "out", extra, fresh_process=legacy)
    simulator = Simulator(accelerator)
    return [operation.decode(regs, command)
            for command, regs in operations(simulator.commands(vela_tflite.parse(compiled).command_stream))
            if command.opcode.name == "NPU_OP_CONV"]


def _conv_chain(dtype: str) -> bytes:
    """Convolutions whose traversal is decided every way: shallow IFMs, ties, 1x1, deep IFMs."""
    net = models.Net(4)
    x = net.input((1, 12, 12, 3), dtype)
    for out_channels, kernel in [(24, (3, 3)), (40, (3, 3)), (16, (3, 3)), (16, (1, 2)), (64, (1, 1)), (8, (3, 3)),
                                 (48, (2, 2)), (20, (5, 5)), (9, (1, 1)), (24, (3, 3)), (16, (1, 3))]:
        x = net.conv2d(x, out_channels=out_channels, kernel=kernel)
    net.output(x)
    return net.build()


@pytest.mark.parametrize("legacy", [False, True], ids=["regor", "legacy"])
@pytest.mark.parametrize("dtype", ["int8", "int16"])
def test_block_traversal_agrees_with_vela(dtype, legacy):
    convolutions = _vela_convolutions(_conv_chain(dtype), "ethos-u55-128", legacy)
    assert len(convolutions) >= 11
    chosen = {(c.kernel.height, c.kernel.width, c.ifm.depth): c.kernel.part_kernel for c in convolutions}
    assert set(chosen.values()) == {True, False}
    for (height, width, depth), part_kernel in chosen.items():
        ours = block_traversal((height, width), depth, 16 if dtype == "int16" else 8)
        assert (ours == PART_KERNEL) == part_kernel, (height, width, depth)


def test_block_traversal_agrees_with_vela_on_kws():
    model = shared_model("mlperf_tiny_kws_dscnn_int8.tflite")
    convolutions = _vela_convolutions(model, "ethos-u55-128", legacy=False)
    first = convolutions[0]
    assert (first.kernel.height, first.kernel.width, first.ifm.depth) == (10, 4, 1) and first.kernel.part_kernel
    for conv in convolutions:
        ours = block_traversal((conv.kernel.height, conv.kernel.width), conv.ifm.depth, conv.ifm.bits)
        assert (ours == PART_KERNEL) == conv.kernel.part_kernel
    _, npu_ops, _ = codegen_operations(model, "ethos-u55-128")
    assert npu_ops[0].block_traversal == PART_KERNEL


def _conv(in_shape, out_channels, kernel, padding=Padding(1, 1, 1, 1), strides=(1, 1)):
    n, h, w, c = in_shape
    out_h = (h + padding.top + padding.bottom - kernel[0]) // strides[0] + 1
    out_w = (w + padding.left + padding.right - kernel[1]) // strides[1] + 1
    return Conv2D(operand("ifm", in_shape), operand("ofm", (n, out_h, out_w, out_channels)),
                  np.ones((out_channels, *kernel, c), dtype=np.int8), 0, np.zeros(out_channels, dtype=np.int64), UNIT,
                  strides=strides, padding=padding)


def _encoded(op, depth: int | None = None) -> int:
    """Bytes of op's weight stream as Vela encodes it for blocks of `depth` channels (default: all of them)."""
    depth = depth or op.weights.shape[0]
    stream = vapi.npu_encode_weights(U55_128, op.weights.astype(np.int16) - op.weight_zero_point, (1, 1), 8, depth,
                                     isinstance(op, DepthwiseConv2D), convolution_traversal(op))
    return -(-len(stream) // 16) * 16


@pytest.mark.parametrize("strides", [(1, 1), (2, 2)])
def test_stripe_cost_grows_with_stripe_height(strides):
    op = _conv((1, 32, 32, 16), 24, (3, 3), strides=strides)
    _, out_h, out_w, out_c = op.ofm.tensor.shape
    costs = []
    for rows in range(1, out_h + 1):
        in_rows = min((rows - 1) * strides[0] + 3, 32)  # a stripe in the middle (top/bottom padding at the end)
        costs.append(stripe_cost(op, (1, rows, out_w, out_c), [(1, in_rows, 32, 16)], U55_128))
    # Cycles need not grow row by row: Vela offers some block heights only for some stripe heights, and a block
    # trades compute against weight re-reads, so one more row can allow a better block.
    for smaller, larger in zip(costs, costs[1:]):
        assert smaller.bytes_read <= larger.bytes_read and smaller.bytes_written < larger.bytes_written
    assert min(c.cycles for c in costs) == costs[0].cycles
    assert costs[-1].compute_cycles > 4 * costs[0].compute_cycles
    # Every stripe reads the whole encoded weight stream and the 10-byte scale/bias entry of each channel.
    assert {c.weight_bytes for c in costs} == {_encoded(op) + 240}


def test_stripe_cost_is_memoised():
    op = _conv((1, 16, 16, 8), 8, (3, 3))
    first = stripe_cost(op, (1, 4, 16, 8), [(1, 6, 16, 8)], U55_128)
    assert stripe_cost(op, (4, 16, 8), ((6, 16, 8),), U55_128) is first
    assert stripe_cost(op, (1, 4, 16, 8), ((1, 6, 16, 8),), U55_128) is first
    assert stripe_cost(op, (1, 5, 16, 8), [(1, 7, 16, 8)], U55_128) is not first
    twin = _conv((1, 16, 16, 8), 8, (3, 3))  # equal fields, another primitive
    assert stripe_cost(twin, (1, 4, 16, 8), [(1, 6, 16, 8)], U55_128) == first


def test_stripe_cost_of_every_primitive_kind():
    ifm, ofm = operand("ifm", (1, 8, 8, 16)), operand("ofm", (1, 8, 8, 16))
    shape = (1, 8, 8, 16)
    depthwise = DepthwiseConv2D(ifm, ofm, np.ones((16, 3, 3, 1), dtype=np.int8), 0, np.zeros(16, dtype=np.int64),
                                UNIT, padding=Padding(1, 1, 1, 1))
    conv_op, depthwise_op = _conv(shape, 16, (3, 3)), depthwise
    costs = {
        "conv": stripe_cost(conv_op, shape, [shape], U55_128),
        "depthwise": stripe_cost(depthwise_op, shape, [shape], U55_128),
        "max_pool": stripe_cost(Pooling("MAX", ifm, ofm, (3, 3), padding=Padding(1, 1, 1, 1)), shape, [shape],
                                U55_128),
        "avg_pool": stripe_cost(Pooling("AVG", ifm, ofm, (3, 3), padding=Padding(1, 1, 1, 1)), shape, [shape],
                                U55_128),
        "copy": stripe_cost(Identity(ifm, ofm), shape, [shape], U55_128),
        "lut": stripe_cost(Identity(ifm, ofm, np.arange(-128, 128, dtype=np.int8)), shape, [shape], U55_128),
    }
    for cost in costs.values():
        assert cost.cycles >= max(cost.compute_cycles, cost.memory_cycles) > 0
        assert cost.bytes_written == 8 * 8 * 16
    assert costs["conv"].weight_bytes == _encoded(conv_op) + 160
    assert costs["depthwise"].weight_bytes == _encoded(depthwise_op) + 160
    assert costs["max_pool"].weight_bytes == costs["copy"].weight_bytes == 0
    assert costs["conv"].compute_cycles > costs["depthwise"].compute_cycles
    assert costs["lut"].bytes_read == costs["copy"].bytes_read + 256  # the table, read from SHRAM
    # The NPU broadcasts only IFM2: a broadcast first operand is swapped, at no cost.
    full, row = operand("a", (1, 8, 8, 16)), operand("b", (1, 1, 8, 16))
    add = stripe_cost(BinaryElementwise("ADD", full, row, ofm, UNIT, UNIT, UNIT), shape, [shape, (1, 1, 8, 16)],
                      U55_128)
    swapped = stripe_cost(BinaryElementwise("ADD", row, full, ofm, UNIT, UNIT, UNIT), shape, [(1, 1, 8, 16), shape],
                          U55_128)
    assert add == swapped and add.bytes_read == (8 * 8 + 8) * 16


def test_average_pool_falls_back_to_depthwise_when_no_block_fits(monkeypatch, unremembered_block_configs):
    real = block_config.find_block_configs
    monkeypatch.setattr(block_config, "find_block_configs", lambda op, accelerator: (
        [] if isinstance(op, vapi.NpuPoolingOperation) else real(op, accelerator)))
    block_config._choose_block_config.cache_clear()
    ifm, ofm = operand("ifm", (1, 25, 5, 64)), operand("ofm", (1, 1, 1, 64))
    pool = Pooling("AVG", ifm, ofm, (25, 5))
    depthwise = DepthwiseConv2D(ifm, ofm, np.ones((64, 25, 5, 1), dtype=np.int8), 0, np.zeros(64, dtype=np.int64),
                                UNIT)
    shapes = ((1, 1, 1, 64), [(1, 25, 5, 64)], U55_128)
    assert stripe_cost(pool, *shapes) == stripe_cost(depthwise, *shapes)
    with pytest.raises(ValueError, match="no block config"):
        stripe_cost(Pooling("MAX", ifm, ofm, (25, 5)), *shapes)


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
