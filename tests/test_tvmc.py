"""The `tvmc` command: flags of old tvmc, summaries, dumps, and one-line errors (exit 2, nothing written)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ethosu_tvm.cli import main as tvmc
from ethosu_tvm.testing import models
from ethosu_tvm.testing.invalid_models import dynamic_shape_model, float_model, sin_model
from ethosu_tvm.testing.reference import random_inputs, run_litert

TARGET = '--target=ethos-u -accelerator-config=ethos-u55-128,c'


def _command(*args):
    return subprocess.run([sys.executable, "-m", "ethosu_tvm", *args], capture_output=True, text=True)


def test_help():
    result = _command("--help")
    assert result.returncode == 0 and "usage: tvmc" in result.stdout and "compile" in result.stdout


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_compile_prints_summaries_and_dumps_offloads(tmp_path, capsys):
    model = _write(tmp_path, "m.tflite", models.make_graph("ds_cnn"))
    status = tvmc(["compile", str(model), "--target", '"ethos-u -accelerator-config=ethos-u55-256",c',
                   "--target-ethos-u-accelerator_config=ethos-u55-128", "--target-c-mcpu=cortex-m55",
                   "--executor", "aot", "--runtime", "crt", "--pass-config", "tir.usmp.algorithm=greedy_by_size",
                   "--pass-config", "tir.disable_vectorize=1", "--dump-offloads", str(tmp_path / "off.json"),
                   "--output-format", "mlf", "-o", str(tmp_path / "m.tar")])
    out = capsys.readouterr()
    assert status == 0, out.err
    assert "Offload: 9 operators on ethos-u55-128, 0 on the host" in out.out
    assert "host: #" not in out.out
    assert "planner greedy_by_size" in out.out
    report = json.loads((tmp_path / "off.json").read_text())
    assert report["accelerator"] == "ethos-u55-128"
    assert [(e["op"], e["target"]) for e in report["ops"]][-1] == ("SOFTMAX", "ethos-u")
    assert {e["target"] for e in report["ops"]} == {"ethos-u"}
    metadata = json.loads(_member(tmp_path / "m.tar", "./metadata.json"))
    assert metadata["modules"]["default"]["target"] == ["ethos-u -accelerator-config=ethos-u55-128",
                                                        "c -mcpu=cortex-m55"]


TVM_SPELLINGS = {
    "underscores and spaces in --target": ["--target=ethos-u -accelerator_config=ethos-u55-64, c -mcpu=cortex-m55",
                                           "--executor=aot", "--runtime=crt"],
    "per-target flags with =": ["--target=ethos-u, c", "--target-ethos-u-accelerator_config=ethos-u55-64",
                                "--target-c-mcpu=cortex-m55", "--executor", "aot", "--runtime", "crt"],
    "per-target flags with a space": ["--target", "ethos-u,c", "--target-ethos-u-accelerator-config", "ethos-u55-64",
                                      "--target-c-mcpu", "cortex-m55", "--executor-aot-interface-api=c",
                                      "--executor-aot-unpacked-api=1", "--output-format=mlf"],
}


@pytest.mark.parametrize("case", TVM_SPELLINGS)
def test_tvm_spellings(case, tmp_path, capsys):
    """Command lines from TVM's tutorials compile as written."""
    model = _write(tmp_path, "m.tflite", models.make("conv2d", 0))
    assert tvmc(["compile", str(model), *TVM_SPELLINGS[case], "-o", str(tmp_path / "m.tar")]) == 0, \
        capsys.readouterr().err
    metadata = json.loads(_member(tmp_path / "m.tar", "./metadata.json"))
    assert metadata["modules"]["default"]["target"] == ["ethos-u -accelerator-config=ethos-u55-64",
                                                        "c -mcpu=cortex-m55"]


def test_compile_names_each_host_operator_and_why(tmp_path, capsys):
    model = _write(tmp_path, "m.tflite", models.make("log_softmax"))
    assert tvmc(["compile", str(model), TARGET, "-o", str(tmp_path / "m.tar")]) == 0
    out = capsys.readouterr().out
    assert "Offload: 0 operators on ethos-u55-128, 1 on the host" in out
    assert "host: #0 LOG_SOFTMAX: no NPU pattern for LOG_SOFTMAX" in out


