"""`ethosu_tvm.build`: a QDQ Relax module → the whole compiled model (NPU command streams, host kernels, AOT
runner, memory plan), exportable as a Model Library Format tarball and runnable on this PC.

    mod = ethosu_tvm.from_tflite("kws.tflite")
    module = ethosu_tvm.build(mod, target="ethos-u -accelerator-config=ethos-u55-128,c")
    module.export_model_library_format("module.tar")
    outputs = module.run({"input_1": x})      # the MLF's C on this PC, NPU work in the simulator
"""
from __future__ import annotations

import json
import re
import sys
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

import tvm

from .aot.c_source import CSources, generate
from .aot.interface import INTERFACE_PATH, ModelInterface, interface_of
from .aot.program import MODULE, NpuStep, Program, build_program
from .aot.workspace import Workspace, plan_workspace
from .arch import round_up
from .cascader import CascaderOptions
from .codegen import CascaderSettings, ScratchIo, compile_partitioned
from .codegen.cascade import describe_proposal
from .frontend.importer import model_io_names
from .host import host_target
from .host.legalize import fuse_host_ops
from .memory import PoolInfo, plan_to_json
from .mlf import IOTensor, MlfModule, export_model_library_format
from .partition import OffloadReport, host_only_report, partition_for_ethosu
from .partition.patterns import CODEGEN
from .target import EthosuTarget, TargetError, ethosu_target_from_options, format_target, parse_target_list

# The runtime glue: src/ of a source checkout, or where setup.py installs it.
_CHECKOUT_GLUE = Path(__file__).resolve().parents[2] / "src"
RUNTIME_DIR = _CHECKOUT_GLUE if (_CHECKOUT_GLUE / "ethosu_tvm_npu.c").is_file() else Path(__file__).parent / "_glue"
RUNTIME_FILES = {"runtime/include/ethosu_tvm_npu.h": "ethosu_tvm_npu.h", "runtime/src/ethosu_tvm_npu.c": "ethosu_tvm_npu.c"}

# Pass-config keys of old tvmc this flow understands, with what they control here.
PASS_CONFIG = {
    "tir.usmp.enable": "always on: every buffer is statically planned",
    "tir.usmp.algorithm": "memory planning algorithm",
    "tir.disable_vectorize": "accepted; the host kernels are never vectorized",
    "tir.disable_storage_rewrite": "accepted; no effect",
    "tir.usmp.use_workspace_io": "place the model's inputs and outputs in the workspace pools",
}


class BuildError(ValueError):
    """The build options are invalid (target, executor, pass config, pools); the message says which."""


@dataclass(frozen=True)
class BuildConfig:
    """Everything `build` was asked for, validated."""

    npu: Optional[EthosuTarget]
    host: tvm.target.Target
    targets: tuple[str, ...]
    memory_planner: str = "auto"
    pools: tuple[PoolInfo, ...] = (PoolInfo("workspace"),)
    user_pools: bool = False
    io_in_workspace: bool = False
    cascader: Optional[CascaderSettings] = None


def _flag(config: dict, key: str) -> bool:
    value = str(config.get(key, "0")).strip().lower()
    if value not in ("0", "1", "true", "false"):
        raise BuildError(f"pass config {key} takes 0/1/true/false, got {config[key]!r}")
    return value in ("1", "true")


