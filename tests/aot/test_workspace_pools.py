"""Workspace pools and I/O in the workspace, end to end: the plan obeys sizes and targets, the runner and header
use it, and the model still runs bit-exactly."""
from __future__ import annotations

import json
import re

import pytest
from aot_support import assert_bit_exact, assert_plan_valid, compile_model, extract, npu_target

from ethosu_tvm.cli import main as tvmc
from ethosu_tvm.testing import models, shared_model

KWS = "mlperf_tiny_kws_dscnn_int8.tflite"
TARGET = npu_target("ethos-u55-128")


def _plan(mlf) -> dict:
    return json.loads((mlf / "src/memory_plan.json").read_text())


def npu_then_host() -> bytes:
    """conv → conv (NPU, an intermediate in its scratch) → log_softmax (host): a tensor the NPU writes and the CPU
    reads."""
    net = models.Net(seed=3)
    x = net.conv2d(net.input((1, 8, 8, 4)), out_channels=8, activation="RELU")
    net.output(net.log_softmax(net.conv2d(x, out_channels=8)))
    return net.build()


def test_two_pools_fill_in_order_and_respect_targets(tmp_path):
    model = npu_then_host()
    archive = compile_model(model, tmp_path, TARGET, "--workspace-pools=sram,dram",
                            "--workspace-pools-size-hint-bytes=sram:16384", "--workspace-pools-targets=sram:ethos-u")
    assert_bit_exact(model, archive, tmp_path)
    mlf = tmp_path / "mlf"
    plan = _plan(mlf)
    pools = {p["name"]: p["size_bytes"] for p in plan["pools"]}
    # The NPU scratch (the 8x8x8 intermediate) fits sram; the NPU's output is read by the CPU, so it must go to dram
    # (sram is reachable by the NPU only).
    assert pools == {"sram": 512, "dram": 512}
    npu_output = next(b for b in plan["buffers"] if b["last_use"] == 1 and b["first_use"] == 0)
    assert npu_output["pool"] == "dram"
    assert {b["pool"] for b in plan["buffers"] if b["producer"] == "ethos_u_0"} == {"sram", "dram"}
    header = (mlf / "codegen/host/include/tvmgen_default.h").read_text()
    assert f"#define TVMGEN_DEFAULT_SRAM_WORKSPACE_POOL_SIZE {pools['sram']}" in header
    assert f"#define TVMGEN_DEFAULT_DRAM_WORKSPACE_POOL_SIZE {pools['dram']}" in header
    assert re.search(r"struct tvmgen_default_workspace_pools {\n  void\* sram;\n  void\* dram;\n};", header)
    metadata = json.loads((mlf / "metadata.json").read_text())["modules"]["default"]
    assert metadata["memory"]["workspace_pools"] == [{"name": "sram", "size_bytes": pools["sram"]},
                                                     {"name": "dram", "size_bytes": pools["dram"]}]


@pytest.mark.parametrize("name", ["kws", "multi_io"])
def test_use_workspace_io_is_bit_exact(name, tmp_path):
    model = shared_model(KWS) if name == "kws" else models.make_graph("multi_io")
    archive = compile_model(model, tmp_path, TARGET, "--use-workspace-io")
    assert_bit_exact(model, archive, tmp_path)
    header = (tmp_path / "mlf/codegen/host/include/tvmgen_default.h").read_text()
    assert "static inline struct tvmgen_default_inputs tvmgen_default_map_inputs(" in header
    assert "int32_t tvmgen_default_run(struct tvmgen_default_workspace_pools* workspace_pools, " \
           "struct tvmgen_default_devices* devices);" in header
    metadata = json.loads((tmp_path / "mlf/metadata.json").read_text())["modules"]["default"]
    assert metadata["memory"]["functions"]["main"][0]["io_size_bytes"] == 0
    interface = json.loads((tmp_path / "mlf/src/interface.json").read_text())
    assert all(f["pool"] == "workspace" and f["offset"] % 16 == 0 for f in interface["inputs"] + interface["outputs"])
    if name == "kws":  # the input, read by the NPU alone, sits inside its scratch, sharing memory once read
        scratch = next(b for b in _plan(tmp_path / "mlf")["buffers"] if b["name"] == "ethos_u_0_scratch")
        assert scratch["first_use"] == 0 and scratch["offset"] <= interface["inputs"][0]["offset"] < \
            scratch["offset"] + scratch["size"]


