"""Run an MLF's C on this PC: the generated sources built with the host gcc into a shared library, NPU launches
answered by the Ethos-U55 simulator through a driver shim (shim/ethosu_driver_sim.c) that calls back into Python.

This is exactly the C a firmware links, so a bit-exact result here checks the runner, the memory plan and every
kernel together, not a Python model of them. A debug build (`debug=True`, for layer dumps) compiles the same C, with
the host kernels instrumented so that each step's end calls back into Python (shim/ethosu_tvm_step_hook.c).
"""
from __future__ import annotations

import ctypes
import itertools
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from ..aot.interface import INTERFACE_PATH, ModelInterface
from ..arch import ALIGNMENT, round_up
from ..sim import SimStats, Simulator
from .kernel_libraries import LibraryMissing, link_flags

SHIM = Path(__file__).with_name("shim")
CFLAGS = ("-std=c99", "-O2", "-Wall", "-Werror", "-shared", "-fPIC")
_INVOKE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(ctypes.c_uint64),
                           ctypes.POINTER(ctypes.c_size_t), ctypes.c_int)
_STEP = ctypes.CFUNCTYPE(None)
# Only the kernels are instrumented: the runner, the NPU glue and the shims are left as they are.
_NOT_INSTRUMENTED = ("default_lib0.c", "ethosu_tvm_npu.c", "ethosu_driver_sim.c", "ethosu_tvm_step_hook.c")
DEBUG_CFLAGS = ("-finstrument-functions", f"-finstrument-functions-exclude-file-list={','.join(_NOT_INSTRUMENTED)}")


class RunError(RuntimeError):
    """The model cannot be run as asked (bad inputs, no compiler, a failing NPU launch); one-line message."""


def compile_library(mlf: Path, output: Path, debug: bool = False) -> Path:
    """gcc the MLF's C (kernels, runner, runtime glue) with the simulator driver shim into `output` (.so); with
    `debug`, also the step hook, the kernels instrumented."""
    compiler = shutil.which("gcc")
    if compiler is None:
        raise RunError("running a model needs the host C compiler gcc, which is not installed")
    sources = sorted((mlf / "codegen" / "host" / "src").glob("*.c")) + sorted((mlf / "runtime" / "src").glob("*.c"))
    includes = [mlf / "codegen" / "host" / "include", mlf / "runtime" / "include", SHIM]
    shims = ["ethosu_driver_sim.c"] + (["ethosu_tvm_step_hook.c"] if debug else [])
    try:
        libraries = link_flags(mlf)
    except LibraryMissing as err:
        raise RunError(str(err)) from None
    command = [compiler, *CFLAGS, *(DEBUG_CFLAGS if debug else ()), *(f"-I{path}" for path in includes),
               *map(str, sources), *(str(SHIM / name) for name in shims), *libraries, "-o", str(output)]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise RunError(f"gcc could not build the model library: {result.stderr.strip().splitlines()[0]}")
    return output


def _pool_symbols(library: Path, loaded: ctypes.CDLL) -> dict[str, int]:
    """Addresses of the runner's static workspace pools (tvmgen_default_<pool>_pool, file-local), by pool name: their
    offsets in the library's symbol table moved by where the library was loaded (found from tvmgen_default_run)."""
    if shutil.which("nm") is None:
        raise RunError("layer dumps need nm (binutils), which is not installed")
    result = subprocess.run(["nm", str(library)], capture_output=True, text=True)
    if result.returncode != 0:
        raise RunError(f"nm cannot read the model library: {result.stderr.strip()}")
    symbols = {parts[2]: int(parts[0], 16) for parts in map(str.split, result.stdout.splitlines()) if len(parts) == 3}
    bias = ctypes.cast(loaded.tvmgen_default_run, ctypes.c_void_p).value - symbols["tvmgen_default_run"]
    pattern = re.compile(r"tvmgen_default_(\w+)_pool")
    return {match.group(1): bias + address for name, address in symbols.items() if (match := pattern.fullmatch(name))}


def _struct(name: str, fields: Sequence[str]) -> type:
    return type(name, (ctypes.Structure,), {"_fields_": [(f, ctypes.c_void_p) for f in fields]})


def input_arrays(interface: ModelInterface, inputs) -> list[np.ndarray]:
    """`inputs` (a mapping by model input name, or a sequence in model order) checked against the model's, in model
    order and shape."""
    fields = interface.inputs
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


