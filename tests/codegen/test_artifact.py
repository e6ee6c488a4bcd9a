"""Artifacts: layout of regions and constants, memory reuse, quiet compilation, wrapped Vela errors, and the U65's
streams (the U65-512's per core)."""
import dataclasses
import subprocess
import sys

import numpy as np
import pytest

from ethosu_tvm.arch import find_accelerator, round_up
from ethosu_tvm.codegen import CodegenError, compile_npu_graph
from ethosu_tvm.codegen.memory import plan
from ethosu_tvm.codegen.tir_to_npu import translate
from ethosu_tvm.frontend.importer import from_tflite
from ethosu_tvm.legalize import legalize
from ethosu_tvm.legalize.ops import NpuGraph
from ethosu_tvm.partition import partition_for_ethosu
from ethosu_tvm.sim import Simulator, SimulatorError
from ethosu_tvm.sim.payload import bytes_to_words, parse_driver_payload
from ethosu_tvm.sim.stream import load
from ethosu_tvm.target import EthosuTarget
from ethosu_tvm.testing import models, shared_model

from sim_support import assert_model_exact, compile_model


def _graph(model: bytes):
    mod, _ = partition_for_ethosu(from_tflite(model))
    (graph,) = legalize(mod)
    return graph


def test_artifact_layout():
    _, (artifact,) = compile_model(shared_model("mlperf_tiny_kws_dscnn_int8.tflite"), "ethos-u55-128")
    assert artifact.driver_payload[:4] == b"COP1"
    assert artifact.name == "ethos_u_0" and artifact.function.endswith("_ethos-u")
    assert len(artifact.constants) % 16 == 0
    assert [(b.region, b.offset, b.shape, b.size) for b in artifact.inputs] == [(3, 0, (1, 49, 10, 1), 490)]
    assert [(b.region, b.offset, b.shape, b.size) for b in artifact.outputs] == [(4, 0, (1, 1, 1, 12), 12)]
    assert [s.op for s in artifact.ops][:2] == ["ethosu.conv2d", "ethosu.depthwise_conv2d"]
    assert [s.op for s in artifact.ops][-2:] == ["ethosu.conv2d", "ethosu.softmax"]  # the FC, then the softmax
    # The average pool writes its output where the reshape before the FC reads it: no copy is left of the reshape.
    assert [(s.op, s.npu_operation) for s in artifact.ops][-3:] == [
        ("ethosu.pooling", "NpuPoolingOperation"), ("ethosu.conv2d", "NpuConv2DOperation"),
        ("ethosu.softmax", "NpuElementWiseOperation")]
    assert sum(s.op == "ethosu.identity" for s in artifact.ops) == 0
    # The softmax is Vela's sequence: max pool, exp, rounding, REDUCE_SUM, CLZ, 26 operations on one value per row
    # (the reciprocal; Vela's doubling MUL is two MINs and an ADD here), scaling, output shift. Every other
    # primitive is one block operation.
    assert [s.block_operations for s in artifact.ops] == [1] * (len(artifact.ops) - 1) + [33]
    assert all(s.block_config for s in artifact.ops)
    # The chain's 8000-byte feature maps ping-pong between two scratch buffers; beside them, weight buffers: a
    # pointwise convolution's 4,752 bytes (three OFM blocks would fetch them from flash three times) and, live with
    # it while its DMA runs, a depthwise convolution's 1,328 (reading those from SRAM leaves the flash to that DMA).
    assert artifact.scratch_size == 2 * 8000 + 4752 + 1328


def test_scratch_is_reused_but_live_tensors_never_overlap():
    graph = _graph(models.make_graph("inverted_residual"))
    placements, size, _ = plan(graph, translate(graph))
    assert {placements[t.name].region for t in graph.inputs} == {3}
    assert {placements[t.name].region for t in graph.outputs} == {4}
    expand, depthwise, project, _ = graph.ops
    a, b = placements[expand.ofm.tensor.name], placements[depthwise.ofm.tensor.name]
    assert a.region == b.region == 1 and abs(a.offset - b.offset) >= 16 * 16 * 32  # both live at the depthwise
    assert placements[project.ofm.tensor.name].offset == a.offset  # the expand output is dead by then
    assert size == 2 * 16 * 16 * 32