def _member(archive: Path, name: str) -> bytes:
    import tarfile

    with tarfile.open(archive) as tar:
        return tar.extractfile(name).read()


def test_run_writes_outputs_by_model_name(tmp_path, capsys):
    data = models.make("softmax", 0)
    model = _write(tmp_path, "m.tflite", data)
    assert tvmc(["compile", str(model), TARGET, "-o", str(tmp_path / "m.tar")]) == 0
    x = np.arange(-50, 50, 10, dtype=np.int8).reshape(1, 10)
    np.savez(tmp_path / "in.npz", input_0=x)
    assert tvmc(["run", str(tmp_path / "m.tar"), "--inputs", str(tmp_path / "in.npz"), "--outputs",
                 str(tmp_path / "out.npz"), "--print-top", "2"]) == 0
    printed = capsys.readouterr().out.strip().splitlines()[-1]
    with np.load(tmp_path / "out.npz") as outputs:
        assert outputs.files == ["output_0"]
        y = outputs["output_0"]
    assert printed == f"output_0: top 2: [9] {y[0, 9]}, [8] {y[0, 8]}"
    assert y[0, 9] > y[0, 8] > y[0, 0]  # softmax is monotonic in its input


def test_run_fills_float_inputs_randomly(tmp_path):
    """--fill-mode random (the default) gives a float32 input N(0, 1) values from the same seeded generator."""
    data = models.make("conv2d", float_io=True)
    model = _write(tmp_path, "m.tflite", data)
    assert tvmc(["compile", str(model), "--target=c", "-o", str(tmp_path / "m.tar"), "-q"]) == 0
    assert tvmc(["run", str(tmp_path / "m.tar"), "-o", str(tmp_path / "out.npz")]) == 0
    x = np.random.default_rng(0).standard_normal(size=random_inputs(data, 0)[0].shape).astype(np.float32)
    with np.load(tmp_path / "out.npz") as outputs:
        np.testing.assert_array_equal(outputs["output_0"], run_litert(data, [x])[0])


def test_run_estimates_cycles_in_the_compiled_system(tmp_path, capsys):
    """`tvmc run` reports the NPU cycles of the system the model was compiled for, as `module.run` does; flash at
    half the speed (Deep_Embedded) costs the weight-bound convolution more."""
    import ethosu_tvm

    data = models.make("conv2d", seed=4, in_shape=(1, 32, 32, 16), out_channels=16)
    model = _write(tmp_path, "m.tflite", data)
    x = np.arange(32 * 32 * 16, dtype=np.int64).astype(np.int8).reshape(1, 32, 32, 16)
    np.savez(tmp_path / "in.npz", input_0=x)
    reported = {}
    for system in ("Ethos_U55_High_End_Embedded", "Ethos_U55_Deep_Embedded"):
        target = f"--target=ethos-u -accelerator-config=ethos-u55-128 -system-config={system},c"
        assert tvmc(["compile", str(model), target, "-o", str(tmp_path / "m.tar")]) == 0
        capsys.readouterr()
        assert tvmc(["run", str(tmp_path / "m.tar"), "--inputs", str(tmp_path / "in.npz")]) == 0
        (line,) = [s for s in capsys.readouterr().out.splitlines() if s.startswith("NPU: ")]
        module = ethosu_tvm.build(ethosu_tvm.from_tflite(data), target=target.split("=", 1)[1])
        module.run([x])
        assert line == f"NPU: 1 launches on ethos-u55-128, estimated {module.npu_cycles} cycles ({system}, Shared_Sram)"
        reported[system] = module.npu_cycles
    assert reported["Ethos_U55_Deep_Embedded"] > reported["Ethos_U55_High_End_Embedded"]


def _lstm_model() -> bytes:
    """An integer LSTM whose cell state's scale is no power of two, which TFLite Micro's kernel needs: refused by
    the importer, naming the operator (not for its zero-size intermediates, which are not dynamic)."""
    net = models.Net()
    net.output(net.lstm(net.input((1, 6, 5)), units=4, cell_scale_log2=-11.5))
    return net.build()


