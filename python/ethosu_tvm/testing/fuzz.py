"""Damaged model files for robustness tests: seeded mutations of a valid .tflite, compiled through `tvmc compile`.

A damaged download or a hand-edited file must give exit 0 (the damage was harmless) or exit 2 with one line on
stderr and nothing written; exit 1 (an internal error) or a traceback is a bug in the compiler.
"""
from __future__ import annotations

import contextlib
import io
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

MUTATIONS = ("flip", "truncate", "zero", "duplicate")


def mutate(model: bytes, rng: np.random.Generator) -> tuple[str, bytes]:
    """One random mutation of `model`: flipped bytes, a truncation, a zeroed run or a duplicated run."""
    data = bytearray(model)
    kind = MUTATIONS[int(rng.integers(len(MUTATIONS)))]
    if kind == "flip":
        for position in rng.integers(0, len(data), size=int(rng.integers(1, 9))):
            data[position] ^= int(rng.integers(1, 256))
    elif kind == "truncate":
        del data[int(rng.integers(8, len(data))):]
    else:
        start = int(rng.integers(0, len(data)))
        length = int(rng.integers(1, 65))
        if kind == "zero":
            data[start:start + length] = bytes(len(data[start:start + length]))
        else:
            data[start:start] = data[start:start + length]
    return kind, bytes(data)


@dataclass
class RobustnessResult:
    """Counts by outcome (the fuzzer's "compiled", "refused", "internal error", "bad exit"; the scale sweep's
    `scale_sweep.sweep`), and what went wrong."""

    outcomes: Counter = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)

    def report(self, summary: str) -> int:
        """Print `summary` with the counts, then each failure; the exit status of a benchmark (1 on a failure)."""
        counts = ", ".join(f"{outcome} {count}" for outcome, count in sorted(self.outcomes.items()))
        print(f"{summary}: {counts}")
        for failure in self.failures:
            print(f"FAILURE {failure}")
        return 1 if self.failures else 0


def compile_once(model: bytes, directory: Path, target: str, keep: bool = False) -> tuple[int, list[str], bool]:
    """`tvmc compile` in this process: (exit status, stderr lines, whether anything was written at -o). The
    archive, directory/module.tar, is removed unless `keep`."""
    from ..cli import main as tvmc

    source, output = directory / "model.tflite", directory / "module.tar"
    source.write_bytes(model)
    stderr, stdout = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(stdout):
        status = tvmc(["compile", str(source), f"--target={target}", "-o", str(output)])
    written = output.exists() or any(directory.glob(".module.tar*"))
    if output.exists() and not keep:
        output.unlink()
    return status, stderr.getvalue().strip().splitlines(), written


def fuzz(models: dict[str, bytes], count: int, seed: int = 0,
         target: str = "ethos-u -accelerator-config=ethos-u55-128,c") -> RobustnessResult:
    """Compile `count` mutations spread over `models`; a failure is exit 1, another status than 0/2, a traceback,
    more than one error line, or a file left at -o after an error."""
    rng = np.random.default_rng(seed)
    result = RobustnessResult()
    names = sorted(models)
    with tempfile.TemporaryDirectory(prefix="ethosu_tvm_fuzz_") as tmp:
        for i in range(count):
            name = names[i % len(names)]
            kind, mutated = mutate(models[name], rng)
            status, lines, written = compile_once(mutated, Path(tmp), target)
            errors = [line for line in lines if line.startswith(("tvmc: error", "tvmc: internal error"))]
            outcome = {0: "compiled", 2: "refused", 1: "internal error"}.get(status, "bad exit")
            result.outcomes[outcome] += 1
            bad = (status not in (0, 2) or (status == 2 and (len(errors) != 1 or written))
                   or any("Traceback" in line for line in lines))
            if bad:
                result.failures.append(f"{name} #{i} ({kind}): exit {status}: {lines[-1] if lines else ''}")
    return result
