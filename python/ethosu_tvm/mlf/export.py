"""Writing an MLF v7 tarball: deterministic (same module, byte-identical file) and atomic (no partial file).

Layout, as firmware projects that consumed TVM's MLF expect it:
  metadata.json                       version 7, modules.default: targets, executors, memory, I/O
  codegen/host/src/*.c                host kernels, NPU launch code, AOT runner, constants
  codegen/host/include/*.h            tvmgen_default.h
  CMakeLists.txt                      the model as a CMake static library target (mlf/cmake.py)
  zephyr/*                            the tarball as a Zephyr module (mlf/zephyr.py)
  src/*                               IR dumps, offload report, memory plan
  runtime/*                           C runtime glue the generated code calls
"""
from __future__ import annotations

import io
import json
import math
import os
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..arch.system import FAST_SCRATCH_POOL
from ..output_files import OutputPathError, write_atomically
from .cmake import CMAKE_PATH, cmake_lists, needs_driver
from .zephyr import module_files

MLF_VERSION = 7
# A fixed timestamp keeps the archive reproducible; SOURCE_DATE_EPOCH (reproducible-builds convention) overrides.
_DEFAULT_EPOCH = 0


# The tarball cannot be written where the user asked.
MlfError = OutputPathError


@dataclass(frozen=True)
class IOTensor:
    name: str
    dtype: str
    shape: tuple[int, ...]

    @property
    def size(self) -> int:
        return math.prod(self.shape) * np.dtype(self.dtype).itemsize


@dataclass
class MlfModule:
    """Everything one compiled model contributes to the tarball (paths are relative to the archive root)."""

    model_name: str
    targets: list[str]
    inputs: list[IOTensor]
    outputs: list[IOTensor]
    workspace_size_bytes: int
    constants_size_bytes: int
    files: dict[str, bytes | str] = field(default_factory=dict)
    pools: dict[str, int] = field(default_factory=dict)
    io_in_workspace: bool = False
    kernel_libraries: dict[str, str] = field(default_factory=dict)  # the libraries the C calls: what it was checked
    user_pools: bool = False  # the application passes the pools: the runner has no static arrays of them


def _epoch() -> int:
    value = os.environ.get("SOURCE_DATE_EPOCH")
    return int(value) if value and value.isdigit() else _DEFAULT_EPOCH


def metadata(module: MlfModule) -> dict:
    """metadata.json contents (MLF v7: modules keyed by name, target as a list, AOT full-model style)."""
    import time

    io_size = 0 if module.io_in_workspace else sum(t.size for t in module.inputs + module.outputs)
    main = {
        "device": 1,
        "workspace_size_bytes": module.workspace_size_bytes,
        "constants_size_bytes": module.constants_size_bytes,
        "io_size_bytes": io_size,
        "inputs": {t.name: {"size": t.size, "dtype": t.dtype} for t in module.inputs},
        "outputs": {t.name: {"size": t.size, "dtype": t.dtype} for t in module.outputs},
    }
    entry = {
        "model_name": module.model_name,
        "export_datetime": time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(_epoch())),
        "target": list(module.targets),
        "executors": ["aot"],
        "style": "full-model",
        "memory": {"functions": {"main": [main], "operator_functions": []}},
    }
    if module.kernel_libraries:
        entry["kernel_libraries"] = [{"name": name, "checked_against": version}
                                     for name, version in sorted(module.kernel_libraries.items())]
    if module.pools:
        entry["memory"]["workspace_pools"] = [{"name": name, "size_bytes": size}
                                              for name, size in module.pools.items()]
    return {"version": MLF_VERSION, "modules": {"default": entry}}


def _tar_bytes(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    mtime = _epoch()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        directories = sorted({str(parent) for name in files for parent in Path(name).parents if str(parent) != "."})
        for directory in directories:
            info = tarfile.TarInfo(f"./{directory}")
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, mtime
            tar.addfile(info)
        for name in sorted(files):
            data = files[name]
            info = tarfile.TarInfo(f"./{name}")
            info.size, info.mode, info.mtime = len(data), 0o644, mtime
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def export_model_library_format(module: MlfModule, path: str | os.PathLike) -> Path:
    """Write the tarball to `path` (replaced atomically: on any error no file is left there)."""
    files = {name: (data.encode() if isinstance(data, str) else bytes(data)) for name, data in module.files.items()}
    target = f"tvmgen_{module.model_name}"
    fast = 0 if module.user_pools else module.pools.get(FAST_SCRATCH_POOL, 0)  # a static array of its own
    generated = {CMAKE_PATH: cmake_lists(target, list(files), module.constants_size_bytes,
                                         module.workspace_size_bytes - fast, module.kernel_libraries, fast),
                 **module_files(target, needs_driver(list(files)), module.kernel_libraries, bool(fast))}
    for name in ("metadata.json", *generated):
        if name in files:
            raise ValueError(f"{name} is generated by the exporter")
    files.update({name: text.encode() for name, text in generated.items()})
    files["metadata.json"] = (json.dumps(metadata(module), indent=2, sort_keys=True) + "\n").encode()
    return write_atomically(Path(path), _tar_bytes(files))
