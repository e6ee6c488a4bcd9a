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


def shared_model(name: str) -> bytes:
    """Read one shared model by file name, with a clear error when the folder is missing."""
    path = shared_models_dir() / name
    if not path.is_file():
        raise FileNotFoundError(
            f"model {name} not found in {path.parent}; set ETHOSU_TVM_MODELS to the folder of the shared models"
        )
    return path.read_bytes()
