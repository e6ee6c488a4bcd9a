"""A `cmsis-nn,c` build end to end without the library: the calls in the kernel source, each call's context buffer
planned for its one step (and shared between calls), the tarball's metadata and CMakeLists naming CMSIS-NN, and
`tvmc run` saying in one line what it needs to link it."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest
from aot_support import assert_plan_valid, compile_model, members

from ethosu_tvm.cli import main as tvmc
from ethosu_tvm.testing import models


@pytest.fixture(scope="module")
def ds_cnn(tmp_path_factory):
    directory = tmp_path_factory.mktemp("ds_cnn")
    archive = compile_model(models.make_graph("ds_cnn"), directory, "cmsis-nn -mcpu=cortex-m7,c", "--dump-offloads",
                            str(directory / "offloads.json"))
    return archive, members(archive)


def test_calls_and_their_planned_context_buffers(ds_cnn):
    _, files = ds_cnn
    kernels = files["./codegen/host/src/default_lib1.c"].decode()
    runner = files["./codegen/host/src/default_lib0.c"].decode()
    calls = re.findall(r"^  \(void\)(arm_\w+)\(", kernels, re.MULTILINE)
    # the pool is ours (faster on DSP cores), the FC rounds unlike LiteRT's; softmax and reshape are ours
    assert calls == ["arm_convolve_wrapper_s8", "arm_depthwise_conv_wrapper_s8"] * 2 + ["arm_convolve_wrapper_s8"]
    assert kernels.count('#include "arm_nnfunctions.h"') == 5
    plan = json.loads(files["./src/memory_plan.json"])
    contexts = {b["name"]: b for b in plan["buffers"] if b["name"].endswith("_context")}
    steps = {kernel: int(step) for step, kernel in
             re.findall(r"/\* step (\d+): \w+ on the host \*/\n  (tvmgen_default_\w+)\(", runner)}
    # DSP sizes: the 10x4 conv of 1 channel two int16 columns of 40 (2·40·2), the 3x3 depthwise convs none, the
    # 1x1 convs of 16 channels 2·16·2 (Arm Compiler 6's rule)
    assert {name: b["size"] for name, b in contexts.items()} == {
        "tvmgen_default_conv2d_0_context": 160, "tvmgen_default_conv2d_1_context": 64,
        "tvmgen_default_conv2d_2_context": 64}
    for name, buffer in contexts.items():
        assert buffer["first_use"] == buffer["last_use"] == steps[name.removesuffix("_context")]
    offsets = {b["offset"] for b in contexts.values()}
    assert len(offsets) < len(contexts)  # calls at different steps share bytes
    assert_plan_valid(plan)


def test_tarball_says_it_needs_cmsis_nn(ds_cnn):
    _, files = ds_cnn
    module = json.loads(files["./metadata.json"])["modules"]["default"]
    assert module["kernel_libraries"] == [{"name": "cmsis-nn", "checked_against": "ARM-software/CMSIS-NN 99f736a6"}]
    assert module["target"] == ["cmsis-nn -mcpu=cortex-m7", "c"]
    cmake = files["./CMakeLists.txt"].decode()
    assert 'set(ETHOSU_TVM_KERNEL_LIBRARIES "cmsis-nn" CACHE STRING' in cmake
    assert "  if(NOT TARGET ${library})\n    message(FATAL_ERROR" in cmake
    assert "target_link_libraries(tvmgen_default PUBLIC ${ETHOSU_TVM_KERNEL_LIBRARIES})" in cmake


def test_offload_report_says_which_library_runs_each_host_operator(ds_cnn):
    archive, files = ds_cnn
    report = files["./src/offload_report.txt"].decode().splitlines()
    assert report[1].split() == ["#", "operator", "target", "reason"]
    assert report[2] == "0  CONV_2D            host    no ethos-u target; cmsis-nn: exact with TFLite"
    assert report[7] == ("5  AVERAGE_POOL_2D    host    no ethos-u target; ours: faster on DSP cores: 62040 vs 84800 "
                         "instructions measured on cortex-m7 (QEMU mps2-an500)")
    assert report[8] == "6  RESHAPE            host    no ethos-u target; ours: CMSIS-NN has no kernel used for this op"
    assert re.fullmatch(r"7  FULLY_CONNECTED    host    no ethos-u target; ours: LiteRT rounds once and CMSIS-NN "
                        r"twice: they differ for accumulator -?\d+", report[9])
    dumped = json.loads((archive.parent / "offloads.json").read_text())["ops"]
    assert dumped[8] == {"index": 8, "op": "SOFTMAX", "target": "host", "reason": "no ethos-u target",
                         "library": "ours", "library_reason": "CMSIS-NN has no kernel used for this op"}
    assert [op["library"] for op in dumped].count("cmsis-nn") == 5


def test_tvmc_flags_choose_the_cpus_path(tmp_path):
    """--target-cmsis-nn-mcpu and an -mattr list through tvmc: the M55 without DSP and MVE takes the scalar path,
    whose 3x3 conv of 4 channels needs 2·36·2 bytes of context (MVE: 192)."""
    archive = compile_model(models.make("conv2d", 0), tmp_path, "cmsis-nn,c", "--target-cmsis-nn-mcpu=cortex-m55",
                            "--target-cmsis-nn-mattr=+nodsp,+nomve")
    files = members(archive)
    module = json.loads(files["./metadata.json"])["modules"]["default"]
    assert module["target"] == ["cmsis-nn -mcpu=cortex-m55 -mattr=+nodsp,+nomve", "c"]
    kernels = files["./codegen/host/src/default_lib1.c"].decode()
    assert "target cmsis-nn -mcpu=cortex-m55 (scalar) */" in kernels
    assert "  const cmsis_nn_context ctx = {context, 144};" in kernels


def test_run_without_the_library_is_a_one_line_error(ds_cnn, tmp_path, monkeypatch, capsys):
    archive, _ = ds_cnn
    monkeypatch.delenv("ETHOSU_TVM_CMSIS_NN", raising=False)
    np.savez(tmp_path / "in.npz", input_1=np.zeros((1, 49, 10, 1), np.int8))
    assert tvmc(["run", str(archive), "--inputs", str(tmp_path / "in.npz")]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "tvmc: error: this model calls CMSIS-NN: set ETHOSU_TVM_CMSIS_NN to a folder with include/ and "
        "lib/x86_64/libcmsis-nn.a (docs/firmware.md)")
    monkeypatch.setenv("ETHOSU_TVM_CMSIS_NN", str(tmp_path))
    assert tvmc(["run", str(archive), "--inputs", str(tmp_path / "in.npz")]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"tvmc: error: ETHOSU_TVM_CMSIS_NN={tmp_path} lacks include/arm_nnfunctions.h or lib/x86_64/libcmsis-nn.a "
        "(docs/firmware.md)")