def test_run_refuses_a_system_it_does_not_know(tmp_path, capsys):
    """A tarball whose interface names a system config this version lacks (written by another one, or edited):
    one line, exit 2, before anything is built."""
    import io
    import tarfile

    model = _write(tmp_path, "m.tflite", models.make("conv2d", 0))
    assert tvmc(["compile", str(model), TARGET, "-o", str(tmp_path / "m.tar")]) == 0
    with tarfile.open(tmp_path / "m.tar") as source, tarfile.open(tmp_path / "edited.tar", "w") as edited:
        for member in source.getmembers():
            data = source.extractfile(member).read() if member.isfile() else None
            if member.name.endswith("src/interface.json"):
                data = json.dumps(dict(json.loads(data), system_config="Ethos_U55_Tiny")).encode()
                member.size = len(data)
            edited.addfile(member, io.BytesIO(data) if data is not None else None)
    capsys.readouterr()
    assert tvmc(["run", str(tmp_path / "edited.tar")]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"tvmc: error: {tmp_path / 'edited.tar'}: its src/interface.json cannot be read: unknown system config "
        "'Ethos_U55_Tiny'; expected one of Ethos_U55_High_End_Embedded, Ethos_U55_Deep_Embedded, Ethos_U65_Embedded, "
        "Ethos_U65_Mid_End, Ethos_U65_High_End, Ethos_U65_Client_Server"]


BAD_MODEL_CASES = {
    "missing file": (lambda tmp: tmp / "nope.tflite", r"^model file .*nope\.tflite does not exist$"),
    "directory": (lambda tmp: tmp, r"^model .* is not a file$"),
    "not tflite": (lambda tmp: _write(tmp, "x.tflite", b"PK\x03\x04 this is a zip"),
                   r"^.*x\.tflite is not a valid TFLite model: not a TFLite flatbuffer \(missing the 'TFL3' file "
                   r"identifier\)$"),
    "truncated": (lambda tmp: _write(tmp, "t.tflite", models.make("conv2d", 0)[:300]),
                  r"^.*t\.tflite is not a valid TFLite model: the TFLite flatbuffer is truncated or corrupt: .* lies "
                  r"outside the 300-byte file$"),
    "float": (lambda tmp: _write(tmp, "f.tflite", float_model()),
              r"^tensor 'a' is floating point: only int8/int16-quantized models can be compiled$"),
    "dynamic": (lambda tmp: _write(tmp, "d.tflite", dynamic_shape_model()),
                r"^tensor 'x' has a dynamic shape \(1, -1, 8\): only static shapes can be compiled$"),
    "unsupported op": (lambda tmp: _write(tmp, "u.tflite", sin_model()),
                       r"^operator #0 SIN has no NPU or host kernel \(relax\.sin\)$"),
    "integer lstm": (lambda tmp: _write(tmp, "l.tflite", _lstm_model()),
                     r"^the TFLite frontend cannot convert operator #0 UNIDIRECTIONAL_SEQUENCE_LSTM: the cell state's "
                     r"scale 0\.000345267 is not a power of two$"),
}


@pytest.mark.parametrize("case", BAD_MODEL_CASES)
def test_bad_model_is_one_line_error(case, tmp_path, capsys):
    make_path, message = BAD_MODEL_CASES[case]
    output = tmp_path / "out.tar"
    status = tvmc(["compile", str(make_path(tmp_path)), TARGET, "-o", str(output)])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2
    assert err[-1].startswith("tvmc: error: ")
    assert all(line.startswith("tvmc: ") for line in err)  # progress lines, then the error: no traceback
    import re

    assert re.search(message, err[-1][len("tvmc: error: "):]), err[-1]
    assert not output.exists() and not list(tmp_path.glob(".out.tar*"))


def test_refused_operator_leaves_one_line_on_stderr(tmp_path):
    """In a process of its own: a converter refusing an operator inside TVM's function scope leaves no warning of
    TVM's about a half-built function on stderr when the process ends."""
    source = _write(tmp_path, "l.tflite", _lstm_model())
    result = _command("compile", str(source), TARGET, "-o", str(tmp_path / "out.tar"))
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert lines[-1].startswith("tvmc: error: ") and all(line.startswith("tvmc: ") for line in lines), lines


