"""Driving `tvmc compile` / `tvmc run` in-process (the same `main` the console script calls) and checking the
compiled C against LiteRT's reference kernels."""
from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import numpy as np

from ethosu_tvm.cli import main as tvmc
from ethosu_tvm.frontend.tflite_file import input_infos, output_infos
from ethosu_tvm.run.host_program import HostProgram
from ethosu_tvm.testing.reference import random_inputs, run_litert

SEEDS = range(5)
ACCELERATORS = ("ethos-u55-128", "ethos-u55-256")


def npu_target(accelerator: str) -> str:
    return f"ethos-u -accelerator-config={accelerator},c"


def compile_model(model: bytes, directory: Path, target: str, *extra: str) -> Path:
    """`tvmc compile` the model into directory/module.tar; asserts success."""
    directory.mkdir(parents=True, exist_ok=True)
    source = directory / "model.tflite"
    source.write_bytes(model)
    output = directory / "module.tar"
    status = tvmc(["compile", str(source), f"--target={target}", "--output-format", "mlf", "-o", str(output),
                   *extra])
    assert status == 0, f"tvmc compile exited with {status}"
    return output


def extract(archive: Path, directory: Path) -> Path:
    with tarfile.open(archive) as tar:
        tar.extractall(directory, filter="data")
    return directory


def tvmc_run(archive: Path, model: bytes, inputs: list[np.ndarray], directory: Path) -> list[np.ndarray]:
    """`tvmc run` with the inputs in an .npz by model input name; the outputs read back from its .npz."""
    names = [info.name for info in input_infos(model)]
    np.savez(directory / "inputs.npz", **dict(zip(names, inputs)))
    status = tvmc(["run", str(archive), "--inputs", str(directory / "inputs.npz"), "--outputs",
                   str(directory / "outputs.npz")])
    assert status == 0, f"tvmc run exited with {status}"
    with np.load(directory / "outputs.npz") as data:
        return [data[info.name] for info in output_infos(model)]


def assert_bit_exact(model: bytes, archive: Path, directory: Path, seeds=SEEDS, reference=run_litert,
                     more_inputs=()) -> None:
    """Seed 0 through `tvmc run`; every seed, then each input list of `more_inputs`, through the same host program
    (one gcc build); all equal the reference (LiteRT; `run_tflm` for models LiteRT rejects)."""
    cases = {seed: random_inputs(model, seed) for seed in seeds}
    cases.update({f"input set {i}": inputs for i, inputs in enumerate(more_inputs)})
    expected = {case: reference(model, inputs) for case, inputs in cases.items()}
    first = next(iter(seeds))
    for got, want in zip(tvmc_run(archive, model, random_inputs(model, first), directory), expected[first]):
        np.testing.assert_array_equal(got.reshape(want.shape), want, err_msg="tvmc run")
    mlf = extract(archive, directory / "mlf")
    assert_plan_valid(json.loads((mlf / "src/memory_plan.json").read_text()))
    program = HostProgram(mlf, directory)
    names = [info.name for info in output_infos(model)]
    for case, inputs in cases.items():
        outputs = program.run(inputs)
        for name, want in zip(names, expected[case]):
            np.testing.assert_array_equal(outputs[name].reshape(want.shape), want, err_msg=f"{name}, seed {case}")


def members(archive: Path) -> dict[str, bytes]:
    with tarfile.open(archive) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


def npz_bytes(**arrays) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def assert_plan_valid(plan: dict) -> None:
    """An independent check of src/memory_plan.json: buffers live at the same step never share bytes of a pool,
    every offset is aligned, every buffer lies within its pool's size."""
    sizes = {pool["name"]: pool["size_bytes"] for pool in plan["pools"]}
    buffers = plan["buffers"]
    for a in buffers:
        assert a["offset"] % a["alignment"] == 0 and a["alignment"] >= 16, a
        assert 0 <= a["offset"] and a["offset"] + a["size"] <= sizes[a["pool"]], a
    for i, a in enumerate(buffers):
        for b in buffers[i + 1:]:
            live_together = a["first_use"] <= b["last_use"] and b["first_use"] <= a["last_use"]
            overlap = a["offset"] < b["offset"] + b["size"] and b["offset"] < a["offset"] + a["size"]
            assert not (a["pool"] == b["pool"] and live_together and overlap), (a, b)