def test_vela_errors_name_the_operator():
    graph = _graph(models.make("conv2d"))
    (op,) = graph.ops
    huge_bias = dataclasses.replace(op, bias=np.full(8, 2**45, dtype=np.int64))
    broken = NpuGraph(graph.name, graph.inputs, graph.outputs, (huge_bias,))
    with pytest.raises(CodegenError, match=r"^ethosu\.conv2d \(conv2d:lv\): Vela rejected the operation: "
                                           r"AssertionError"):
        compile_npu_graph(broken, EthosuTarget("ethos-u55-256"))


def test_compilation_prints_nothing(tmp_path):
    """Vela's first API call prints a configuration warning: it must not reach our stdout (fresh process)."""
    model = tmp_path / "kws.tflite"
    model.write_bytes(shared_model("mlperf_tiny_kws_dscnn_int8.tflite"))
    code = (
        "from ethosu_tvm.frontend.importer import from_tflite\n"
        "from ethosu_tvm.partition import partition_for_ethosu\n"
        "from ethosu_tvm.legalize import legalize\n"
        "from ethosu_tvm.codegen import compile_npu_graph\n"
        "from ethosu_tvm.target import EthosuTarget\n"
        f"mod, _ = partition_for_ethosu(from_tflite({str(model)!r}))\n"
        "[compile_npu_graph(g, EthosuTarget('ethos-u55-64')) for g in legalize(mod)]\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout == ""


def test_u65_stream():
    """An ethos-u65-256 launch is a U65 stream: its payload's config word names the U65 with 256 MACs and 48 KiB of
    SHRAM, it runs on one core (PARALLEL_MODE 0, no second weight stream), and a U55 refuses it."""
    model = models.make("conv2d", 0)
    _, (artifact,) = compile_model(model, "ethos-u65-256")
    payload = parse_driver_payload(bytes_to_words(artifact.driver_payload))
    assert (payload.product, payload.macs_per_cycle, payload.shram_kib) == (1, 256, 48)
    commands = load(artifact.driver_payload, find_accelerator("ethos-u65-256"))
    assert [c.param for c in commands if c.opcode.name == "PARALLEL_MODE"] == [0]
    assert not any(c.opcode.name.startswith(("WEIGHT1_", "SCALE1_")) for c in commands)
    with pytest.raises(SimulatorError, match="^the driver payload was compiled for Ethos-U65 with 256 MACs/cycle, "
                                             r"the simulator models ethos-u55-256 \(256 MACs/cycle\)$"):
        Simulator("ethos-u55-256").run(artifact.driver_payload, {})


@pytest.mark.parametrize("channels", [1, 7, 16])
def test_u65_512_splits_weights_and_scales_per_core(channels):
    """On the two-core U65-512 core c computes every other output channel from c: each core has its own weight and
    scale streams (a single channel leaves core 1 none: lengths 0), the cores run in parallel, and the result is
    LiteRT's."""
    model = models.make("conv2d", 3, in_shape=(1, 6, 6, 5), out_channels=channels)
    assert_model_exact(model, "ethos-u65-512")
    _, (artifact,) = compile_model(model, "ethos-u65-512")
    commands = load(artifact.driver_payload, find_accelerator("ethos-u65-512"))
    lengths = {c.opcode.name: c.payload for c in commands if c.opcode.name.endswith("_LENGTH")}
    assert [c.param for c in commands if c.opcode.name == "PARALLEL_MODE"] == [1]
    assert lengths["SCALE_LENGTH"] == round_up(10 * -(-channels // 2)) and lengths["WEIGHT_LENGTH"] > 0
    assert lengths["SCALE1_LENGTH"] == round_up(10 * (channels // 2))
    assert (lengths["WEIGHT1_LENGTH"] > 0) == (channels > 1)
