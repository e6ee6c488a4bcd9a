"""Compile a HostKernel's C with the host gcc, call it through ctypes, check the C's MCU properties, and
compare a model's kernel with LiteRT."""
from __future__ import annotations

import ctypes
import hashlib
import re
import subprocess
from pathlib import Path

import numpy as np
from host_tflite_ops import host_op

from ethosu_tvm.host import HostKernel, build_kernel
from ethosu_tvm.testing.reference import random_inputs, run_litert

SEEDS = range(5)
CFLAGS = ("-std=c99", "-O2", "-Wall", "-Wextra", "-Werror")
MAX_STACK_ARRAY_BYTES = 64
_C_BYTES = {"int8_t": 1, "uint8_t": 1, "int16_t": 2, "uint16_t": 2, "int32_t": 4, "uint32_t": 4, "int64_t": 8,
            "bool": 1}


class CompiledKernel:
    """A kernel loaded from a shared object: call it with the input arrays, get the output array."""

    def __init__(self, kernel: HostKernel, library: Path):
        self.kernel = kernel
        self._library = ctypes.CDLL(str(library))
        self._function = getattr(self._library, kernel.name)
        self._function.restype = None
        count = len(kernel.params) + len(kernel.scratch)
        self._function.argtypes = [ctypes.c_void_p] * count

    def __call__(self, *inputs: np.ndarray) -> np.ndarray:
        arrays, output = [], None
        remaining = iter(inputs)
        for param in self.kernel.params:
            if param.role == "input":
                value = np.ascontiguousarray(next(remaining), dtype=param.dtype)
                assert value.size == np.prod(param.shape), (param.name, value.shape, param.shape)
            elif param.role == "constant":
                value = np.ascontiguousarray(param.data)
            else:
                value = output = np.zeros(param.shape, dtype=param.dtype)
            arrays.append(value)
        pointers = [a.ctypes.data for a in arrays]
        for scratch in self.kernel.scratch:  # garbage, aligned
            arrays.append(np.full(scratch.nbytes + scratch.alignment, 0xA5, dtype=np.uint8))
            pointers.append(arrays[-1].ctypes.data + (-arrays[-1].ctypes.data) % scratch.alignment)
        self._function(*pointers)
        return output


class KernelCompiler:
    """gcc -shared with the project's warning flags; one build per distinct C source (kernels that differ only
    in their constants share it)."""

    def __init__(self, directory: Path):
        self.directory = directory
        self._libraries: dict[str, Path] = {}

    def __call__(self, kernel: HostKernel) -> CompiledKernel:
        key = hashlib.sha256(kernel.c_source.encode()).hexdigest()[:16]
        if key not in self._libraries:
            source = self.directory / f"{kernel.name}_{key}.c"
            source.write_text(kernel.c_source)
            library = source.with_suffix(".so")
            gcc = subprocess.run(["gcc", *CFLAGS, "-shared", "-fPIC", str(source), "-o", str(library)],
                                 capture_output=True, text=True)
            assert gcc.returncode == 0, f"gcc failed on {source}:\n{gcc.stderr}"
            self._libraries[key] = library
        return CompiledKernel(kernel, self._libraries[key])


def stack_arrays(source: str) -> list[tuple[str, int]]:
    """(name, bytes) of every fixed-size local array declared in the C source."""
    found = re.findall(r"^\s+(?:static\s+)?(\w+) (\w+)\[(\d+)\];", source, re.MULTILINE)
    return [(name, _C_BYTES[ctype] * int(count)) for ctype, name, count in found]


def assert_plain_c(kernel: HostKernel) -> None:
    """No TVM header or symbol, no dynamic allocation, only small local arrays, one exported function."""
    source = kernel.c_source
    assert '#include "tvm' not in source and "TVM" not in source and "__tvm" not in source
    assert not re.search(r"\b(malloc|calloc|realloc|free|alloca)\b", source)
    assert all(size <= MAX_STACK_ARRAY_BYTES for _, size in stack_arrays(source)), stack_arrays(source)
    exported = re.findall(r"^(?!static)[\w ]+\b(\w+)\(.*\) \{$", source, re.MULTILINE)
    assert exported == [kernel.name]


def assert_bit_exact(model: bytes, compile_kernel: KernelCompiler, seeds=SEEDS) -> None:
    """The kernel built from the model's operator returns LiteRT's output exactly, for every seed."""
    kernel = build_kernel(host_op(model))
    assert_plain_c(kernel)
    run = compile_kernel(kernel)
    for seed in seeds:
        inputs = random_inputs(model, seed)
        (expected,) = run_litert(model, inputs)
        np.testing.assert_array_equal(run(*inputs).reshape(expected.shape), expected, err_msg=f"seed {seed}")
