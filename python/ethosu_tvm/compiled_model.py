"""A built model (:class:`CompiledModel`): exported as a Model Library Format tarball, run on this PC, summarised."""
from __future__ import annotations

import json
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import tvm

from .aot.c_source import CSources
from .aot.interface import INTERFACE_PATH, ModelInterface
from .aot.program import MODULE, HostStep, NpuStep, Program
from .aot.workspace import Workspace
from .arch import round_up
from .build_config import BuildConfig
from .codegen.cascade import describe_proposal, scratch_name
from .debug_layers import DEBUG_MAP_PATH, hidden_operators, layer_tensors, run_dumping, to_json, write_dump
from .frontend.attributes import OP_OUTPUTS_ATTR
from .host.cmsis_nn import CHECKED_AGAINST, LIBRARY
from .memory import plan_to_json
from .mlf import IOTensor, MlfModule, export_model_library_format
from .partition import OffloadReport
from .qdq.sources import without_operators

# The runtime glue: src/ of a source checkout, or where setup.py installs it.
_CHECKOUT_GLUE = Path(__file__).resolve().parents[2] / "src"
RUNTIME_DIR = _CHECKOUT_GLUE if (_CHECKOUT_GLUE / "ethosu_tvm_npu.c").is_file() else Path(__file__).parent / "_glue"
RUNTIME_FILES = {"runtime/include/ethosu_tvm_npu.h": "ethosu_tvm_npu.h",
                 "runtime/src/ethosu_tvm_npu.c": "ethosu_tvm_npu.c"}

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
    _runners: dict = field(default_factory=dict, repr=False)  # HostProgram by debug
    _runner: object = field(default=None, repr=False)  # the last run's
    _tmp: object = field(default=None, repr=False)

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

    @property
    def kernel_libraries(self) -> dict[str, str]:
        """The kernel libraries the host kernels call, with the release each was checked against."""
        names = {step.kernel.library for step in self.program.steps if isinstance(step, HostStep)}
        return {LIBRARY: CHECKED_AGAINST} if LIBRARY in names else {}

    def mlf_module(self, debug_info: bool = False) -> MlfModule:
        """The MLF's contents; `debug_info` adds the layer-dump map (src/debug_layers.json) for tvmc run."""
        files: dict[str, str | bytes] = dict(self.sources.files())
        if self.program.has_npu:
            files.update({path: (RUNTIME_DIR / name).read_text() for path, name in RUNTIME_FILES.items()})
        relax_text = without_operators(self.partitioned.without_attr(OP_OUTPUTS_ATTR)).script(show_meta=False)
        files["src/relax.txt"] = relax_text
        files["src/offload_report.txt"] = str(self.offload) + "\n"
        files["src/memory_plan.json"] = json.dumps(plan_to_json(self.workspace.plan), indent=2) + "\n"
        files[INTERFACE_PATH] = self.interface.to_json()
        if debug_info:
            tensors = layer_tensors(self)
            files[DEBUG_MAP_PATH] = to_json(tensors, hidden_operators(self, tensors))

        def io(ios):
            return [IOTensor(x.name, x.tensor.dtype, x.tensor.shape) for x in ios]

        return MlfModule(MODULE, list(self.config.targets), io(self.program.inputs), io(self.program.outputs),
                         self.workspace.plan.total_size, self.constants_size_bytes, files,
                         dict(self.workspace.plan.pool_sizes), self.config.io_in_workspace, self.kernel_libraries,
                         self.config.user_pools)

    def export_model_library_format(self, path, debug_info: bool = False) -> Path:
        """Write the MLF v7 tarball (deterministic, replaced atomically); `debug_info` as for `mlf_module`."""
        return export_model_library_format(self.mlf_module(debug_info), path)

    def run(self, inputs, debug_layers=None) -> dict:
        """Run the generated C on this PC (NPU launches in the simulator); outputs by model output name. A model with
        states (an LSTM's) carries them from one call to the next, as the firmware does (each of the plain and debug
        builds its own), until `reset`. With `debug_layers` (a directory), a debug build of the same C also writes
        every materialised intermediate tensor there (see `ethosu_tvm.debug_layers`)."""
        debug = debug_layers is not None
        if debug not in self._runners:
            from .run.host_program import HostProgram

            self._tmp = self._tmp or tempfile.TemporaryDirectory(prefix="ethosu_tvm_run_")
            root = Path(self._tmp.name)
            if not (root / "mlf").is_dir():
                self.export_model_library_format(root / "model.tar")
                with tarfile.open(root / "model.tar") as tar:
                    tar.extractall(root / "mlf", filter="data")
            self._runners[debug] = HostProgram(root / "mlf", root, debug)
        self._runner = self._runners[debug]
        if not debug:
            return self._runner.run(inputs)
        tensors = layer_tensors(self)
        outputs, dumped = run_dumping(self._runner, inputs, tensors)
        write_dump(Path(debug_layers), tensors, dumped)
        return outputs

    def reset(self) -> None:
        """Set the model's states (an LSTM's, which `run` carries from one call to the next) back to their initial
        values."""
        for runner in self._runners.values():
            runner.reset()

    @property
    def npu_cycles(self) -> int:
        """Estimated NPU cycles of the last `run` in the target's system (0 before any run or without NPU
        work)."""
        return self._runner.npu_cycles if self._runner is not None else 0

    def summary(self) -> str:
        """Offload and memory summaries, as `tvmc compile` prints them."""
        counts = self.offload.counts()
        npu = self.config.npu.accelerator if self.config.npu else "no NPU"
        lines = [f"Offload: {counts.get('ethos-u', 0)} operators on {npu}, {counts.get('host', 0)} on the host"]
        for entry in self.offload.ops:
            if entry.target == "host":
                lines.append(f"  host: #{entry.index} {entry.op}: {entry.detail}")
        plan = self.workspace.plan
        pools = ", ".join(f"{name} {size} bytes" for name, size in plan.pool_sizes.items())
        io = "in the workspace" if self.config.io_in_workspace else f"{self.io_size_bytes} bytes"
        lines.append(f"Memory: workspace {plan.total_size} bytes ({pools}; planner {plan.algorithm}"
                     f"{', proven optimal' if plan.proven_optimal else ''}), constants {self.constants_size_bytes}"
                     f" bytes, I/O {io}")
        npu_steps = [s for s in self.program.steps if isinstance(s, NpuStep)]
        split = " (one per operator: a debug build)" if self.config.split_launches else ""
        lines.append(f"Steps: {len(npu_steps)} NPU launches{split}, {len(self.program.steps) - len(npu_steps)} "
                     "host kernels")
        if npu_steps:
            from .layer_report import npu_estimate

            total, elapsed = npu_estimate([s.artifact for s in npu_steps])
            lines.append(f"NPU: estimated {total} cycles per inference (the cost model's sum over the NPU operations;"
                         f" per operator: --dump-per-layer), {elapsed} elapsed with weight DMAs overlapping them")
        for step in npu_steps:
            report = step.artifact.cascade
            if report is not None:
                limit = "no limit" if report.sram_limit is None else f"limit {report.sram_limit} bytes"
                lines.append(f"Cascader: {step.artifact.name}: proposal {report.index} of {report.proposals} "
                             f"({limit}), {scratch_name(step.artifact.system)} {report.scratch_size} bytes; "
                             f"{describe_proposal(report.proposal)}")
        return "\n".join(lines)
