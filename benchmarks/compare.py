#!/usr/bin/env python3
"""Benchmark: ethosu_tvm side by side with Vela (--optimise Performance and Size) and TensorFlow Lite Micro.

For each model × accelerator it measures compile wall time, peak SRAM, flash and estimated NPU cycles of our build
and of both Vela builds (cycles from our simulator's cost model on each command stream, plus Vela's own estimate),
TFLite Micro's CPU-only arena, and the workspace each memory-planning algorithm gets for our build's buffers.
It prints a Markdown report and writes `compare.md` and `compare.csv` to --out-dir.

With the cascader (unless --skip-cascader), each model × accelerator also gets an SRAM-vs-cycles curve: builds with
the model's I/O in the workspace, each cascaded for one NPU scratch limit taken from the cascader's frontier of
proposals, plus the default uncascaded build, shown beside Vela's two points and checked against two targets
(T1: at most 0.9 × Vela Size's SRAM at no more than its cycles; T2: no more cycles than Vela Performance within
its SRAM). These go to stdout and to `compare_cascader.md`, `compare_cascader.csv` and
`compare_cascader_targets.csv`. See docs/benchmarks.md.

    .venv/bin/python benchmarks/compare.py [--models F ...] [--accelerators A ...] [--skip-tflm]
                                           [--skip-cascader] [--cascader-points N]
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
DEFAULT_CASCADER_POINTS = 6  # cascader limits per curve, at most (the smallest and largest proposal included)
T1_SRAM_FRACTION = (9, 10)  # T1: SRAM at most 9/10 of Vela Size's, at cycles no more than Vela Size's


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
    cascader: tuple[CascaderPoint, ...] = ()  # the SRAM-vs-cycles curve; empty with --skip-cascader

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


@dataclass(frozen=True)
class CascaderPoint:
    """One point of the SRAM-vs-cycles curve: a build with use_workspace_io=True, cascaded for `limit` bytes of NPU
    scratch, or the default uncascaded build (`limit` None). `sram` = workspace (I/O included); `npu_scratch` = the
    largest NPU launch's scratch, which is what the limit bounds; `estimated_*` = the cascader's own figures for the
    proposals it chose (summed cycles, largest memory over the NPU launches); `proposal` = "index of count" in each
    launch's frontier. When the build fails, only `limit`, `compile_s` and `error` (one line) are set."""

    point: str  # "cascader" or "default"
    limit: int | None
    proposal: str | None
    sram: int | None
    npu_scratch: int | None
    cycles: int | None
    estimated_cycles: int | None
    estimated_memory: int | None
    bit_exact: bool | None
    compile_s: float
    cascades: str | None
    error: str | None = None

    @property
    def valid(self) -> bool:
        """Built, and bit-exact: the points the targets may use."""
        return self.error is None and bool(self.bit_exact)

    @property
    def label(self) -> str:
        if self.point == "default":
            return "default build (no cascader)"
        return f"cascader, proposal {self.proposal}" if self.proposal else "cascader"

    def record(self, model: str, accelerator: str) -> dict[str, object]:
        record: dict[str, object] = {"model": model, "accelerator": accelerator, **asdict(self)}
        record["estimated_vs_measured_cycles"] = ratio(self.estimated_cycles, self.cycles)
        return {key: csv_value(value) for key, value in record.items()}


