#!/usr/bin/env python3
"""Benchmark: ethosu_tvm side by side with Vela (--optimise Performance and Size) and TensorFlow Lite Micro.

For each model × accelerator it measures compile wall time, peak SRAM, flash and estimated NPU cycles of our build
and of both Vela builds (cycles from our simulator's cost model on each command stream, plus Vela's own estimate),
TFLite Micro's CPU-only arena, and the workspace each memory-planning algorithm gets for our build's buffers.
Each accelerator is measured in its product's default system config (Ethos_U55_High_End_Embedded or
Ethos_U65_High_End, Shared_Sram): our build, Vela and the simulator's estimates alike.
It prints a Markdown report and writes `compare.md` and `compare.csv` to --out-dir.

With the cascader (unless --skip-cascader), each model × accelerator also gets an SRAM-vs-cycles curve: builds with
the model's I/O in the workspace, each cascaded for one NPU scratch limit taken from the cascader's frontier of
proposals, plus the default uncascaded build, shown beside Vela's two points and checked against two targets
(T1: at most 0.9 × Vela Size's SRAM at no more than its cycles; T2: no more cycles than Vela Performance within
its SRAM). These go to stdout and to `compare_cascader.md`, `compare_cascader.csv` and
`compare_cascader_targets.csv`. See docs/benchmarks.md.

This script is the command line; the work is in its sibling modules: measure.py (the builds and runs), rows.py
(what is measured and derived) and report.py (the Markdown and CSV text).

    .venv/bin/python benchmarks/compare.py [--models F ...] [--accelerators A ...] [--skip-tflm]
                                           [--skip-cascader] [--cascader-points N]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # loaded by file path (tests/test_benchmarks.py), not run as a script
    sys.path.insert(0, str(HERE))

from measure import measure_model, progress, warm_up  # noqa: E402
from report import (cascader_csv_text, cascader_report, cascader_targets_csv_text, csv_text,  # noqa: E402
                    markdown_report)

DEFAULT_MODELS = ("mlperf_tiny_kws_dscnn_int8.tflite", "mlperf_tiny_vww_mobilenetv1_96_int8.tflite",
                  "mlperf_tiny_ic_resnet8_int8.tflite", "mlperf_tiny_ad_fc_autoencoder_int8.tflite")
DEFAULT_ACCELERATORS = ("ethos-u55-128", "ethos-u55-256")
DEFAULT_OUT_DIR = HERE / "results"
DEFAULT_CASCADER_POINTS = 6  # cascader limits per curve, at most (the smallest and largest proposal included)


class BenchmarkError(Exception):
    """A problem with the benchmark's inputs (missing model, bad option), reported as one line."""


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    from ethosu_tvm.testing import shared_models_dir

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=list(DEFAULT_MODELS), metavar="FILE",
                        help="model file names in --models-dir (default: the four MLPerf Tiny models)")
    parser.add_argument("--models-dir", type=Path, default=None,
                        help="folder of the models (default: $ETHOSU_TVM_MODELS, else ../shared/models)")
    parser.add_argument("--accelerators", nargs="+", default=list(DEFAULT_ACCELERATORS), metavar="CONFIG",
                        help="Ethos-U55 or U65 configurations, each measured in its product's default system "
                             "config (default: %(default)s)")
    parser.add_argument("--out-dir", type=Path, default=DEFAULT_OUT_DIR,
                        help="where compare.md, compare.csv and the compare_cascader.* files go "
                             "(default: benchmarks/results)")
    parser.add_argument("--skip-tflm", action="store_true", help="do not measure TFLite Micro's arena")
    parser.add_argument("--skip-cascader", action="store_true",
                        help="do not measure the cascader's SRAM-vs-cycles curves and targets")
    parser.add_argument("--cascader-points", type=int, default=DEFAULT_CASCADER_POINTS, metavar="N",
                        help="cascader limits per curve, at most; the smallest and largest proposal are always "
                             "included, the default build is added (default: %(default)s)")
    args = parser.parse_args(argv)
    args.models_dir = args.models_dir or shared_models_dir()
    return args


def model_paths(models_dir: Path, names: list[str]) -> list[Path]:
    """The model files, or BenchmarkError naming every missing one."""
    paths = [models_dir / name for name in names]
    missing = [p.name for p in paths if not p.is_file()]
    if missing:
        raise BenchmarkError(f"model{'s' if len(missing) > 1 else ''} {', '.join(missing)} not found in "
                             f"{models_dir}; pass --models-dir or set ETHOSU_TVM_MODELS")
    return paths


def check_accelerators(accelerators: list[str]) -> None:
    from ethosu_tvm.arch import ACCELERATORS

    unknown = [a for a in accelerators if a not in ACCELERATORS]
    if unknown:
        raise BenchmarkError(f"unknown accelerator {unknown[0]!r}; valid: {', '.join(ACCELERATORS)}")


def main(argv: list[str] | None = None) -> int:
    """Run the comparison; 0 on success, 2 (with a one-line message on stderr) for bad inputs."""
    args = parse_args(argv)
    try:
        if args.cascader_points < 2:
            raise BenchmarkError(f"--cascader-points must be at least 2 (the smallest and the largest proposal), "
                                 f"got {args.cascader_points}")
        paths = model_paths(args.models_dir, args.models)
        check_accelerators(args.accelerators)
    except BenchmarkError as err:
        print(f"compare.py: error: {err}", file=sys.stderr)
        return 2
    warm_up()
    rows = []
    with tempfile.TemporaryDirectory(prefix="ethosu_tvm_compare_") as work_dir:
        for path in paths:
            rows += measure_model(path, args.accelerators, Path(work_dir), args.skip_tflm,
                                  None if args.skip_cascader else args.cascader_points)
    report = markdown_report(rows)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    (args.out_dir / "compare.md").write_text(report)
    (args.out_dir / "compare.csv").write_text(csv_text(rows))
    print(report, end="")
    progress(f"wrote {args.out_dir / 'compare.md'} and {args.out_dir / 'compare.csv'}")
    if not args.skip_cascader:
        cascades = cascader_report(rows)
        (args.out_dir / "compare_cascader.md").write_text(cascades)
        (args.out_dir / "compare_cascader.csv").write_text(cascader_csv_text(rows))
        (args.out_dir / "compare_cascader_targets.csv").write_text(cascader_targets_csv_text(rows))
        print("\n" + cascades, end="")
        progress(f"wrote {args.out_dir / 'compare_cascader.md'}, {args.out_dir / 'compare_cascader.csv'} and "
                 f"{args.out_dir / 'compare_cascader_targets.csv'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