OPTION_CASES = {
    "unknown target option": (["--target=ethos-u -accelerator-config=ethos-u55-128 -foo=1,c"],
                              "unknown option 'foo' for target ethos-u; valid: accelerator-config, system-config, "
                              "memory-mode, enable-cascader, enable-striping, disable-copying-constants, "
                              "dev-log-plans, dev-select-proposal"),
    "bad system config": (["--target=ethos-u -system-config=Ethos_U55_Tiny,c"],
                          "unknown system-config 'Ethos_U55_Tiny'; valid: Ethos_U55_High_End_Embedded, "
                          "Ethos_U55_Deep_Embedded"),
    "bad memory mode": (["--target=ethos-u -memory-mode=Dedicated_Sram,c"],
                        "memory-mode 'Dedicated_Sram' is not an Ethos-U55 memory mode; valid: Shared_Sram, "
                        "Sram_Only"),
    "bad accelerator": (["--target=ethos-u -accelerator-config=ethos-u85-256,c"],
                        "unknown accelerator-config 'ethos-u85-256'; valid: ethos-u55-32, ethos-u55-64, ethos-u55-128, "
                        "ethos-u55-256, ethos-u65-256, ethos-u65-512"),
    "no host target": (["--target=ethos-u"], "the target list needs the host target 'c' (e.g. \"ethos-u "
                                             "-accelerator-config=ethos-u55-128\",c): operators and the runner run "
                                             "on the Cortex-M"),
    "unknown flag": ([TARGET, "--frobnicate"], "unrecognized arguments: --frobnicate"),
    "misspelt target option": (["--target=ethos-u -accelerator_confg=ethos-u55-64,c"],
                               "unknown option 'accelerator_confg' for target ethos-u; valid: accelerator-config, "
                               "system-config, memory-mode, enable-cascader, enable-striping, "
                               "disable-copying-constants, dev-log-plans, dev-select-proposal"),
    "misspelt per-target flag": ([TARGET, "--target-c-mcpuu=cortex-m55"],
                                 "unknown option 'mcpuu' for target c; valid: mcpu, march, workspace-byte-alignment, "
                                 "constants-byte-alignment"),
    "per-target flag of no kind": ([TARGET, "--target-ethos-n-foo=1"],
                                   "unknown target kind in --target-ethos-n-foo; valid: --target-ethos-u-<option>, "
                                   "--target-cmsis-nn-<option>, --target-c-<option>, --target-llvm-<option>"),
    "per-target flag without value": ([TARGET, "--target-c-mcpu"],
                                      "--target-c-mcpu needs a value, e.g. --target-c-mcpu=VALUE"),
    "per-target flag of a kind not in --target": ([TARGET, "--target-llvm-mcpu=cortex-m55"],
                                                  "--target-llvm-mcpu given, but llvm is not in --target"),
    "unknown cmsis-nn cpu": (["--target=cmsis-nn,c", "--target-cmsis-nn-mcpu=cortex-a53"],
                             "unknown -mcpu 'cortex-a53' for target cmsis-nn; valid: cortex-m0, cortex-m0plus, "
                             "cortex-m3, cortex-m23, cortex-m4, cortex-m7, cortex-m33, cortex-m35p, cortex-m55, "
                             "cortex-m85"),
    "unknown cmsis-nn attribute": (["--target=cmsis-nn,c", "--target-cmsis-nn-mcpu=cortex-m55",
                                    "--target-cmsis-nn-mattr=+nomve,+nofp"],
                                   "unknown -mattr '+nofp' for target cmsis-nn; valid: +nodsp, +nomve"),
    "runtime": ([TARGET, "--runtime=cpp"], "--runtime 'cpp' is not supported; use crt"),
    "graph executor": ([TARGET, "--executor", "graph"], "--executor 'graph' is not supported; use aot"),
    "so output": ([TARGET, "--output-format", "so"], "--output-format 'so' is not supported; use mlf"),
    "bad pass config": ([TARGET, "--pass-config", "tir.usmp.algo=x"],
                        "unknown pass config 'tir.usmp.algo'; known: tir.usmp.enable, tir.usmp.algorithm, "
                        "tir.disable_vectorize, tir.disable_storage_rewrite, tir.usmp.use_workspace_io"),
    "bad planner": ([TARGET, "--memory-planner", "magic"],
                    "unknown memory planner 'magic'; choose one of auto, greedy_by_size, greedy_by_conflicts, "
                    "hill_climb, exact"),
}


