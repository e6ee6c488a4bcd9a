#!/usr/bin/env python3
"""Benchmark: ethosu_tvm side by side with Vela (--optimise Performance and Size) and TensorFlow Lite Micro.

For each model × accelerator it measures compile wall time, peak SRAM, flash and estimated NPU cycles of our build
and of both Vela builds (cycles from our simulator's cost model on each command stream, plus Vela's own estimate),
TFLite Micro's CPU-only arena, and the workspace each memory-planning algorithm gets for our build's buffers.
It prints a Markdown report and writes `compare.md` and `compare.csv` to --out-dir. See docs/benchmarks.md.

    .venv/bin/python benchmarks/compare.py [--models F ...] [--accelerators A ...] [--skip-tflm]
"""
from __future__ import annotations

import argparse
import csv
import io
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

DEFAULT_MODELS = ("mlperf_tiny_kws_dscnn_int8.tflite", "mlperf_tiny_vww_mobilenetv1_96_int8.tflite",
                  "mlperf_tiny_ic_resnet8_int8.tflite", "mlperf_tiny_ad_fc_autoencoder_int8.tflite")
DEFAULT_ACCELERATORS = ("ethos-u55-128", "ethos-u55-256")
VELA_MODES = {"vela_perf": "Performance", "vela_size": "Size"}  # column prefix -> --optimise value
PLANNERS = ("greedy_by_size", "greedy_by_conflicts", "hill_climb", "exact")
# Ratio column "<name>_vs_<Vela mode>" -> (our field, the Vela fields whose sum divides it).
COMPARED = {
    "sram": ("sram", ("sram",)),
    "sram_io_in_workspace": ("sram_io_in_workspace", ("sram",)),
    "flash": ("flash", ("flash",)),
    "flash_incl_command_stream": ("flash", ("flash", "command_stream")),
    "cycles": ("cycles", ("cycles",)),
}
DEFAULT_OUT_DIR = Path(__file__).resolve().parent / "results"
KIB = 1024


class BenchmarkError(Exception):
    """A problem with the benchmark's inputs (missing model, bad option), reported as one line."""


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def yes_no(flag: bool) -> str:
    return "yes" if flag else "no"


def outputs_equal(outputs, expected) -> bool:
    """Whether two output lists hold the same values (shapes compared after flattening)."""
    outputs, expected = list(outputs), list(expected)
    return len(outputs) == len(expected) and all(
        np.array_equal(np.asarray(a).reshape(-1), np.asarray(b).reshape(-1)) for a, b in zip(outputs, expected))


@dataclass(frozen=True)
class OursResult:
    """Our build: `sram` = planned workspace + model I/O; `flash` = command streams, weights and host tables;
    `sram_io_in_workspace` = the same with the build's use_workspace_io option (see sram_with_io_in_workspace)."""

    compile_s: float
    sram: int
    workspace: int
    io: int
    sram_io_in_workspace: int
    flash: int
    command_stream: int  # of flash: the NPU driver payloads (COP1 header + register commands), 16-byte padded
    cycles: int
    bit_exact: bool
    host_ops: int
    planner: str  # the algorithm the default ("auto") planning picked


@dataclass(frozen=True)
class VelaResult:
    """One Vela build: SRAM and flash (the read-only tensor) from its summary CSV, cycles from our simulator and
    from Vela's CSV."""

    compile_s: float
    sram: int
    flash: int
    command_stream: int  # not in `flash`: the COP1 driver payload, a tensor of its own in the _vela.tflite
    cycles: int
    own_npu_cycles: int | None
    own_total_cycles: int | None
    bit_exact: bool


@dataclass(frozen=True)
class PlannerResult:
    """The workspace one planning algorithm gives for our build's buffers."""

    algorithm: str
    size: int
    proven_optimal: bool
    lower_bound: int
    seconds: float


