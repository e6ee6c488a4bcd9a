"""`src/interface.json` in the MLF: what a runner needs to call `tvmgen_default_run` without parsing C."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from ..arch.system import DEFAULT_SYSTEM, System, find_system
from ..target import EthosuTarget
from .program import Program
from .workspace import Workspace

INTERFACE_PATH = "src/interface.json"


@dataclass(frozen=True)
class IOField:
    """One field of the inputs/outputs struct, in struct order."""

    name: str
    c_name: str
    shape: tuple[int, ...]
    dtype: str
    pool: str | None = None  # with the I/O in the workspace: where the memory plan put it
    offset: int | None = None


@dataclass(frozen=True)
class ModelInterface:
    inputs: tuple[IOField, ...]
    outputs: tuple[IOField, ...]
    accelerator: str | None  # None: no NPU launches (no devices argument)
    pools: tuple[tuple[str, int], ...]  # (name, size) of each workspace pool, in struct order
    user_pools: bool  # tvmgen_default_run takes a workspace_pools argument
    io_in_workspace: bool = False  # ... and no inputs/outputs arguments: I/O lives at `pool`/`offset`
    system_config: str | None = None  # the system the NPU's cycles are estimated for (None: no NPU launches)
    memory_mode: str | None = None
    states: tuple[IOField, ...] = ()  # kept by the runner between runs (tvmgen_default_reset sets them back)

    @property
    def system(self) -> System:
        """The target's system (Vela's default for tarballs that do not say)."""
        return find_system(self.system_config, self.memory_mode) if self.system_config else DEFAULT_SYSTEM

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2) + "\n"

    @classmethod
    def from_json(cls, text: str) -> "ModelInterface":
        data = json.loads(text)
        fields = {kind: tuple(IOField(f["name"], f["c_name"], tuple(f["shape"]), f["dtype"], f["pool"], f["offset"])
                              for f in data.get(kind, ()))
                  for kind in ("inputs", "outputs", "states")}
        interface = cls(fields["inputs"], fields["outputs"], data["accelerator"],
                        tuple((name, int(size)) for name, size in data["pools"]), bool(data["user_pools"]),
                        bool(data["io_in_workspace"]), data.get("system_config"), data.get("memory_mode"),
                        fields["states"])
        if interface.system_config is not None:  # a system this version does not know: ValueError, here
            find_system(interface.system_config, interface.memory_mode)
        return interface


def interface_of(program: Program, workspace: Workspace, npu: EthosuTarget | None, user_pools: bool) -> ModelInterface:
    """The interface of a program compiled for `npu` (None: host only)."""
    def field(io):
        pool, offset = workspace.offset(io.tensor.name) if workspace.io_in_workspace else (None, None)
        return IOField(io.name, io.c_name, io.tensor.shape, io.tensor.dtype, pool, offset)

    npu = npu if program.has_npu else None
    states = tuple(IOField(s.name, s.c_name, s.before.shape, s.before.dtype) for s in program.states)
    return ModelInterface(tuple(field(io) for io in program.inputs), tuple(field(io) for io in program.outputs),
                          npu and npu.accelerator, tuple(workspace.plan.pool_sizes.items()), user_pools,
                          workspace.io_in_workspace, npu and npu.system_config, npu and npu.memory_mode, states)
