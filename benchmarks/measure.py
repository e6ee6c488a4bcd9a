"""The measurements behind each benchmark row: our build, Vela's two builds, TFLite Micro's arena, the memory
planners and the cascader's SRAM-vs-cycles curve, all in the accelerator's own default system (`system`).
Progress lines go to stderr."""
from __future__ import annotations

import csv
import sys
import time
from pathlib import Path

import numpy as np
from ethosu_tvm.arch.system import DEFAULT_MEMORY_MODE, default_system_config, find_system

from rows import PLANNERS, T1_SRAM_FRACTION, VELA_MODES, CascaderPoint, OursResult, PlannerResult, Row, VelaResult

KIB = 1024
# The summary column of the memory on AXI1 (`arch.system`), which holds the constants in Shared_Sram.
VELA_CONSTANTS_COLUMNS = {"OffChipFlash": "off_chip_flash_memory_used", "Dram": "dram_memory_used"}


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def outputs_equal(outputs, expected) -> bool:
    """Whether two output lists hold the same values (shapes compared after flattening)."""
    outputs, expected = list(outputs), list(expected)
    return len(outputs) == len(expected) and all(
        np.array_equal(np.asarray(a).reshape(-1), np.asarray(b).reshape(-1)) for a, b in zip(outputs, expected))


def warm_up() -> None:
    """Import TVM, the frontend and Vela once so that no compile time below includes one-off imports."""
    import ethosu_tvm
    from ethosu.vela import vela  # noqa: F401

    for name in ("build", "from_tflite"):  # lazy attributes: reading one imports its module
        getattr(ethosu_tvm, name)


def system(accelerator: str) -> tuple[str, str]:
    """(system config, memory mode) of every build and estimate for `accelerator`: the compiler's default for its
    product, which Vela is told too and our simulator costs Vela's streams in, so the three agree."""
    return default_system_config(accelerator), DEFAULT_MEMORY_MODE


def target(accelerator: str, options: str = "") -> str:
    config, memory_mode = system(accelerator)
    return f"ethos-u -accelerator-config={accelerator} -system-config={config} -memory-mode={memory_mode}{options},c"


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
    """Compile with Vela in-process, read its summary CSV and run its command stream in our simulator. Its flash
    is the constants' memory: the off-chip flash or, on a U65 board with DRAM, the DRAM."""
    from ethosu_tvm.sim import vela_compile, vela_tflite

    config, memory_mode = system(accelerator)
    board = find_system(config, memory_mode)
    start = time.perf_counter()
    vela_model = vela_compile.compile_model(path, accelerator, optimise, output_dir,
                                            ("--system-config", config, "--memory-mode", memory_mode))
    compile_s = time.perf_counter() - start
    summary = read_vela_summary(output_dir)
    parsed = vela_tflite.parse(vela_model)
    check_vela_inputs(parsed, inputs)
    outputs, stats = vela_tflite.execute(parsed, inputs, accelerator, board)
    stream = parsed.command_stream
    return VelaResult(compile_s, summary_int(summary, "sram_memory_used", KIB),
                      summary_int(summary, VELA_CONSTANTS_COLUMNS[board.config.axi1.name], KIB),
                      len(stream) if isinstance(stream, bytes) else 4 * len(stream), stats.elapsed_cycles,
                      summary_int(summary, "cycles_npu"), summary_int(summary, "cycles_total"),
                      outputs_equal(outputs, expected))


def measure_tflm(model: bytes) -> int:
    """The smallest TFLite Micro arena that runs the whole model on the CPU."""
    from ethosu_tvm.testing.reference import tflm_arena_size

    return tflm_arena_size(model)


def cascader_target(accelerator: str) -> str:
    return target(accelerator, " -enable-cascader=1")


def spread(values: list[int], count: int) -> list[int]:
    """At most `count` of the sorted `values`, evenly spaced by position; the first and the last always in."""
    if len(values) <= count:
        return list(values)
    return sorted({values[round(i * (len(values) - 1) / (count - 1))] for i in range(count)})


def cascader_frontiers(model: bytes, accelerator: str) -> list[list[int]]:
    """The estimated memory of every proposal on each NPU graph's cascader frontier, as the cascaded build with
    use_workspace_io chooses from (`ethosu_tvm.cascader_frontiers`)."""
    import ethosu_tvm

    frontiers = ethosu_tvm.cascader_frontiers(ethosu_tvm.from_tflite(model), cascader_target(accelerator),
                                              use_workspace_io=True)
    return [[proposal.memory for proposal in proposals] for proposals in frontiers.values()]


def cascader_limits(model: bytes, accelerator: str, count: int) -> list[int]:
    """The NPU scratch limits to build for: the estimated memories of at most `count` proposals spread along the
    cascader's frontier (`cascader_frontiers`). With several NPU graphs the frontiers' memories are pooled, leaving
    out those below the largest of the graphs' smallest ones (no schedule of that graph would fit)."""
    frontiers = [memories for memories in cascader_frontiers(model, accelerator) if memories]
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
                     expected: list[np.ndarray], name: str = "model",
                     targets: tuple[int, ...] = ()) -> tuple[CascaderPoint, ...]:
    """The curve: one cascaded build per limit of `cascader_limits` and per limit in `targets` (the SRAM the
    T1 and T2 targets allow, so that each is judged on the cascader's best build within it), by increasing
    limit, then the default build with I/O in the workspace."""
    progress(f"{name} on {accelerator}: cascader frontier")
    limits = sorted({*cascader_limits(model, accelerator, count), *targets})
    points = []
    for limit in [*limits, None]:
        what = "default build, I/O in workspace" if limit is None else f"cascader, limit {limit:,}"
        progress(f"{name} on {accelerator}: {what}")
        points.append(measure_cascader_point(model, accelerator, limit, inputs, expected))
    return tuple(points)


def measure_model(path: Path, accelerators: list[str], work_dir: Path, skip_tflm: bool,
                  cascader_points: int | None = None) -> list[Row]:
    """All rows of one model; with `cascader_points`, each with its cascader curve."""
    from ethosu_tvm.testing.reference import random_inputs, run_model_reference

    model = path.read_bytes()
    inputs = random_inputs(model, 0)
    expected = run_model_reference(model, inputs)
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
        numerator, denominator = T1_SRAM_FRACTION
        targets = (vela["vela_perf"].sram, vela["vela_size"].sram * numerator // denominator)
        curve = () if cascader_points is None else measure_cascader(model, accelerator, cascader_points, inputs,
                                                                    expected, path.name, targets)
        rows.append(Row(path.stem, accelerator, " ".join(system(accelerator)), ours, vela, tflm_arena, planners, curve))
    return rows