@pytest.mark.parametrize("case", OPTION_CASES)
def test_bad_option_is_one_line_error(case, tmp_path, capsys):
    args, message = OPTION_CASES[case]
    model = _write(tmp_path, "m.tflite", models.make("conv2d", 0))
    status = tvmc(["compile", str(model), *args, "-o", str(tmp_path / "out.tar")])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2
    assert err[-1] == f"tvmc: error: {message}"
    assert not (tmp_path / "out.tar").exists()


def test_unwritable_output(tmp_path, capsys):
    model = _write(tmp_path, "m.tflite", models.make("conv2d", 0))
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        cases = {tmp_path / "missing" / "out.tar": f"directory {tmp_path / 'missing'} does not exist",
                 tmp_path: "it is a directory"}
        if os.geteuid() != 0:  # root may write anywhere
            cases[locked / "out.tar"] = f"directory {locked} is not writable"
        for output, reason in cases.items():
            assert tvmc(["compile", str(model), TARGET, "-o", str(output)]) == 2
            assert capsys.readouterr().err.strip().splitlines()[-1] == f"tvmc: error: cannot write {output}: {reason}"
    finally:
        locked.chmod(0o700)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["locked", "m.tflite"]


def test_errors_through_the_console_command(tmp_path):
    """The installed entry point: exit 2, one line, no traceback."""
    result = _command("compile", str(_write(tmp_path, "x.tflite", b"junk")), TARGET, "-o", str(tmp_path / "o.tar"))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == \
        f"tvmc: error: {tmp_path / 'x.tflite'} is not a valid TFLite model: not a TFLite flatbuffer (missing the " \
        "'TFL3' file identifier)"
    assert "Traceback" not in result.stderr
    result = _command("run", str(tmp_path / "x.tflite"))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [f"tvmc: error: {tmp_path / 'x.tflite'} is not a readable MLF tarball"]


def test_garbage_collector_paused_only_for_the_tvmc_process_imports(tmp_path):
    """The `tvmc` process pauses Python's collector during its imports and freezes what they created
    (ethosu_tvm.collector); `main` called inside another program leaves that program's collector alone."""
    import gc

    frozen = gc.get_freeze_count()
    assert tvmc(["compile", str(_write(tmp_path, "x.tflite", b"junk")), TARGET, "-o", str(tmp_path / "o.tar")]) == 2
    assert gc.isenabled() and gc.get_freeze_count() == frozen
    probe = ("import gc, ethosu_tvm.collector as p; p.pause(); paused = not gc.isenabled(); import tvm; p.resume(); "
             "print(paused, gc.isenabled(), gc.get_freeze_count() > 100_000)")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert result.stdout.split() == ["True", "True", "True"]


def test_tvmc_process_keeps_freed_memory_for_reuse():
    """`tvmc` raises glibc's mmap threshold (ethosu_tvm.process.keep_freed_memory): an 8 MiB buffer then comes
    from the heap, not from its own mapping that the kernel must fault in again for the next one."""
    probe = ("import ctypes, sys, numpy as np\n"
             "from ethosu_tvm.process import keep_freed_memory\n"
             "class Info(ctypes.Structure):\n"
             "    _fields_ = [(n, ctypes.c_size_t) for n in 'arena ordblks smblks hblks hblkhd usmblks fsmblks "
             "uordblks fordblks keepcost'.split()]\n"
             "libc = ctypes.CDLL(None)\n"
             "libc.mallinfo2.restype = Info\n"
             "if sys.argv[1] == 'kept':\n"
             "    keep_freed_memory()\n"
             "before = libc.mallinfo2().hblkhd\n"
             "buffer = np.ones(8 << 20, np.uint8)\n"
             "print(libc.mallinfo2().hblkhd - before)\n")
    mapped = {mode: subprocess.run([sys.executable, "-c", probe, mode], capture_output=True, text=True,
                                   check=True).stdout.strip() for mode in ("default", "kept")}
    assert int(mapped["default"]) >= 8 << 20
    assert mapped["kept"] == "0"