@dataclass(frozen=True)
class CascaderTargets:
    """T1 and T2 for one model × accelerator: the qualifying curve point of each (None when no valid point
    qualifies) and the Vela builds they are held against."""

    vela_perf: VelaResult
    vela_size: VelaResult
    t1_point: CascaderPoint | None  # smallest SRAM among the valid points with cycles <= Vela Size's
    t2_point: CascaderPoint | None  # fewest cycles among the valid points with SRAM <= Vela Performance's

    @property
    def t1_goal(self) -> int:
        """The largest SRAM meeting T1: floor(0.9 × Vela Size SRAM)."""
        numerator, denominator = T1_SRAM_FRACTION
        return self.vela_size.sram * numerator // denominator

    @property
    def t1_met(self) -> bool:
        return self.t1_point is not None and self.t1_point.sram <= self.t1_goal

    @property
    def t2_met(self) -> bool:
        return self.t2_point is not None and self.t2_point.cycles <= self.vela_perf.cycles

    def record(self, model: str, accelerator: str) -> dict[str, object]:
        t1, t2 = self.t1_point, self.t2_point
        record = {
            "model": model, "accelerator": accelerator,
            "t1_vela_size_sram": self.vela_size.sram, "t1_vela_size_cycles": self.vela_size.cycles,
            "t1_goal_sram": self.t1_goal, "t1_point": t1 and t1.label, "t1_sram": t1 and t1.sram,
            "t1_cycles": t1 and t1.cycles, "t1_sram_vs_vela_size": ratio(t1 and t1.sram, self.vela_size.sram),
            "t1_met": self.t1_met,
            "t2_vela_perf_sram": self.vela_perf.sram, "t2_vela_perf_cycles": self.vela_perf.cycles,
            "t2_point": t2 and t2.label, "t2_sram": t2 and t2.sram, "t2_cycles": t2 and t2.cycles,
            "t2_cycles_vs_vela_perf": ratio(t2 and t2.cycles, self.vela_perf.cycles), "t2_met": self.t2_met,
        }
        return {key: csv_value(value) for key, value in record.items()}


def cascader_targets(row: Row) -> CascaderTargets:
    """T1 and T2 of one row, from its valid curve points (failed or not bit-exact builds do not count)."""
    perf, size = row.vela["vela_perf"], row.vela["vela_size"]
    valid = [p for p in row.cascader if p.valid]
    t1 = min((p for p in valid if p.cycles <= size.cycles), key=lambda p: (p.sram, p.cycles), default=None)
    t2 = min((p for p in valid if p.sram <= perf.sram), key=lambda p: (p.cycles, p.sram), default=None)
    return CascaderTargets(perf, size, t1, t2)


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


def cascader_target(accelerator: str) -> str:
    return f"ethos-u -accelerator-config={accelerator} -enable-cascader=1,c"


def spread(values: list[int], count: int) -> list[int]:
    """At most `count` of the sorted `values`, evenly spaced by position; the first and the last always in."""
    if len(values) <= count:
        return list(values)
    return sorted({values[round(i * (len(values) - 1) / (count - 1))] for i in range(count)})


def cascader_limits(model: bytes, accelerator: str, count: int) -> list[int]:
    """The NPU scratch limits to build for: the estimated memories of at most `count` proposals spread along the
    cascader's frontier, computed as the build computes it with use_workspace_io (each NPU graph with the model
    inputs that only it reads and the model outputs that only it writes in its scratch). With several NPU graphs
    the frontiers' memories are pooled, leaving out those below the largest of the graphs' smallest ones (no
    schedule of that graph would fit)."""
    import ethosu_tvm
    from ethosu_tvm.build_module import io_in_scratch
    from ethosu_tvm.codegen import ScratchIo
    from ethosu_tvm.codegen.cascade import cascade_proposals
    from ethosu_tvm.host.legalize import fuse_host_ops
    from ethosu_tvm.legalize import legalize
    from ethosu_tvm.partition import partition_for_ethosu
    from ethosu_tvm.target import EthosuTarget

    npu = EthosuTarget(accelerator)
    fused = fuse_host_ops(partition_for_ethosu(ethosu_tvm.from_tflite(model), npu)[0])
    in_scratch = io_in_scratch(fused)
    frontiers = []
    for graph in legalize(fused):
        names = in_scratch.get(graph.function, ScratchIo()).names(graph)
        frontiers.append([proposal.memory for proposal in cascade_proposals(graph, npu, io_in_scratch=names)])
    frontiers = [memories for memories in frontiers if memories]
    if not frontiers:
        return []
    floor = max(min(memories) for memories in frontiers)
    return spread(sorted({m for memories in frontiers for m in memories if m >= floor}), count)


