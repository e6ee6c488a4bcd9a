"""Compile wall time of whole processes, side by side: `tvmc compile` (our CLI) against the `vela` CLI.

compare.py times both compilers in-process, after their imports; this times what a user waits for, interpreter start
and imports included. The two commands alternate for each repetition, so that load from other processes on the
machine falls on both alike, and each column is the median over the repetitions. Our import time (the interpreter
importing what `tvmc compile` imports) is measured the same way, and subtracted for the time after imports.

    .venv/bin/python benchmarks/compile_time.py [--models FILE ...] [--models-dir DIR] [--accelerator CONFIG]
                                                [--repeat N]
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MODELS = ["mlperf_tiny_kws_dscnn_int8.tflite", "mlperf_tiny_vww_mobilenetv1_96_int8.tflite",
          "mlperf_tiny_ic_resnet8_int8.tflite", "mlperf_tiny_ad_fc_autoencoder_int8.tflite"]
VELA = Path(sys.executable).with_name("vela")
IMPORTS = "import ethosu_tvm.cli.compile_command, ethosu_tvm.build_module"


def wall_time(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def commands(model: Path, accelerator: str, out: Path) -> dict[str, list[str]]:
    return {
        "vela": [str(VELA), "--accelerator-config", accelerator, str(model), "--output-dir", str(out / "vela")],
        "ours": [sys.executable, "-m", "ethosu_tvm", "compile", f"--target=ethos-u -accelerator-config={accelerator},c",
                 str(model), "--output-format", "mlf", "-o", str(out / "model.tar")],
        "imports": [sys.executable, "-c", IMPORTS],
    }


def measure(model: Path, accelerator: str, repeat: int) -> dict[str, float]:
    """Median wall time of each command over `repeat` alternating runs (after one untimed run of each)."""
    with tempfile.TemporaryDirectory() as tmp:
        runs = commands(model, accelerator, Path(tmp))
        for command in runs.values():
            wall_time(command)
        times: dict[str, list[float]] = {name: [] for name in runs}
        for _ in range(repeat):
            for name, command in runs.items():
                times[name].append(wall_time(command))
    return {name: statistics.median(values) for name, values in times.items()}


def table(results: dict[str, dict[str, float]]) -> str:
    lines = ["| model | vela CLI s | tvmc compile s | ratio | our imports s | ours after imports s | "
             "after imports / vela CLI |", "|---|---|---|---|---|---|---|"]
    for model, t in results.items():
        after = t["ours"] - t["imports"]
        lines.append(f"| {model} | {t['vela']:.2f} | {t['ours']:.2f} | {t['ours'] / t['vela']:.1f} | "
                     f"{t['imports']:.2f} | {after:.2f} | {after / t['vela']:.1f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=MODELS)
    parser.add_argument("--models-dir", type=Path, default=Path("/work/shared/models"))
    parser.add_argument("--accelerator", default="ethos-u55-128")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    results = {Path(name).stem: measure(args.models_dir / name, args.accelerator, args.repeat) for name in args.models}
    print(table(results))


if __name__ == "__main__":
    main()
