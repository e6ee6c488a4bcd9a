"""Extreme quantization scales for robustness: single-operator factory models compiled at scales far from those of
trained models (output scales of 1e-12 to 1e9, input scales of 1e-9 to 1e4, a second operand's scale), where
TFLite's integer arithmetic shifts past its types, flushes multipliers to zero or refuses the model.

Each compile must be a one-line refusal (exit 2) or equal the reference on seeded inputs. The reference is the op's
(`reference.reference_runner`), or TFLite Micro where LiteRT refuses or aborts on the model; a compiled model that
both runtimes refuse is a failure too. The runtimes run in a child process, as they abort on scales they refuse.
"""
from __future__ import annotations

import os
import pickle
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .fuzz import RobustnessResult, compile_once
from .models import INT16_OPS, OPS, make
from .models.single import SINGLE, op_params
from .reference import random_inputs, reference_runner, run_tflm

OUTPUT_SCALES = (1e-12, 1 / 1.9e9, 1e-6, 1e-3, 0.5, 10.0, 1e4, 1e9)
INPUT_SCALES = (1e-9, 1e-5, 1e-2, 10.0, 1e4)
# Ops whose factory models take no second operand's scale, or need their operands' quantizations equal.
_NO_SECOND_SCALE = {"minimum", "maximum", "pack", "unpack", "concatenation", "add_n", "select_v2"}


@dataclass(frozen=True)
class Case:
    """One model: the factory op and the parameters `models.make` gets (`params` as sorted items)."""

    op: str
    params: tuple[tuple[str, object], ...]

    def __str__(self) -> str:
        return f"{self.op}({', '.join(f'{k}={v:g}' if isinstance(v, float) else f'{k}={v}' for k, v in self.params)})"


def cases(ops=OPS) -> list[Case]:
    """Per op: its output scale swept at input scale 1 (where it takes one), its input scale (int8, and int16 for
    ops with an int16 model), and a binary op's second operand scale."""
    found = []
    for op in ops:
        method, arity, _ = SINGLE[op]
        if "out_scale" in op_params(method):
            found += [Case(op, (("in_scale", 1.0), ("out_scale", scale))) for scale in OUTPUT_SCALES]
        found += [Case(op, (("in_scale", scale),)) for scale in INPUT_SCALES]
        if op in INT16_OPS:
            found += [Case(op, (("dtype", "int16"), ("in_scale", scale))) for scale in INPUT_SCALES]
        if arity == 2 and op not in _NO_SECOND_SCALE:
            found += [Case(op, (("in2_scale", scale),)) for scale in INPUT_SCALES]
    return found


def _in_child(function, *args):
    """("ok", result), ("error", message) or ("abort", status) of function(*args) run in a forked process."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(read)
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)  # the runtimes' own messages (TFLite Micro's on refusals, LiteRT's delegate notice)
        os.dup2(null, 2)
        try:
            reply = ("ok", function(*args))
        except BaseException as err:  # whatever the runtime raises is its refusal
            reply = ("error", f"{type(err).__name__}: {str(err).strip().splitlines()[-1][:200] if str(err) else ''}")
        with os.fdopen(write, "wb") as pipe:
            pipe.write(pickle.dumps(reply))
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        data = pipe.read()
    _, status = os.waitpid(pid, 0)
    return pickle.loads(data) if data else ("abort", status)


def _reference(op: str, model: bytes, inputs: list[np.ndarray]) -> tuple[str, object]:
    first = reference_runner(op)
    outcome = _in_child(first, model, inputs)
    if outcome[0] == "ok" or first is run_tflm:
        return outcome
    return _in_child(run_tflm, model, inputs)  # LiteRT refused the model: TFLite Micro is the reference


def _outputs(archive: Path, model: bytes, inputs: list[np.ndarray], directory: Path) -> list[np.ndarray]:
    """The compiled model's outputs on `inputs` (its C built for this machine, NPU work in the simulator)."""
    from ..frontend.tflite_file import output_infos
    from ..run.host_program import HostProgram

    with tarfile.open(archive) as tar:
        tar.extractall(directory / "mlf", filter="data")
    outputs = HostProgram(directory / "mlf", directory).run(inputs)
    return [outputs[info.name] for info in output_infos(model)]


def sweep(selected: list[Case], targets: tuple[str, ...], seed: int = 0) -> RobustnessResult:
    """Compile every case for every target and check it (see the module docstring); outcomes "exact", "refused",
    "failed" and "not built" (models the factory cannot write)."""
    result = RobustnessResult()
    for case in selected:
        try:
            model = make(case.op, **dict(case.params))
        except (ValueError, OverflowError):  # the factory cannot write it (e.g. EXP's range at input scale 10)
            result.outcomes["not built"] += 1
            continue
        inputs = random_inputs(model, seed)
        reference = None
        for target in targets:
            with tempfile.TemporaryDirectory(prefix="ethosu_tvm_sweep_") as tmp:
                directory = Path(tmp)
                status, lines, written = compile_once(model, directory, target, keep=True)
                failure = None
                if status == 2 and len(lines) == 1 and not written:
                    result.outcomes["refused"] += 1
                    continue
                if status != 0:
                    failure = f"exit {status}: {lines[-1] if lines else ''}"
                else:
                    reference = reference or _reference(case.op, model, inputs)
                    if reference[0] != "ok":
                        failure = f"compiled, but both runtimes refuse it ({reference[1]})"
                    else:
                        got = _outputs(directory / "module.tar", model, inputs, directory)
                        if not all(np.array_equal(g.reshape(w.shape), w) for g, w in zip(got, reference[1])):
                            failure = "differs from the reference"
                if failure is None:
                    result.outcomes["exact"] += 1
                else:
                    result.outcomes["failed"] += 1
                    result.failures.append(f"{case} on {target}: {failure}")
    return result
