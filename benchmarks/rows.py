"""What one benchmark row holds: the results of each build measured for a model on an accelerator, and the values
derived from them (ratios, targets, CSV records). Plain data, so the report can be written without measuring."""
from __future__ import annotations

from dataclasses import asdict, dataclass

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
T1_SRAM_FRACTION = (9, 10)  # T1: SRAM at most 9/10 of Vela Size's, at cycles no more than Vela Size's


def yes_no(flag: bool) -> str:
    return "yes" if flag else "no"


@dataclass(frozen=True)
class OursResult:
    """Our build: `sram` = planned workspace + model I/O; `flash` = command streams, weights and host tables;
    `sram_io_in_workspace` = the same with the build's use_workspace_io option
    (see measure.sram_with_io_in_workspace)."""

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
    system: str  # "<system config> <memory mode>" of our build, Vela's and the simulator's estimates
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
        record: dict[str, object] = {"model": self.model, "accelerator": self.accelerator, "system": self.system}
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

