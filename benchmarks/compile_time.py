"""Compile wall time of whole processes, side by side: `tvmc compile` (our CLI) against the `vela` CLI.

compare.py times both compilers in-process, after their imports; this times what a user waits for, interpreter start
and imports included. The commands alternate for each repetition, so that load from other processes on the machine
falls on all alike, and each column is the minimum over the repetitions (the machine is shared: the minimum is the
run least disturbed by others). Our imports and the time after them are measured in process: a third command runs
the same compile as `tvmc compile` in an interpreter that times its imports (what `tvmc compile` imports before it
reads the model, with the garbage collector paused as the `tvmc` process pauses it), then the rest (import, build,
MLF export, including the modules those import on first use). Our package is byte-compiled first, as a pip install
leaves it (and Vela's): a process that may not write bytecode would otherwise compile every module each time.
With --scaling, every model in the models folder is timed, the table gives each one's operator count, and a fourth
command compiles it with the cascader (`-enable-cascader=1`): how compile time grows with the network. A command
that fails (a model it refuses) shows as "fails".

    .venv/bin/python benchmarks/compile_time.py [--models FILE ...] [--models-dir DIR] [--accelerator CONFIG]
                                                [--repeat N] [--scaling]
"""
from __future__ import annotations

import argparse
import compileall
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import tflite

import ethosu_tvm
from ethosu_tvm.testing import shared_models_dir

MODELS = ["mlperf_tiny_kws_dscnn_int8.tflite", "mlperf_tiny_vww_mobilenetv1_96_int8.tflite",
          "mlperf_tiny_ic_resnet8_int8.tflite", "mlperf_tiny_ad_fc_autoencoder_int8.tflite"]
VELA = Path(sys.executable).with_name("vela")
# Prints the seconds its imports took, then those of the compile after them.
PHASES = ("import sys, time; start = time.perf_counter(); import ethosu_tvm.collector; ethosu_tvm.collector.pause(); "
          "import ethosu_tvm.cli.compile_command, ethosu_tvm.build_module; imported = time.perf_counter(); "
          "from ethosu_tvm.cli import main; main(sys.argv[1:]); "
          "print(imported - start, time.perf_counter() - imported)")


def timed(name: str, command: list[str]) -> dict[str, float]:
    """{name: the command's wall time}, or for "phases" the two times it prints; infinite when it fails."""
    start = time.perf_counter()
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    out = done.stdout
    if done.returncode != 0:
        return dict.fromkeys(("imports", "after") if name == "phases" else (name,), math.inf)
    if name == "phases":
        imports, after = out.splitlines()[-1].split()
        return {"imports": float(imports), "after": float(after)}
    return {name: time.perf_counter() - start}


def commands(model: Path, accelerator: str, out: Path, cascader: bool = False) -> dict[str, list[str]]:
    compile_args = ["compile", f"--target=ethos-u -accelerator-config={accelerator},c", str(model),
                    "--output-format", "mlf", "-o", str(out / "model.tar")]
    cascaded = {"cascader": [sys.executable, "-m", "ethosu_tvm", "compile",
                             f"--target=ethos-u -accelerator-config={accelerator} -enable-cascader=1,c", str(model),
                             "--output-format", "mlf", "-o", str(out / "cascaded.tar")]} if cascader else {}
    return {
        "vela": [str(VELA), "--accelerator-config", accelerator, "--optimise", "Performance", str(model),
                 "--output-dir", str(out / "vela")],
        "ours": [sys.executable, "-m", "ethosu_tvm", *compile_args],
        "phases": [sys.executable, "-c", PHASES, *compile_args],
        **cascaded,
    }


def measure(model: Path, accelerator: str, repeat: int, cascader: bool = False) -> dict[str, float]:
    """The least time of each command (and of our two phases) over `repeat` alternating runs, after one untimed
    run of each."""
    with tempfile.TemporaryDirectory() as tmp:
        runs = commands(model, accelerator, Path(tmp), cascader)
        for name, command in runs.items():
            timed(name, command)
        times: dict[str, list[float]] = {}
        for _ in range(repeat):
            for name, command in runs.items():
                for key, value in timed(name, command).items():
                    times.setdefault(key, []).append(value)
    return {name: min(values) for name, values in times.items()}


def operators(model: Path) -> int:
    """The operators of the model's subgraphs."""
    read = tflite.Model.GetRootAs(model.read_bytes(), 0)
    return sum(read.Subgraphs(i).OperatorsLength() for i in range(read.SubgraphsLength()))


def _seconds(value: float) -> str:
    return f"{value:.2f}" if math.isfinite(value) else "fails"


def _ratio(value: float, vela: float) -> str:
    return f"{value / vela:.1f}" if math.isfinite(value) and math.isfinite(vela) else "-"


def table(results: dict[str, dict[str, float]], counts: dict[str, int] | None = None) -> str:
    """The times side by side; with `counts` (operators per model), those and the cascader's times too."""
    lines = ["| model | " + ("operators | " if counts else "") + "vela CLI s | tvmc compile s | ratio | "
             "our imports s | ours after imports s | after imports / vela CLI |"
             + (" cascader s | ratio |" if counts else ""),
             "|---|" + ("---|" if counts else "") + "---|---|---|---|---|---|" + ("---|---|" if counts else "")]
    for model, t in results.items():
        row = (f"| {model} | " + (f"{counts[model]} | " if counts else "")
               + f"{_seconds(t['vela'])} | {_seconds(t['ours'])} | {_ratio(t['ours'], t['vela'])} | "
               f"{_seconds(t['imports'])} | {_seconds(t['after'])} | {_ratio(t['after'], t['vela'])} |")
        if counts:
            row += f" {_seconds(t['cascader'])} | {_ratio(t['cascader'], t['vela'])} |"
        lines.append(row)
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=MODELS)
    parser.add_argument("--models-dir", type=Path, default=shared_models_dir(),
                        help="default: $ETHOSU_TVM_MODELS, else ../shared/models beside the checkout")
    parser.add_argument("--accelerator", default="ethos-u55-128")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--scaling", action="store_true",
                        help="every model in --models-dir, with its operator count and a cascader build")
    args = parser.parse_args()
    compileall.compile_dir(Path(ethosu_tvm.__file__).parent, quiet=1)
    models = sorted(args.models_dir.glob("*.tflite")) if args.scaling else [args.models_dir / n for n in args.models]
    results = {model.stem: measure(model, args.accelerator, args.repeat, args.scaling) for model in models}
    print(table(results, {model.stem: operators(model) for model in models} if args.scaling else None))


if __name__ == "__main__":
    main()
