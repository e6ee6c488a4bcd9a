"""Fixtures for the simulator tests: Vela compilations cached for the whole session."""
from __future__ import annotations

import pytest

from ethosu_tvm.sim.vela_compile import compile_model

ACCELERATORS = ("ethos-u55-32", "ethos-u55-64", "ethos-u55-128", "ethos-u55-256")
OPTIMISE = ("Performance", "Size")


LEGACY_CORE = ("--debug-force-legacy-core",)  # Vela's older Python code generator instead of Regor


@pytest.fixture(scope="session")
def vela(tmp_path_factory):
    """compile(name, model_bytes, accelerator, optimise, legacy=False, system=None) -> `_vela.tflite` bytes,
    compiled once a session with the `vela` command line (in-process, see ethosu_tvm.sim.vela_compile); `system` is
    a (system config, memory mode) other than the U55 default."""
    root = tmp_path_factory.mktemp("vela")
    cache: dict[tuple, bytes] = {}

    def compile_(name: str, model: bytes, accelerator: str, optimise: str, legacy: bool = False,
                 system: tuple[str, str] | None = None) -> bytes:
        key = (name, accelerator, optimise, legacy, system)
        if key not in cache:
            source = root / "src" / f"{name}.tflite"
            source.parent.mkdir(exist_ok=True)
            source.write_bytes(model)
            output = root / "_".join((accelerator, optimise, *(("legacy",) if legacy else ()), *(system or ())))
            options = (LEGACY_CORE if legacy else ()) + (("--system-config", system[0], "--memory-mode", system[1])
                                                         if system else ())
            cache[key] = compile_model(source, accelerator, optimise, output, options, fresh_process=legacy)
        return cache[key]

    return compile_
