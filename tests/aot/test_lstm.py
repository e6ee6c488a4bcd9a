"""UNIDIRECTIONAL_SEQUENCE_LSTM (integer, TFLite Micro's kernel the reference): tvmc compile → tvmc run, and the
same C run on a sequence of inputs, its states carried from one run to the next as TFLite Micro's interpreter
carries its variable tensors, bit-exact on every U55 and host-only."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest
from aot_support import assert_plan_valid, compile_model, extract, members, npu_target, tvmc_run

from ethosu_tvm.run.host_program import HostProgram
from ethosu_tvm.testing import models
from ethosu_tvm.testing.reference import random_inputs, run_tflm, run_tflm_sequence

ALL_U55 = ("ethos-u55-32", "ethos-u55-64", "ethos-u55-128", "ethos-u55-256")
VARIANTS = {
    "batch-major": dict(shape=(2, 3, 5), units=4),
    "time-major": dict(shape=(3, 2, 6), units=5, time_major=True),
    # a state scale no power of two (the output state's MUL in double), the cell in Q0.15 (TANH's input rounds),
    # a clip that binds
    "clipped": dict(shape=(1, 4, 7), units=6, state_scale=0.0123, state_zp=5, cell_scale_log2=-15, cell_clip=0.6),
    # large weights: saturated gates, an unclipped cell state in Q7.8
    "saturating": dict(shape=(1, 4, 5), units=8, cell_scale_log2=-8, cell_clip=0.0, w_scale=0.05),
}


def _lstm(seed: int = 0, shape=(2, 3, 5), **options) -> bytes:
    net = models.Net(seed=seed)
    net.output(net.lstm(net.input(shape), **options))
    return net.build()


def _assert_sequence(model: bytes, program: HostProgram, seeds=range(4)) -> list[np.ndarray]:
    """The program's outputs on the inputs of `seeds` in turn equal one TFLite Micro interpreter's."""
    sequence = [random_inputs(model, seed) for seed in seeds]
    got = []
    for step, (inputs, (want,)) in enumerate(zip(sequence, run_tflm_sequence(model, sequence))):
        (output,) = program.run(inputs).values()
        np.testing.assert_array_equal(output, want, err_msg=f"invocation {step}")
        got.append(output)
    return got


# Every variant on ethos-u55-128 and host-only; the first on every U55 (the arithmetic does not depend on it).
CASES = [pytest.param(variant, target, id=f"{variant}-{target.split('=')[-1]}") for variant in VARIANTS
         for target in (npu_target("ethos-u55-128"), "c")]
CASES += [pytest.param("batch-major", npu_target(a), id=f"batch-major-{a}") for a in ALL_U55 if a != "ethos-u55-128"]


@pytest.mark.parametrize("variant,target", CASES)
def test_lstm_sequence(variant, target, tmp_path):
    """The whole LSTM on the NPU (host-only: host kernels), the first invocation through tvmc run, then four in a row
    through one program, each equal to TFLite Micro's interpreter invoked as often."""
    model = _lstm(**VARIANTS[variant])
    archive = compile_model(model, tmp_path, target)
    report = members(archive)["./src/offload_report.txt"].decode()
    assert re.search(r"^0 +UNIDIRECTIONAL_SEQUENCE_LSTM +(ethos-u|host)", report, re.M), report
    assert ("ethos-u: 1, host: 0" if target != "c" else "ethos-u: 0, host: 1") in report
    (first,) = tvmc_run(archive, model, random_inputs(model, 0), tmp_path)
    np.testing.assert_array_equal(first, run_tflm(model, random_inputs(model, 0))[0])
    mlf = extract(archive, tmp_path / "mlf")
    assert_plan_valid(json.loads((mlf / "src/memory_plan.json").read_text()))
    _assert_sequence(model, HostProgram(mlf, tmp_path))


@pytest.mark.parametrize("target", [npu_target("ethos-u55-128"), npu_target("ethos-u55-32"), "c"])
def test_stacked_lstms(target, tmp_path):
    """Two LSTM layers, one NPU launch: an input, four states before and the output are more than its five I/O
    regions, so the states after the run live in its scratch and the runner copies states before it there too."""
    net = models.Net(seed=4)
    net.output(net.lstm(net.lstm(net.input((1, 3, 5)), units=6), units=4, state_zp=3))
    model = net.build()
    archive = compile_model(model, tmp_path, target)
    runner = members(archive)["./codegen/host/src/default_lib0.c"].decode()
    copied_in = re.findall(r"memcpy\(\(pool_workspace \+ \d+\), tvmgen_default_state_(\w+),", runner)
    assert len(copied_in) == (0 if target == "c" else 1), copied_in
    _assert_sequence(model, HostProgram(extract(archive, tmp_path / "mlf"), tmp_path))


def test_the_variants_take_their_paths():
    """The clipped variant's clip binds (without it TFLite Micro's outputs differ), and the saturating variant's
    gates saturate: a quarter or more of its outputs are exactly 0 (output gates at 0)."""
    clipped = VARIANTS["clipped"]
    x = random_inputs(_lstm(**clipped), 0)
    unclipped = _lstm(**clipped | dict(cell_clip=0.0))
    assert not np.array_equal(run_tflm(_lstm(**clipped), x)[0], run_tflm(unclipped, x)[0])
    saturating = _lstm(**VARIANTS["saturating"])
    output = run_tflm(saturating, random_inputs(saturating, 0))[0]
    assert np.count_nonzero(output == -2) * 4 >= output.size  # -2: the output state's zero point