def test_weight_buffers_give_way_to_the_pool_size(tmp_path):
    """KWS buffers weights in SRAM when nothing limits it; a pool sized for its scratch without them still takes
    the model, whose convolutions then stream their weights from flash, bit-exact either way."""
    model = shared_model(KWS)
    sizes = {}
    for hint in (None, 16000):
        extra = ["--workspace-pools=sram"] + ([f"--workspace-pools-size-hint-bytes=sram:{hint}"] if hint else [])
        archive = compile_model(model, tmp_path / str(hint), TARGET, *extra)
        scratch = next(b for b in _plan(extract(archive, tmp_path / f"{hint}_mlf"))["buffers"]
                       if b["name"] == "ethos_u_0_scratch")
        sizes[hint] = scratch["size"]
        assert_bit_exact(model, archive, tmp_path / str(hint), seeds=(0,))
    assert sizes[16000] <= 16000 < sizes[None]


def test_pool_too_small_names_pool_and_need(tmp_path, capsys):
    (tmp_path / "m.tflite").write_bytes(shared_model(KWS))
    status = tvmc(["compile", str(tmp_path / "m.tflite"), f"--target={TARGET}", "--workspace-pools=sram",
                   "--workspace-pools-size-hint-bytes=sram:8192", "-o", str(tmp_path / "m.tar")])
    assert status == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "tvmc: error: the model does not fit the workspace pools: buffer 'ethos_u_0_scratch' (16000 bytes) fits in "
        "none of 'sram' (8192 bytes); the model needs about 16000 bytes in total (the NPU's scratch can be smaller "
        "with the cascader: -enable-cascader=1 in the ethos-u target)")
    assert not (tmp_path / "m.tar").exists()
    # as the message says: with the cascader the NPU's scratch fits a smaller pool (the size its error names)
    cascader = ["compile", str(tmp_path / "m.tflite"), "--target=ethos-u -accelerator-config=ethos-u55-128 "
                "-enable-cascader=1,c", "--workspace-pools=sram", "-o", str(tmp_path / "m.tar")]
    assert tvmc(cascader + ["--workspace-pools-size-hint-bytes=sram:8192"]) == 2
    smallest = int(re.search(r"the smallest pool one fits is (\d+) bytes", capsys.readouterr().err)[1])
    assert smallest < 16000
    assert tvmc(cascader + [f"--workspace-pools-size-hint-bytes=sram:{smallest}"]) == 0


BAD_POOL_FLAGS = {
    "unknown pool": (["--workspace-pools=sram", "--workspace-pools-size-hint-bytes=flash:10"],
                     "--workspace-pools-size-hint-bytes names pool 'flash', which is not in --workspace-pools (sram)"),
    "no pools": (["--workspace-pools-targets=sram:c"], "--workspace-pools-targets needs --workspace-pools"),
    "not a number": (["--workspace-pools=sram", "--workspace-pools-read-latency-cycles=sram:fast"],
                     "--workspace-pools-read-latency-cycles needs a number, got 'fast'"),
    "bad burst": (["--workspace-pools=sram", "--workspace-pools-target-burst-bytes=sram:16"],
                  "--workspace-pools-target-burst-bytes takes POOL:TARGET:BYTES, got 'sram:16'"),
    "bad pool name": (["--workspace-pools=sram,s-ram"],
                      "workspace pool names must be distinct C identifiers, got sram, s-ram"),
    "repeated pool": (["--workspace-pools=sram,sram"],
                      "workspace pool names must be distinct C identifiers, got sram, sram"),
    "drawing format": (["--dump-memory-plan", "plan.txt"],
                       "--dump-memory-plan writes .svg or .png files, got plan.txt"),
    "unreachable": (["--workspace-pools=sram", "--workspace-pools-targets=sram:ethos-u"],
                    "buffer 'lv' is used by c and ethos-u, but no workspace pool is reachable by both; check "
                    "--workspace-pools-targets"),
}