def _cascader(npu: Optional[EthosuTarget], pools: tuple[PoolInfo, ...],
              sram_limit: Optional[int]) -> Optional[CascaderSettings]:
    """The cascader's settings, when the ethos-u target enables it. Its SRAM limit is `sram_limit`, or else the
    size hint of the first pool the NPU can use that has one (None: no limit, the smallest schedule)."""
    if sram_limit is not None and sram_limit < 0:
        raise BuildError(f"the cascader's SRAM limit must not be negative, got {sram_limit}")
    if npu is None or not (npu.enable_cascader or npu.enable_striping):
        if sram_limit is not None:
            raise BuildError("a cascader SRAM limit needs the cascader: add -enable-cascader=1 to the ethos-u target")
        return None
    if sram_limit is None:
        hints = [p.size_hint_bytes for p in pools if p.size_hint_bytes is not None and p.reachable_by({CODEGEN})]
        sram_limit = hints[0] if hints else None
    options = CascaderOptions(enable_cascading=npu.enable_cascader, enable_striping=True)
    log = (lambda line: print(f"cascader: {line}", file=sys.stderr, flush=True)) if npu.dev_log_plans else None
    return CascaderSettings(options, sram_limit, npu.dev_select_proposal, log)


def configure(target: str, executor: str = "aot", pass_config: Optional[dict] = None,
              memory_planner: Optional[str] = None, pools: Optional[list[PoolInfo]] = None,
              use_workspace_io: bool = False, cascader_sram_limit: Optional[int] = None) -> BuildConfig:
    """Validate the options of a build (raises TargetError or BuildError)."""
    targets = parse_target_list(target)
    kinds = [t["kind"] for t in targets]
    if "c" not in kinds:
        raise TargetError("the target list needs the host target 'c' (e.g. \"ethos-u -accelerator-config="
                          "ethos-u55-128\",c): operators and the runner run on the Cortex-M")
    unsupported = [k for k in kinds if k not in ("ethos-u", "c")]
    if unsupported:
        raise TargetError(f"target kind {unsupported[0]!r} is not supported by this flow; use ethos-u and c")
    if executor != "aot":
        raise BuildError(f"executor {executor!r} is not supported; only 'aot' (the C runner) is")
    config = dict(pass_config or {})
    unknown = sorted(set(config) - set(PASS_CONFIG))
    if unknown:
        raise BuildError(f"unknown pass config {unknown[0]!r}; known: {', '.join(PASS_CONFIG)}")
    planner = memory_planner or str(config.get("tir.usmp.algorithm", "auto"))
    from .memory import ALGORITHMS

    if planner != "auto" and planner not in ALGORITHMS:
        raise BuildError(f"unknown memory planner {planner!r}; choose one of auto, {', '.join(ALGORITHMS)}")
    npu = next((ethosu_target_from_options(t) for t in targets if t["kind"] == "ethos-u"), None)
    host = host_target(next(t for t in targets if t["kind"] == "c").get("mcpu"))
    io_in_workspace = use_workspace_io or _flag(config, "tir.usmp.use_workspace_io")
    names = [p.name for p in pools or []]
    if len(set(names)) != len(names) or any(not re.fullmatch(r"[A-Za-z_]\w*", n) for n in names):
        raise BuildError(f"workspace pool names must be distinct C identifiers, got {', '.join(names)}")
    planned = tuple(pools) if pools else (PoolInfo("workspace"),)
    # I/O in the workspace means the application owns the pools: it writes inputs into them.
    return BuildConfig(npu, host, tuple(format_target(t) for t in targets), planner, planned,
                       bool(pools) or io_in_workspace, io_in_workspace, _cascader(npu, planned, cascader_sram_limit))


