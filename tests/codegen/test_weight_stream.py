"""The weight stream (`codegen.weight_stream`): convolutions traverse their weights as Vela's weight encoder
chooses, and a part-kernel-first stream runs bit-exactly."""
import tempfile
from pathlib import Path

import numpy as np
import pytest

from ethosu_tvm.codegen.weight_stream import block_traversal
from ethosu_tvm.sim import Simulator, operation, vela_tflite
from ethosu_tvm.sim.stream import operations
from ethosu_tvm.sim.vela_compile import compile_model
from ethosu_tvm.testing import models, shared_model
from ethosu_tvm.testing.reference import random_inputs, run_litert

from cost_support import DEPTH_FIRST, PART_KERNEL, SINGLE_OPS, codegen_operations


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