@dataclass(frozen=True)
class Row:
    """Everything measured for one model on one accelerator."""

    model: str
    accelerator: str
    ours: OursResult
    vela: dict[str, VelaResult]  # by VELA_MODES key
    tflm_arena: int | None
    planners: tuple[PlannerResult, ...]

    def planner(self, algorithm: str) -> PlannerResult:
        return next(p for p in self.planners if p.algorithm == algorithm)

    @property
    def planner_target_met(self) -> bool:
        """hill_climb or exact at least as good as greedy_by_size."""
        best = min(self.planner("hill_climb").size, self.planner("exact").size)
        return best <= self.planner("greedy_by_size").size

    def ratios(self) -> dict[str, float | None]:
        """ours / baseline for SRAM, flash and cycles against each Vela mode, and SRAM against TFLite Micro."""
        result = {}
        for prefix, vela in self.vela.items():
            for name, (ours_field, vela_fields) in COMPARED.items():
                result[f"{name}_vs_{prefix}"] = ratio(getattr(self.ours, ours_field),
                                                      sum(getattr(vela, f) for f in vela_fields))
        result["sram_vs_tflm"] = ratio(self.ours.sram, self.tflm_arena)
        return result

    def record(self) -> dict[str, object]:
        """The flat CSV record: numbers, yes/no flags, empty for not measured."""
        record: dict[str, object] = {"model": self.model, "accelerator": self.accelerator}
        record.update({f"ours_{k}": v for k, v in asdict(self.ours).items()})
        for prefix, vela in self.vela.items():
            record.update({f"{prefix}_{k}": v for k, v in asdict(vela).items()})
        record["tflm_arena"] = self.tflm_arena
        record.update(self.ratios())
        for p in self.planners:
            record.update({f"planner_{p.algorithm}": p.size, f"planner_{p.algorithm}_proven_optimal": p.proven_optimal,
                           f"planner_{p.algorithm}_s": p.seconds})
        record["planner_lower_bound"] = self.planners[0].lower_bound
        record["planner_target_met"] = self.planner_target_met
        return {key: csv_value(value) for key, value in record.items()}


def ratio(ours: int | None, baseline: int | None) -> float | None:
    """ours / baseline, rounded to 4 decimals (None when either is missing or the baseline is 0)."""
    if ours is None or not baseline:
        return None
    return round(ours / baseline, 4)


def csv_value(value) -> object:
    if value is None:
        return ""
    if isinstance(value, bool):
        return yes_no(value)
    if isinstance(value, float):
        return round(value, 4)
    return value


# --- measurements -------------------------------------------------------------------------------------------------

def warm_up() -> None:
    """Import TVM, the frontend and Vela once so that no compile time below includes one-off imports."""
    import ethosu_tvm
    from ethosu.vela import vela  # noqa: F401

    for name in ("build", "from_tflite"):  # lazy attributes: reading one imports its module
        getattr(ethosu_tvm, name)


def target(accelerator: str) -> str:
    return f"ethos-u -accelerator-config={accelerator},c"


def measure_ours(model: bytes, accelerator: str, inputs: list[np.ndarray], expected: list[np.ndarray]):
    """Build with ethosu_tvm (default planner), run once in the simulator; returns (OursResult, module)."""
    import ethosu_tvm

    start = time.perf_counter()
    module = ethosu_tvm.build(ethosu_tvm.from_tflite(model), target=target(accelerator))
    compile_s = time.perf_counter() - start
    outputs = module.run(inputs)
    plan = module.workspace.plan
    result = OursResult(compile_s, plan.total_size + module.io_size_bytes, plan.total_size, module.io_size_bytes,
                        sram_with_io_in_workspace(model, accelerator), module.constants_size_bytes,
                        command_stream_bytes(module), module.npu_cycles, outputs_equal(outputs.values(), expected),
                        module.offload.counts().get("host", 0), plan.algorithm)
    return result, module


