"""The kernel libraries an MLF's C calls, found on this PC for `tvmc run` / `CompiledModel.run`.

The project ships none (CMSIS-NN is in no package registry): ETHOSU_TVM_CMSIS_NN names a folder holding its
headers and prebuilt static libraries, laid out as docs/firmware.md describes:

    include/arm_nnfunctions.h (and the rest of CMSIS-NN's Include/)
    lib/x86_64/libcmsis-nn.a      this PC (linked into the model's shared library: build it with -fPIC)
    lib/cortex-m55/libcmsis-nn.a  lib/cortex-m7/libcmsis-nn.a   firmware builds
"""
from __future__ import annotations

import json
import os
from pathlib import Path

CMSIS_NN_ENV = "ETHOSU_TVM_CMSIS_NN"


class LibraryMissing(RuntimeError):
    """The model calls a kernel library that is not available here (one-line message)."""


def cmsis_nn_folder(architecture: str) -> tuple[Path, Path]:
    """The include folder and the static library of CMSIS-NN for `architecture` (a lib/ subfolder)."""
    root = os.environ.get(CMSIS_NN_ENV)
    if not root:
        raise LibraryMissing(f"this model calls CMSIS-NN: set {CMSIS_NN_ENV} to a folder with include/ and "
                             f"lib/{architecture}/libcmsis-nn.a (docs/firmware.md)")
    include, library = Path(root) / "include", Path(root) / "lib" / architecture / "libcmsis-nn.a"
    if not (include / "arm_nnfunctions.h").is_file() or not library.is_file():
        raise LibraryMissing(f"{CMSIS_NN_ENV}={root} lacks include/arm_nnfunctions.h or "
                             f"lib/{architecture}/libcmsis-nn.a (docs/firmware.md)")
    return include, library


def kernel_libraries(mlf: Path) -> list[str]:
    """The names of the kernel libraries the extracted MLF `mlf` calls, as its metadata lists them."""
    entry = json.loads((mlf / "metadata.json").read_text())["modules"]["default"]
    return [library["name"] for library in entry.get("kernel_libraries", [])]


def link_flags(mlf: Path) -> list[str]:
    """gcc flags (-I and the archive, to follow the sources) for the kernel libraries the MLF's metadata lists."""
    flags = []
    for name in kernel_libraries(mlf):
        if name != "cmsis-nn":
            raise LibraryMissing(f"this model calls the kernel library {name}, which tvmc run cannot link")
        include, archive = cmsis_nn_folder("x86_64")
        flags += [f"-I{include}", str(archive)]
    return flags
