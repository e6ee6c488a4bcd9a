"""The typed errors for models the NPU flow cannot import (what `tvmc` turns into one line each)."""
from __future__ import annotations


class ModelImportError(ValueError):
    """Base of the typed errors for models the NPU flow cannot import."""


class FloatModelError(ModelImportError):
    """The model computes in floating point; the NPU flow needs a fully int8/int16-quantized model."""


class DynamicShapeError(ModelImportError):
    """A tensor has an unknown (dynamic) dimension; the NPU flow needs static shapes."""


class UnsupportedModelError(ModelImportError):
    """TVM's TFLite frontend cannot convert the model (an operator it does not implement, or similar)."""


def error_line(err: Exception) -> str:
    """The line of an error that says what failed: TVM's errors end with it, after their traceback."""
    lines = [line for line in str(err).splitlines() if line.strip()]
    return lines[-1].strip() if lines else type(err).__name__