@dataclass
class CompiledModel:
    """A built model: the AOT program, its memory plan and generated C, plus the reports the CLI prints."""

    config: BuildConfig
    partitioned: tvm.IRModule
    offload: OffloadReport
    program: Program
    workspace: Workspace
    sources: CSources
    interface: ModelInterface
    _runner: object = field(default=None, repr=False)

    @property
    def constants_size_bytes(self) -> int:
        """Flash for constants: NPU command streams and weights, host kernel tables (16-byte padded each)."""
        total = 0
        for step in self.program.steps:
            if isinstance(step, NpuStep):
                total += round_up(len(step.artifact.driver_payload)) + round_up(len(step.artifact.constants))
            else:
                total += sum(round_up(p.nbytes) for p in step.kernel.params if p.role == "constant")
        return total

    @property
    def io_size_bytes(self) -> int:
        """Bytes of model inputs and outputs the application provides outside the workspace."""
        if self.config.io_in_workspace:
            return 0
        return sum(io.tensor.nbytes for io in self.program.inputs + self.program.outputs)

    def mlf_module(self) -> MlfModule:
        files: dict[str, str | bytes] = dict(self.sources.files())
        if self.program.has_npu:
            files.update({path: (RUNTIME_DIR / name).read_text() for path, name in RUNTIME_FILES.items()})
        files["src/relax.txt"] = self.partitioned.script(show_meta=False)
        files["src/offload_report.txt"] = str(self.offload) + "\n"
        files["src/memory_plan.json"] = json.dumps(plan_to_json(self.workspace.plan), indent=2) + "\n"
        files[INTERFACE_PATH] = self.interface.to_json()

        def io(ios):
            return [IOTensor(x.name, x.tensor.dtype, x.tensor.shape) for x in ios]

        return MlfModule(MODULE, list(self.config.targets), io(self.program.inputs), io(self.program.outputs),
                         self.workspace.plan.total_size, self.constants_size_bytes, files,
                         dict(self.workspace.plan.pool_sizes), self.config.io_in_workspace)

    def export_model_library_format(self, path) -> Path:
        """Write the MLF v7 tarball (deterministic, replaced atomically)."""
        return export_model_library_format(self.mlf_module(), path)

    def run(self, inputs) -> dict:
        """Run the generated C on this PC (NPU launches in the simulator); outputs by model output name."""
        if self._runner is None:
            from .run.host_program import HostProgram

            self._tmp = tempfile.TemporaryDirectory(prefix="ethosu_tvm_run_")
            root = Path(self._tmp.name)
            self.export_model_library_format(root / "model.tar")
            with tarfile.open(root / "model.tar") as tar:
                tar.extractall(root / "mlf", filter="data")
            self._runner = HostProgram(root / "mlf", root)
        return self._runner.run(inputs)

    @property
    def npu_cycles(self) -> int:
        """Estimated NPU cycles of the last `run` (0 before any run or without NPU work)."""
        return self._runner.npu_cycles if self._runner is not None else 0

    def summary(self) -> str:
        """Offload and memory summaries, as `tvmc compile` prints them."""
        counts = self.offload.counts()
        lines = [f"Offload: {counts.get('ethos-u', 0)} operators on {self.config.npu.accelerator if self.config.npu else 'no NPU'}"
                 f", {counts.get('host', 0)} on the host"]
        for entry in self.offload.ops:
            if entry.target == "host":
                lines.append(f"  host: #{entry.index} {entry.op}: {entry.reason}")
        plan = self.workspace.plan
        pools = ", ".join(f"{name} {size} bytes" for name, size in plan.pool_sizes.items())
        lines.append(f"Memory: workspace {plan.total_size} bytes ({pools}; planner {plan.algorithm}"
                     f"{', proven optimal' if plan.proven_optimal else ''}), constants {self.constants_size_bytes}"
                     f" bytes, I/O {'in the workspace' if self.config.io_in_workspace else f'{self.io_size_bytes} bytes'}")
        npu_steps = [s for s in self.program.steps if isinstance(s, NpuStep)]
        lines.append(f"Steps: {len(npu_steps)} NPU launches, {len(self.program.steps) - len(npu_steps)} host kernels")
        for step in npu_steps:
            report = step.artifact.cascade
            if report is not None:
                limit = "no limit" if report.sram_limit is None else f"limit {report.sram_limit} bytes"
                lines.append(f"Cascader: {step.artifact.name}: proposal {report.index} of {report.proposals} "
                             f"({limit}), NPU scratch {report.scratch_size} bytes; "
                             f"{describe_proposal(report.proposal)}")
        return "\n".join(lines)