def describe_cascades(proposal) -> str:
    """Short: each cascade's operators (indices of the NPU graph's parts), stripes × rows and buffer mode."""
    cascades = []
    for plan in proposal.cascades:
        ops = f"ops {plan.parts[0]}-{plan.parts[-1]}" if len(plan.parts) > 1 else f"op {plan.parts[0]}"
        mode = f" {plan.buffer_mode.value}" if plan.interior else ""
        cascades.append(f"{ops}: {plan.stripes}×{plan.rows} rows{mode}")
    return "; ".join(cascades) or "none"


def measure_cascader_point(model: bytes, accelerator: str, limit: int | None, inputs: list[np.ndarray],
                           expected: list[np.ndarray]) -> CascaderPoint:
    """Build with use_workspace_io=True, cascaded for `limit` bytes of NPU scratch (None: the default build, no
    cascader), and run once in the simulator. A CascaderError becomes a point with only its message."""
    import ethosu_tvm
    from ethosu_tvm.aot.program import NpuStep
    from ethosu_tvm.codegen import CascaderError

    options = {} if limit is None else {"cascader_sram_limit": limit}
    start = time.perf_counter()
    try:
        module = ethosu_tvm.build(ethosu_tvm.from_tflite(model),
                                  target=target(accelerator) if limit is None else cascader_target(accelerator),
                                  use_workspace_io=True, **options)
    except CascaderError as err:
        return CascaderPoint("cascader", limit, None, None, None, None, None, None, None,
                             time.perf_counter() - start, None, str(err).splitlines()[0])
    compile_s = time.perf_counter() - start
    outputs = module.run(inputs)
    artifacts = [step.artifact for step in module.program.steps if isinstance(step, NpuStep)]
    reports = [a.cascade for a in artifacts if a.cascade is not None]
    scratch = max((a.scratch_size for a in artifacts), default=0)
    sram = module.workspace.plan.total_size + module.io_size_bytes
    exact = outputs_equal(outputs.values(), expected)
    if limit is None:
        return CascaderPoint("default", None, None, sram, scratch, module.npu_cycles, None, None, exact, compile_s,
                             None)
    return CascaderPoint("cascader", limit, ", ".join(f"{r.index} of {r.proposals}" for r in reports), sram,
                         scratch, module.npu_cycles, sum(r.proposal.cycles for r in reports),
                         max((r.proposal.memory for r in reports), default=0), exact, compile_s,
                         " / ".join(describe_cascades(r.proposal) for r in reports) or "none")


def measure_cascader(model: bytes, accelerator: str, count: int, inputs: list[np.ndarray],
                     expected: list[np.ndarray], name: str = "model") -> tuple[CascaderPoint, ...]:
    """The curve: one cascaded build per limit of `cascader_limits` (by increasing limit), then the default
    build with I/O in the workspace."""
    progress(f"{name} on {accelerator}: cascader frontier")
    limits = cascader_limits(model, accelerator, count)
    points = []
    for limit in [*limits, None]:
        what = "default build, I/O in workspace" if limit is None else f"cascader, limit {limit:,}"
        progress(f"{name} on {accelerator}: {what}")
        points.append(measure_cascader_point(model, accelerator, limit, inputs, expected))
    return tuple(points)


def measure(path: Path, accelerators: list[str], work_dir: Path, skip_tflm: bool,
            cascader_points: int | None = None) -> list[Row]:
    """All rows of one model; with `cascader_points`, each with its cascader curve."""
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
        curve = () if cascader_points is None else measure_cascader(model, accelerator, cascader_points, inputs,
                                                                    expected, path.name)
        rows.append(Row(path.stem, accelerator, ours, vela, tflm_arena, planners, curve))
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