def test_reset_sets_the_states_back(tmp_path):
    """tvmgen_default_reset: after it the model computes what a fresh one does; without it the states carry on."""
    model = _lstm(units=6)
    mlf = extract(compile_model(model, tmp_path, npu_target("ethos-u55-128")), tmp_path / "mlf")
    program = HostProgram(mlf, tmp_path)
    first, second = _assert_sequence(model, program, seeds=(0, 1))
    (again,) = program.run(random_inputs(model, 1)).values()
    assert not np.array_equal(again, second)  # the states went on from the second run
    program.reset()
    (fresh,) = program.run(random_inputs(model, 0)).values()
    np.testing.assert_array_equal(fresh, first)


@pytest.mark.parametrize("target", [npu_target("ethos-u55-128"), "c"])
def test_states_in_the_generated_c(target, tmp_path):
    """The states are static buffers of the runner beside the workspace (where the NPU reaches them), filled as
    TFLite resets variable tensors (the int8 output state with its zero point, the int16 cell state with 0) by the
    reset, which the first run calls; the reset is declared in the header and the states listed in interface.json.
    The values a run computes for them are workspace buffers (inside the NPU's scratch when the NPU computes them),
    live to the end, where the runner copies them over the static ones. The tarball is byte-identical when built
    again."""
    model = _lstm(units=4, state_zp=-2)
    archive = compile_model(model, tmp_path / "a", target)
    files = members(archive)
    runner = files["./codegen/host/src/default_lib0.c"].decode()
    header = files["./codegen/host/include/tvmgen_default.h"].decode()
    interface = json.loads(files["./src/interface.json"])
    assert [(s["name"], s["shape"], s["dtype"]) for s in interface["states"]] == [
        ("output_state_13", [2, 4], "int8"), ("cell_state_14", [2, 4], "int16")]
    assert "void tvmgen_default_reset(void);" in header
    assert "#define TVMGEN_DEFAULT_STATE_SIZE 24" in header  # 2 x 4 int8 + 2 x 4 int16
    for name, size in (("output_state_13", 8), ("cell_state_14", 16)):
        assert (f"static uint8_t tvmgen_default_state_{name}[{size}] __attribute__((section(\".bss.noinit.tvm\"), "
                "aligned(16)));") in runner
    assert "memset(tvmgen_default_state_output_state_13, 0xfe, sizeof(tvmgen_default_state_output_state_13));" in runner
    assert "memset(tvmgen_default_state_cell_state_14, 0x00, sizeof(tvmgen_default_state_cell_state_14));" in runner
    run = runner[runner.index("int32_t tvmgen_default_run("):]
    assert re.search(r"\{\n(  uint8_t\* pool_\w+ = [^\n]*\n|  struct ethosu_driver\* npu = [^\n]*\n)*"
                     r"  if \(!tvmgen_default_states_ready\) \{\n    tvmgen_default_reset\(\);", run), run[:400]
    plan = json.loads(files["./src/memory_plan.json"])
    copied = [int(offset) for offset in re.findall(r"memcpy\(tvmgen_default_state_\w+, \(pool_workspace \+ (\d+)\)",
                                                   runner)]
    assert len(copied) == 2
    last = max(buffer["last_use"] for buffer in plan["buffers"])
    for offset in copied:  # each inside a buffer that lives until the last step
        assert any(b["offset"] <= offset < b["offset"] + b["size"] and b["last_use"] == last for b in plan["buffers"])
    assert not {b["name"] for b in plan["buffers"]} & {"output_state_13", "cell_state_14"}
    assert archive.read_bytes() == compile_model(model, tmp_path / "b", target).read_bytes()


@pytest.mark.parametrize("target,extra", [(npu_target("ethos-u55-64"), ("--use-workspace-io",)),
                                          ("c", ("--use-workspace-io",)),
                                          ("ethos-u -accelerator-config=ethos-u55-64 -enable-cascader=1,c", ())],
                         ids=("workspace-io", "host-workspace-io", "cascader"))
def test_lstm_with_io_in_the_workspace_or_cascaded(target, extra, tmp_path):
    model = _lstm(shape=(1, 4, 6), units=8, seed=2)
    archive = compile_model(model, tmp_path, target, *extra)
    _assert_sequence(model, HostProgram(extract(archive, tmp_path / "mlf"), tmp_path))


def test_steps_share_their_weights():
    """Every step's operations read the same weights, biases and tables: the constant region of four steps is as
    large as that of one (Vela's LSTM shares them too)."""
    import ethosu_tvm

    def constants(steps: int) -> int:
        module = ethosu_tvm.build(ethosu_tvm.from_tflite(_lstm(shape=(1, steps, 5), units=8)),
                                  target=npu_target("ethos-u55-128"))
        return sum(len(step.artifact.constants) for step in module.program.steps)

    one, four = constants(1), constants(4)
    assert one > 8 * 8 * 4  # every gate's two weight matrices are there
    assert four == one


def test_layer_dump_names_the_lstm_output_once(tmp_path):
    """The layer dump holds the LSTM's output under its TFLite name, and not the states after the run (no output of
    the operator), which the NPU launch also writes."""
    from ethosu_tvm.debug_layers import layer_tensors
    import ethosu_tvm

    module = ethosu_tvm.build(ethosu_tvm.from_tflite(_lstm()), target=npu_target("ethos-u55-128"))
    assert [(t.name, t.shape) for t in layer_tensors(module)] == [("output_0", (2, 3, 8))]  # 8 units: the default