@pytest.mark.parametrize("case", BAD_POOL_FLAGS)
def test_bad_pool_flags(case, tmp_path, capsys):
    flags, message = BAD_POOL_FLAGS[case]
    (tmp_path / "m.tflite").write_bytes(npu_then_host())
    status = tvmc(["compile", str(tmp_path / "m.tflite"), f"--target={TARGET}", *flags, "-o", str(tmp_path / "m.tar")])
    assert status == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == f"tvmc: error: {message}"


def test_pools_named_like_runner_variables(tmp_path):
    """Pool names are the application's: "inputs" or "npu" must not clash with the runner's own names."""
    model = models.make_graph("ds_cnn")
    archive = compile_model(model, tmp_path, TARGET, "--workspace-pools=inputs,npu",
                            "--workspace-pools-size-hint-bytes=inputs:64")
    assert_bit_exact(model, archive, tmp_path, seeds=range(2))
    assert {p["name"] for p in _plan(tmp_path / "mlf")["pools"]} == {"inputs", "npu"}


@pytest.mark.parametrize("algorithm", ["greedy_by_size", "greedy_by_conflicts", "hill_climb", "exact"])
def test_every_planner_runs_bit_exact(algorithm, tmp_path):
    model = models.make_graph("ds_cnn")
    archive = compile_model(model, tmp_path, TARGET, "--pass-config", f"tir.usmp.algorithm={algorithm}")
    assert_bit_exact(model, archive, tmp_path, seeds=range(2))
    assert _plan(tmp_path / "mlf")["algorithm"] == algorithm


def test_dump_memory_plan_drawings(tmp_path):
    model = models.make_graph("multi_io")
    for suffix in ("svg", "png"):
        compile_model(model, tmp_path / suffix, TARGET, "--dump-memory-plan", str(tmp_path / f"plan.{suffix}"))
    plan = _plan(extract(tmp_path / "svg/module.tar", tmp_path / "mlf"))
    assert_plan_valid(plan)
    svg = (tmp_path / "plan.svg").read_text()
    assert svg.count("<title>") == len(plan["buffers"])
    png = (tmp_path / "plan.png").read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and png[12:16] == b"IHDR"
    assert int.from_bytes(png[16:20], "big") == 920  # 800 wide plus margins


def test_npu_output_shares_the_npu_scratch_with_workspace_io(tmp_path):
    """The AD autoencoder (640 → 128 → ... → 128 → 640, all on the NPU): with I/O in the workspace its output lives
    inside the NPU scratch, so the workspace is the output plus the 128-byte activation the last layer reads
    (the input and the other activations are dead by then): 768 bytes, Vela's figure for this model."""
    model = shared_model("mlperf_tiny_ad_fc_autoencoder_int8.tflite")
    archive = compile_model(model, tmp_path, TARGET, "--use-workspace-io")
    assert_bit_exact(model, archive, tmp_path)
    plan = _plan(tmp_path / "mlf")
    assert [b["name"] for b in plan["buffers"]] == ["ethos_u_0_scratch"]
    assert sum(pool["size_bytes"] for pool in plan["pools"]) == 640 + 128
    interface = json.loads((tmp_path / "mlf/src/interface.json").read_text())
    (output,) = interface["outputs"]
    assert output["offset"] + 640 <= 768
