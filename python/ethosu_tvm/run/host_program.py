"""Run an MLF's C on this PC: the generated sources built with the host gcc into a shared library, NPU launches
answered by the Ethos-U55 simulator through a driver shim (shim/ethosu_driver_sim.c) that calls back into Python.

This is exactly the C a firmware links, so a bit-exact result here checks the runner, the memory plan and every
kernel together, not a Python model of them.
"""
from __future__ import annotations

import ctypes
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from ..aot.interface import INTERFACE_PATH, ModelInterface
from ..arch import ALIGNMENT, round_up
from ..arch.system import DEFAULT_SYSTEM, System
from ..sim import SimStats, Simulator

SHIM = Path(__file__).with_name("shim")
CFLAGS = ("-std=c99", "-O2", "-Wall", "-Werror", "-shared", "-fPIC")
_INVOKE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(ctypes.c_uint64),
                           ctypes.POINTER(ctypes.c_size_t), ctypes.c_int)


class RunError(RuntimeError):
    """The model cannot be run as asked (bad inputs, no compiler, a failing NPU launch); one-line message."""


def compile_library(mlf: Path, output: Path) -> Path:
    """gcc the MLF's C (kernels, runner, runtime glue) with the simulator driver shim into `output` (.so)."""
    compiler = shutil.which("gcc")
    if compiler is None:
        raise RunError("running a model needs the host C compiler gcc, which is not installed")
    sources = sorted((mlf / "codegen" / "host" / "src").glob("*.c")) + sorted((mlf / "runtime" / "src").glob("*.c"))
    includes = [mlf / "codegen" / "host" / "include", mlf / "runtime" / "include", SHIM]
    command = [compiler, *CFLAGS, *(f"-I{path}" for path in includes), *map(str, sources),
               str(SHIM / "ethosu_driver_sim.c"), "-o", str(output)]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise RunError(f"gcc could not build the model library: {result.stderr.strip().splitlines()[0]}")
    return output


def _struct(name: str, fields: Sequence[str]) -> type:
    return type(name, (ctypes.Structure,), {"_fields_": [(f, ctypes.c_void_p) for f in fields]})


class HostProgram:
    """An extracted MLF compiled for this PC; `run` executes tvmgen_default_run once. NPU cycles are estimated for
    `system` (the MLF does not record the target's system; None: Vela's default, as `tvmc run` assumes)."""

    def __init__(self, mlf: Path, workdir: Path, system: System | None = None):
        self.interface = ModelInterface.from_json((mlf / INTERFACE_PATH).read_text())
        self._library = ctypes.CDLL(str(compile_library(mlf, workdir / "model.so")))
        self._run = self._library.tvmgen_default_run
        self._run.restype = ctypes.c_int32
        self._simulator = (Simulator(self.interface.accelerator, system or DEFAULT_SYSTEM)
                           if self.interface.accelerator else None)
        self.stats: list[SimStats] = []
        self._error: BaseException | None = None
        self._callback = _INVOKE(self._invoke)  # kept referenced for as long as the library may call it
        if self._simulator is not None:
            self._library.ethosu_tvm_set_invoke(self._callback)

    def _invoke(self, stream, size, addresses, sizes, count) -> int:
        try:
            regions = {}
            for region in range(count):
                if sizes[region]:
                    buffer = (ctypes.c_uint8 * sizes[region]).from_address(addresses[region])
                    regions[region] = memoryview(buffer).cast("B")
            self.stats.append(self._simulator.run(ctypes.string_at(stream, size), regions))
            return 0
        except Exception as err:  # reported by run(); the C side only sees the failure code
            self._error = err
            return -1

    def _arrays(self, inputs) -> list[np.ndarray]:
        fields = self.interface.inputs
        if isinstance(inputs, Mapping):
            unknown = sorted(set(inputs) - {f.name for f in fields})
            missing = [f.name for f in fields if f.name not in inputs]
            if unknown or missing:
                raise RunError(f"inputs must be named {', '.join(f.name for f in fields)}"
                               + (f"; unknown: {', '.join(unknown)}" if unknown else "")
                               + (f"; missing: {', '.join(missing)}" if missing else ""))
            inputs = [inputs[f.name] for f in fields]
        if len(inputs) != len(fields):
            raise RunError(f"the model takes {len(fields)} inputs, got {len(inputs)}")
        arrays = []
        for field, value in zip(fields, inputs):
            value = np.asarray(value)
            if value.dtype != np.dtype(field.dtype) or value.size != int(np.prod(field.shape)):
                raise RunError(f"input {field.name!r} must be {field.dtype} of shape {field.shape}, "
                               f"got {value.dtype} of shape {value.shape}")
            arrays.append(np.ascontiguousarray(value.reshape(field.shape)))
        return arrays

    def run(self, inputs) -> dict[str, np.ndarray]:
        """Outputs by model name for `inputs` (a mapping by model input name, or a sequence in model order)."""
        interface = self.interface
        arrays = self._arrays(inputs)
        pools = {name: np.zeros(size + ALIGNMENT, dtype=np.uint8) for name, size in interface.pools}
        base = {name: round_up(p.ctypes.data) for name, p in pools.items()}
        arguments = []
        if interface.io_in_workspace:
            for field, array in zip(interface.inputs, arrays):
                ctypes.memmove(base[field.pool] + field.offset, array.ctypes.data, array.nbytes)
        else:
            outputs = [np.zeros(f.shape, dtype=f.dtype) for f in interface.outputs]
            arguments += [_struct("Inputs", [f.c_name for f in interface.inputs])(*[a.ctypes.data for a in arrays]),
                          _struct("Outputs", [f.c_name for f in interface.outputs])(*[o.ctypes.data for o in outputs])]
        if interface.user_pools:
            arguments.append(_struct("Pools", [name for name, _ in interface.pools])(*base.values()))
        if self._simulator is not None:
            arguments.append(_struct("Devices", ["ethos_u"])(None))
        self.stats, self._error = [], None
        status = self._run(*[ctypes.byref(a) for a in arguments])
        if self._error is not None:
            raise RunError(f"NPU launch failed in the simulator: {self._error}") from self._error
        if status != 0:
            raise RunError(f"tvmgen_default_run returned {status}")
        if interface.io_in_workspace:
            outputs = [np.frombuffer(ctypes.string_at(base[f.pool] + f.offset, int(np.prod(f.shape)) *
                                                      np.dtype(f.dtype).itemsize), dtype=f.dtype).reshape(f.shape)
                       for f in interface.outputs]
        return {f.name: o for f, o in zip(interface.outputs, outputs)}

    @property
    def npu_cycles(self) -> int:
        """Estimated NPU cycles of the last run (sum over its launches)."""
        return sum(s.elapsed_cycles for s in self.stats)