class HostProgram:
    """An extracted MLF compiled for this PC; `run` executes tvmgen_default_run once. A `debug` build calls
    `run`'s `after_step` after each step (NPU launch or kernel call). NPU cycles are estimated for the system the
    model was compiled for (the interface records it). A model with states (an LSTM's) carries them from one `run`
    to the next, as the firmware does, until `reset`."""

    def __init__(self, mlf: Path, workdir: Path, debug: bool = False):
        self.interface = ModelInterface.from_json((mlf / INTERFACE_PATH).read_text())
        library = compile_library(mlf, workdir / ("model_debug.so" if debug else "model.so"), debug)
        self._library = ctypes.CDLL(str(library))
        self.debug = debug
        self._pool_symbols = _pool_symbols(library, self._library) if debug else {}
        self._run = self._library.tvmgen_default_run
        self._run.restype = ctypes.c_int32
        self._simulator = (Simulator(self.interface.accelerator, self.interface.system)
                           if self.interface.accelerator else None)
        self.stats: list[SimStats] = []
        self._error: BaseException | None = None
        self._error_context = ""
        self._callback = _INVOKE(self._invoke)  # kept referenced for as long as the library may call it
        if self._simulator is not None:
            self._library.ethosu_tvm_set_invoke(self._callback)
        self._after_step = None
        self._step_callback = _STEP(self._step_done)
        if debug:
            self._library.ethosu_tvm_set_step_hook(self._step_callback)

    def _step_done(self) -> None:
        if self._after_step is not None and self._error is None:
            try:
                self._after_step()
            except Exception as err:  # reported by run(), like a failing launch
                self._error = err
                self._error_context = "after_step failed"

    def _invoke(self, stream, size, addresses, sizes, count) -> int:
        try:
            regions = {}
            for region in range(count):
                if sizes[region]:
                    buffer = (ctypes.c_uint8 * sizes[region]).from_address(addresses[region])
                    regions[region] = memoryview(buffer).cast("B")
            self.stats.append(self._simulator.run(ctypes.string_at(stream, size), regions))
            self._step_done()
            return 0
        except Exception as err:  # reported by run(); the C side only sees the failure code
            self._error = err
            self._error_context = "NPU launch failed in the simulator"
            return -1

    def run(self, inputs, after_step=None) -> dict[str, np.ndarray]:
        """Outputs by model name for `inputs` (a mapping by model input name, or a sequence in model order).

        `after_step(step, read)` (debug builds only) is called after each step with its index and
        `read(pool, offset, nbytes)`, which returns those bytes of the workspace as they are then."""
        interface = self.interface
        arrays = input_arrays(self.interface, inputs)
        pools = {name: np.zeros(size + ALIGNMENT, dtype=np.uint8) for name, size in interface.pools}
        base = {name: round_up(p.ctypes.data) for name, p in pools.items()}
        if after_step is not None:
            if not self.debug:
                raise RunError("after_step needs a debug build of the model (HostProgram(..., debug=True))")
            if not interface.user_pools:  # the runner's own static pools
                base = {name: self._pool_symbols[name] for name in base}
            steps = itertools.count()

            def read(pool: str, offset: int, nbytes: int) -> bytes:
                return ctypes.string_at(base[pool] + offset, nbytes)

            self._after_step = lambda: after_step(next(steps), read)
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
        try:
            status = self._run(*[ctypes.byref(a) for a in arguments])
        finally:
            self._after_step = None
        if self._error is not None:
            raise RunError(f"{self._error_context}: {self._error}") from self._error
        if status != 0:
            raise RunError(f"tvmgen_default_run returned {status}")
        if interface.io_in_workspace:
            outputs = [np.frombuffer(ctypes.string_at(base[f.pool] + f.offset, int(np.prod(f.shape)) *
                                                      np.dtype(f.dtype).itemsize), dtype=f.dtype).reshape(f.shape)
                       for f in interface.outputs]
        return {f.name: o for f, o in zip(interface.outputs, outputs)}

    def reset(self) -> None:
        """Set the model's states back to their initial values (tvmgen_default_reset); nothing without states."""
        if self.interface.states:
            self._library.tvmgen_default_reset()

    @property
    def npu_cycles(self) -> int:
        """Estimated NPU cycles of the last run (sum over its launches)."""
        return sum(s.elapsed_cycles for s in self.stats)