def io_in_scratch(mod: tvm.IRModule) -> dict[str, ScratchIo]:
    """For I/O in the workspace: the model inputs that one NPU call alone reads, and the model outputs that one NPU
    call produces and nothing else reads, by function. The NPU then keeps them in its scratch, where they share
    memory with its intermediates (inputs once read, outputs until they are written)."""
    main = mod["main"]
    uses: dict = {}
    calls = []
    for block in main.body.blocks:
        for binding in block.bindings:
            value = binding.value
            args = value.args if isinstance(value, tvm.relax.Call) else getattr(value, "fields", [value])
            for arg in args:
                uses[arg] = uses.get(arg, 0) + 1
            if isinstance(value, tvm.relax.Call) and isinstance(value.op, tvm.ir.GlobalVar):
                attrs = mod[value.op].attrs or {}
                if attrs.get("Codegen") == CODEGEN:
                    calls.append((binding.var, value))
    result = main.body.body
    results = set(getattr(result, "fields", [result]))
    for output in results:
        uses[output] = uses.get(output, 0) + 1
    params = set(main.params)
    return {call.op.name_hint: ScratchIo(
                frozenset(i for i, arg in enumerate(call.args) if arg in params and uses[arg] == 1),
                frozenset({0}) if var in results and uses[var] == 1 and isinstance(var.ty, tvm.relax.TensorType)
                else frozenset())
            for var, call in calls}


def build(mod: tvm.IRModule, target: str = "ethos-u -accelerator-config=ethos-u55-128,c", params=None,
          executor: str = "aot", pass_config: Optional[dict] = None, memory_planner: Optional[str] = None,
          workspace_pools: Optional[list[PoolInfo]] = None, use_workspace_io: bool = False,
          cascader_sram_limit: Optional[int] = None,
          progress: Optional[Callable[[str], None]] = None) -> CompiledModel:
    """Compile a QDQ Relax module (from :func:`ethosu_tvm.from_tflite`) for `target`.

    `params` exists for relay.build compatibility: the imported module already carries its constants, so only
    None or an empty dict is accepted. Raises TargetError/BuildError for bad options, UnsupportedHostOp for an
    operator neither the NPU nor a host kernel implements, PlanDoesNotFit when the pools are too small,
    CascaderError when no cascading schedule fits the cascader's SRAM limit (`cascader_sram_limit` bytes of NPU
    scratch, by default the size hint of the NPU's first pool; the target must enable the cascader).
    `progress` is called with a short message as each stage starts.
    """
    report = progress or (lambda message: None)
    if params:
        raise BuildError("params: the imported module already carries its constants; pass params=None")
    config = configure(target, executor, pass_config, memory_planner, workspace_pools, use_workspace_io,
                       cascader_sram_limit)
    if config.npu is not None:
        report(f"partitioning for {config.npu.accelerator}")
        partitioned, offload = partition_for_ethosu(mod, config.npu)
    else:
        partitioned, offload = mod, host_only_report(mod)
    fused = fuse_host_ops(partitioned)
    artifacts = []
    if config.npu is not None:
        cascading = " with the cascader" if config.cascader is not None else ""
        report(f"generating NPU command streams ({offload.counts().get('ethos-u', 0)} operators){cascading}")
        artifacts = compile_partitioned(fused, config.npu,
                                        io_in_scratch(fused) if config.io_in_workspace else None,
                                        config.cascader)
    report("building host kernels")
    inputs, outputs = model_io_names(mod)
    program = build_program(fused, artifacts, config.host, inputs, outputs)
    report("planning memory")
    workspace = plan_workspace(program, list(config.pools), config.memory_planner, config.io_in_workspace)
    sources = generate(program, workspace, config.user_pools, MODULE)
    accelerator = config.npu.accelerator if config.npu is not None else None
    interface = interface_of(program, workspace, accelerator, config.user_pools)
    return CompiledModel(config, partitioned, offload, program, workspace, sources, interface)