def command_stream_bytes(module) -> int:
    """Flash taken by the NPU driver payloads, padded to 16 bytes as constants_size_bytes counts them."""
    return sum(-(-len(step.artifact.driver_payload) // 16) * 16 for step in module.program.steps
               if hasattr(step, "artifact"))


def measure_planners(module) -> tuple[PlannerResult, ...]:
    """Re-plan the built model's workspace buffers (model I/O excluded, as built) with every algorithm."""
    from ethosu_tvm.memory import plan_memory

    buffers, pools = list(module.workspace.buffers), list(module.workspace.pools)
    results = []
    for algorithm in PLANNERS:
        start = time.perf_counter()
        plan = plan_memory(buffers, pools, algorithm)
        results.append(PlannerResult(algorithm, plan.total_size, plan.proven_optimal, plan.lower_bound,
                                     time.perf_counter() - start))
    return tuple(results)


def sram_with_io_in_workspace(model: bytes, accelerator: str) -> int:
    """Peak SRAM of a second build with use_workspace_io=True: model I/O planned in with the other buffers, as Vela
    places I/O in its arena."""
    import ethosu_tvm

    module = ethosu_tvm.build(ethosu_tvm.from_tflite(model), target=target(accelerator), use_workspace_io=True)
    return module.workspace.plan.total_size + module.io_size_bytes


def read_vela_summary(output_dir: Path) -> dict[str, str]:
    """The one row of the `<network>_summary_<system config>.csv` Vela wrote into output_dir."""
    found = sorted(output_dir.glob("*_summary_*.csv"))
    if len(found) != 1:
        raise RuntimeError(f"expected one Vela summary CSV in {output_dir}, found {len(found)}")
    with found[0].open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    if len(rows) != 1:
        raise RuntimeError(f"{found[0].name}: expected one row, found {len(rows)}")
    return rows[0]


def summary_int(summary: dict[str, str], column: str, scale: float = 1) -> int | None:
    """A summary column as an integer (KiB columns scaled to bytes); None when the column is absent."""
    value = summary.get(column)
    return None if value in (None, "") else round(float(value) * scale)


def check_vela_inputs(parsed, inputs: list[np.ndarray]) -> None:
    """Raise unless the parsed Vela model takes inputs of the original model's shapes and types."""
    wanted = [(i.shape, i.dtype) for i in parsed.inputs]
    got = [(x.shape, x.dtype) for x in inputs]
    if wanted != got:
        raise RuntimeError(f"Vela model inputs {wanted} differ from the original model's {got}")


def measure_vela(path: Path, accelerator: str, optimise: str, output_dir: Path, inputs: list[np.ndarray],
                 expected: list[np.ndarray]) -> VelaResult:
    """Compile with Vela in-process, read its summary CSV and run its command stream in our simulator."""
    from ethosu_tvm.sim import vela_compile, vela_tflite

    start = time.perf_counter()
    vela_model = vela_compile.compile_model(path, accelerator, optimise, output_dir)
    compile_s = time.perf_counter() - start
    summary = read_vela_summary(output_dir)
    parsed = vela_tflite.parse(vela_model)
    check_vela_inputs(parsed, inputs)
    outputs, stats = vela_tflite.execute(parsed, inputs, accelerator)
    stream = parsed.command_stream
    return VelaResult(compile_s, summary_int(summary, "sram_memory_used", KIB),
                      summary_int(summary, "off_chip_flash_memory_used", KIB),
                      len(stream) if isinstance(stream, bytes) else 4 * len(stream), stats.elapsed_cycles,
                      summary_int(summary, "cycles_npu"), summary_int(summary, "cycles_total"),
                      outputs_equal(outputs, expected))


def measure_tflm(model: bytes) -> int:
    """The smallest TFLite Micro arena that runs the whole model on the CPU."""
    from ethosu_tvm.testing.reference import tflm_arena_size

    return tflm_arena_size(model)


def measure(path: Path, accelerators: list[str], work_dir: Path, skip_tflm: bool) -> list[Row]:
    """All rows of one model."""
    from ethosu_tvm.testing.reference import random_inputs, run_litert

    model = path.read_bytes()
    inputs = random_inputs(model, 0)
    expected = run_litert(model, inputs)
    tflm_arena = None
    if not skip_tflm:
        progress(f"{path.name}: TFLite Micro arena")
        tflm_arena = measure_tflm(model)
    rows = []
    for accelerator in accelerators:
        progress(f"{path.name} on {accelerator}: ethosu_tvm build and run")
        ours, module = measure_ours(model, accelerator, inputs, expected)
        progress(f"{path.name} on {accelerator}: memory planners")
        planners = measure_planners(module)
        vela = {}
        for prefix, optimise in VELA_MODES.items():
            progress(f"{path.name} on {accelerator}: Vela --optimise {optimise}")
            vela[prefix] = measure_vela(path, accelerator, optimise, work_dir / path.stem / accelerator / optimise,
                                        inputs, expected)
        rows.append(Row(path.stem, accelerator, ours, vela, tflm_arena, planners))
    return rows


# --- report -------------------------------------------------------------------------------------------------------

def fmt(value) -> str:
    """Markdown cell: thousands separators for integers, 2 decimals for ratios and seconds (2 significant digits
    below 0.1), "-" for none."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return yes_no(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:.2f}" if abs(value) >= 0.1 else f"{value:.2g}"
    return str(value)


def markdown_table(header: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(fmt(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def sram_table(rows: list[Row]) -> str:
    header = ["model", "accelerator", "ours SRAM (workspace + I/O)", "Vela Perf SRAM", "Vela Size SRAM",
              "TFLM arena", "ours/Vela Perf", "ours/Vela Size", "ours/TFLM", "< TFLM", "≤ Vela Perf",
              "ours, I/O in workspace", "its ratio to Vela Perf"]
    body = []
    for r in rows:
        ratios, perf = r.ratios(), r.vela["vela_perf"]
        below_tflm = None if r.tflm_arena is None else r.ours.sram < r.tflm_arena
        body.append([r.model, r.accelerator, f"{r.ours.sram:,} ({r.ours.workspace:,} + {r.ours.io:,})", perf.sram,
                     r.vela["vela_size"].sram, r.tflm_arena, ratios["sram_vs_vela_perf"],
                     ratios["sram_vs_vela_size"], ratios["sram_vs_tflm"], below_tflm, r.ours.sram <= perf.sram,
                     r.ours.sram_io_in_workspace, ratios["sram_io_in_workspace_vs_vela_perf"]])
    return markdown_table(header, body)


def flash_cycles_table(rows: list[Row]) -> str:
    header = ["model", "accelerator", "ours flash (of it, command stream)", "Vela Perf flash (+ command stream)",
              "Vela Size flash (+ command stream)", "flash ours/Perf", "incl. command streams",
              "flash ours/Size", "ours cycles", "Vela Perf cycles", "Vela Size cycles", "cycles ours/Perf",
              "cycles ours/Size", "Vela's own Perf / Size total cycles"]
    body = []
    for r in rows:
        ratios, perf, size = r.ratios(), r.vela["vela_perf"], r.vela["vela_size"]
        body.append([r.model, r.accelerator, f"{r.ours.flash:,} ({r.ours.command_stream:,})",
                     f"{perf.flash:,} (+ {perf.command_stream:,})", f"{size.flash:,} (+ {size.command_stream:,})",
                     ratios["flash_vs_vela_perf"], ratios["flash_incl_command_stream_vs_vela_perf"],
                     ratios["flash_vs_vela_size"], r.ours.cycles, perf.cycles, size.cycles,
                     ratios["cycles_vs_vela_perf"], ratios["cycles_vs_vela_size"],
                     f"{fmt(perf.own_total_cycles)} / {fmt(size.own_total_cycles)}"])
    return markdown_table(header, body)


def compile_table(rows: list[Row]) -> str:
    header = ["model", "accelerator", "ours compile s", "Vela Perf s", "Vela Size s", "ours bit-exact",
              "Vela Perf bit-exact", "Vela Size bit-exact", "ours host ops"]
    body = [[r.model, r.accelerator, r.ours.compile_s, r.vela["vela_perf"].compile_s, r.vela["vela_size"].compile_s,
             r.ours.bit_exact, r.vela["vela_perf"].bit_exact, r.vela["vela_size"].bit_exact, r.ours.host_ops]
            for r in rows]
    return markdown_table(header, body)


def planner_table(rows: list[Row]) -> str:
    header = ["model", "accelerator", *PLANNERS, "lower bound", "exact proven optimal", "default pick",
              "hill_climb/exact ≤ greedy_by_size"]
    body = [[r.model, r.accelerator, *[r.planner(a).size for a in PLANNERS], r.planners[0].lower_bound,
             r.planner("exact").proven_optimal, r.ours.planner, r.planner_target_met] for r in rows]
    return markdown_table(header, body)


def markdown_report(rows: list[Row]) -> str:
    """The four tables (sizes in bytes, cycles at the NPU clock)."""
    sections = [("Peak SRAM (bytes)", sram_table), ("Flash (bytes) and estimated cycles", flash_cycles_table),
                ("Compile wall time and correctness", compile_table), ("Workspace per planner (bytes)", planner_table)]
    return "\n\n".join(f"### {title}\n\n{table(rows)}" for title, table in sections) + "\n"


def csv_text(rows: list[Row]) -> str:
    records = [row.record() for row in rows]
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(records[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(records)
    return buffer.getvalue()


# --- command line -------------------------------------------------------------------------------------------------

def parse_args(argv: list[str] | None) -> argparse.Namespace:
    from ethosu_tvm.testing import shared_models_dir

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=list(DEFAULT_MODELS), metavar="FILE",
                        help="model file names in --models-dir (default: the four MLPerf Tiny models)")
    parser.add_argument("--models-dir", type=Path, default=None,
                        help="folder of the models (default: $ETHOSU_TVM_MODELS, else ../shared/models)")
    parser.add_argument("--accelerators", nargs="+", default=list(DEFAULT_ACCELERATORS), metavar="CONFIG",
                        help="Ethos-U55 configurations (default: %(default)s)")
    parser.add_argument("--out-dir", type=Path, default=DEFAULT_OUT_DIR,
                        help="where compare.md and compare.csv go (default: benchmarks/results)")
    parser.add_argument("--skip-tflm", action="store_true", help="do not measure TFLite Micro's arena")
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
    from ethosu_tvm.target import ACCELERATOR_MACS

    unknown = [a for a in accelerators if a not in ACCELERATOR_MACS]
    if unknown:
        raise BenchmarkError(f"unknown accelerator {unknown[0]!r}; valid: {', '.join(ACCELERATOR_MACS)}")


def main(argv: list[str] | None = None) -> int:
    """Run the comparison; 0 on success, 2 (with a one-line message on stderr) for bad inputs."""
    args = parse_args(argv)
    try:
        paths = model_paths(args.models_dir, args.models)
        check_accelerators(args.accelerators)
    except BenchmarkError as err:
        print(f"compare.py: error: {err}", file=sys.stderr)
        return 2
    warm_up()
    rows = []
    with tempfile.TemporaryDirectory(prefix="ethosu_tvm_compare_") as work_dir:
        for path in paths:
            rows += measure(path, args.accelerators, Path(work_dir), args.skip_tflm)
    report = markdown_report(rows)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    (args.out_dir / "compare.md").write_text(report)
    (args.out_dir / "compare.csv").write_text(csv_text(rows))
    print(report, end="")
    progress(f"wrote {args.out_dir / 'compare.md'} and {args.out_dir / 'compare.csv'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
