"""Test support that ships with the package: a TFLite model factory and reference runtimes."""
from __future__ import annotations

import os
from pathlib import Path


def shared_models_dir() -> Path:
    """The folder of real benchmark models: $ETHOSU_TVM_MODELS, else ../shared/models beside the checkout."""
    env = os.environ.get("ETHOSU_TVM_MODELS")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[3].parent / "shared" / "models"


class SharedModelMissing(FileNotFoundError):
    """A real benchmark model is not in the shared model folder (the test suite skips on it, except in CI)."""


def shared_model(name: str) -> bytes:
    """Read one shared model by file name; raises SharedModelMissing, naming ETHOSU_TVM_MODELS, without it."""
    path = shared_models_dir() / name
    if not path.is_file():
        raise SharedModelMissing(
            f"model {name} not found in {path.parent}; set ETHOSU_TVM_MODELS to the folder of the shared models"
        )
    return path.read_bytes()