def curve_table(row: Row) -> str:
    """One model × accelerator: our curve points, then Vela's two builds (SRAM, cycles, bit-exact, compile s)."""
    header = ["point", "limit (NPU scratch)", "SRAM (I/O in workspace)", "NPU scratch", "cycles",
              "cascader's estimate", "estimate/measured", "bit-exact", "compile s", "cascades"]
    body = []
    for p in row.cascader:
        if p.error is not None:
            body.append([p.label, p.limit, "failed", None, None, None, None, None, p.compile_s, p.error])
            continue
        body.append([p.label, p.limit, p.sram, p.npu_scratch, p.cycles, p.estimated_cycles,
                     ratio(p.estimated_cycles, p.cycles), p.bit_exact, p.compile_s, p.cascades])
    for prefix, optimise in VELA_MODES.items():
        vela = row.vela[prefix]
        body.append([f"Vela {optimise}", None, vela.sram, None, vela.cycles, None, None, vela.bit_exact,
                     vela.compile_s, None])
    return markdown_table(header, body)


def point_cell(point: CascaderPoint | None) -> str:
    return "none qualifies" if point is None else point.label


def t1_table(rows: list[Row]) -> str:
    header = ["model", "accelerator", "Vela Size SRAM", "Vela Size cycles", "goal: SRAM ≤ 0.9 × Vela Size",
              "ours: smallest SRAM at ≤ Vela Size cycles", "its cycles", "its point", "SRAM ours/Vela Size", "T1"]
    body = []
    for r in rows:
        t = cascader_targets(r)
        p = t.t1_point
        body.append([r.model, r.accelerator, t.vela_size.sram, t.vela_size.cycles, t.t1_goal, p and p.sram,
                     p and p.cycles, point_cell(p), ratio(p and p.sram, t.vela_size.sram),
                     "met" if t.t1_met else "missed"])
    return markdown_table(header, body)


def t2_table(rows: list[Row]) -> str:
    header = ["model", "accelerator", "Vela Perf SRAM", "Vela Perf cycles",
              "ours: fewest cycles at SRAM ≤ Vela Perf", "its SRAM", "its point", "cycles ours/Vela Perf", "T2"]
    body = []
    for r in rows:
        t = cascader_targets(r)
        p = t.t2_point
        body.append([r.model, r.accelerator, t.vela_perf.sram, t.vela_perf.cycles, p and p.cycles, p and p.sram,
                     point_cell(p), ratio(p and p.cycles, t.vela_perf.cycles), "met" if t.t2_met else "missed"])
    return markdown_table(header, body)


def cascader_report(rows: list[Row]) -> str:
    """A curve table per model × accelerator, then the T1 and T2 tables (sizes in bytes, cycles at the NPU
    clock)."""
    sections = [(f"Cascader: SRAM vs cycles, {r.model} on {r.accelerator}", curve_table(r)) for r in rows]
    sections += [("Cascader target T1: SRAM ≤ 0.9 × Vela Size at cycles ≤ Vela Size", t1_table(rows)),
                 ("Cascader target T2: cycles ≤ Vela Performance at SRAM ≤ Vela Performance", t2_table(rows))]
    return "\n\n".join(f"### {title}\n\n{table}" for title, table in sections) + "\n"


def records_csv(records: list[dict[str, object]]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(records[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(records)
    return buffer.getvalue()


def cascader_csv_text(rows: list[Row]) -> str:
    """One record per curve point."""
    return records_csv([p.record(r.model, r.accelerator) for r in rows for p in r.cascader])


def cascader_targets_csv_text(rows: list[Row]) -> str:
    """One record per model × accelerator."""
    return records_csv([cascader_targets(r).record(r.model, r.accelerator) for r in rows])


def csv_text(rows: list[Row]) -> str:
    return records_csv([row.record() for row in rows])


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
    from ethosu_tvm.arch import ACCELERATORS as ACCELERATOR_MACS

    unknown = [a for a in accelerators if a not in ACCELERATOR_MACS]
    if unknown:
        raise BenchmarkError(f"unknown accelerator {unknown[0]!r}; valid: {', '.join(ACCELERATOR_MACS)}")


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
            rows += measure(path, args.accelerators, Path(work_dir), args.skip_tflm,
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
