"""Compiling a .tflite with Arm's Vela, for benchmarks and validation.

By default this runs the `vela` command line (`ethosu.vela.vela.main`, the function the console script calls)
in-process: for the default Regor compiler the output is byte-identical to a `vela` subprocess but takes ~15 ms
instead of ~400 ms of interpreter start-up. Vela's legacy Python compiler (`--debug-force-legacy-core`) keeps state
between runs in one process, so it needs `fresh_process=True`. In-process console output (Vela also writes from
C++) is captured at the file-descriptor level and only reported on failure.
"""
from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

# Vela's bundled system description that matches the cycle model (cycles.py); naming it silences Vela's warnings.
VELA_OPTIONS = ("--config", "Arm/vela.ini", "--system-config", "Ethos_U55_High_End_Embedded",
                "--memory-mode", "Shared_Sram")


@contextlib.contextmanager
def _captured_output():
    """Redirect fds 1 and 2 (and Python's streams) to a temporary file; yields the file."""
    with tempfile.TemporaryFile(mode="w+b") as log:
        sys.stdout.flush()
        sys.stderr.flush()
        saved = [os.dup(1), os.dup(2)]
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        try:
            with open(os.devnull, "w") as null, contextlib.redirect_stdout(null), contextlib.redirect_stderr(null):
                yield log
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)


def _run_in_process(argv: list[str]) -> tuple[int | str, list[str]]:
    from ethosu.vela import vela

    with _captured_output() as log:
        try:
            status = vela.main(argv)
        except SystemExit as exit_:
            status = exit_.code
        except Exception as err:  # Vela reports unsupported models by raising
            status = f"{type(err).__name__}: {err}"
        log.seek(0)
        return status, log.read().decode(errors="replace").strip().splitlines()


def _run_in_subprocess(argv: list[str]) -> tuple[int | str, list[str]]:
    result = subprocess.run([sys.executable, "-m", "ethosu.vela", *argv], capture_output=True, text=True)
    return result.returncode, (result.stdout + result.stderr).strip().splitlines()


def compile_model(model: Path, accelerator: str, optimise: str, output_dir: Path,
                  extra_options: tuple[str, ...] = (), fresh_process: bool = False) -> bytes:
    """The `_vela.tflite` Vela produces for `model` (optimise: "Performance" or "Size"); `extra_options` are
    further command-line options, e.g. ("--debug-force-legacy-core",)."""
    output_dir.mkdir(parents=True, exist_ok=True)
    argv = ["--accelerator-config", accelerator, "--optimise", optimise, *VELA_OPTIONS, *extra_options,
            "--output-dir", str(output_dir), str(model)]
    output = output_dir / f"{model.stem}_vela.tflite"
    status, messages = (_run_in_subprocess if fresh_process else _run_in_process)(argv)
    if status or not output.is_file():
        detail = status if isinstance(status, str) else (messages[-1] if messages else f"exit status {status}")
        raise RuntimeError(f"vela failed on {model.name}: {detail}")
    return output.read_bytes()
