"""Compare a layer dump (`tvmc run --debug-layers DIR`) with LiteRT's intermediate tensors and name the first
operator, in model order, whose output differs."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..debug_layers import read_dump
from ..frontend.tflite_file import read_model
from .reference import litert_tensors


@dataclass(frozen=True)
class LayerDifference:
    """The first differing operator's output: `count` differing elements, largest absolute difference `max_abs`
    (float only for the float32 tensors of float-I/O models)."""

    operator: int
    kind: str
    name: str
    count: int
    max_abs: int | float

    def __str__(self) -> str:
        return (f"operator #{self.operator} {self.kind}: output {self.name!r} differs from LiteRT in {self.count} "
                f"elements (max abs diff {self.max_abs})")


@dataclass(frozen=True)
class LayerComparison:
    """Every dumped tensor's name compared, and the first difference (None: all equal)."""

    compared: tuple[str, ...]
    first_difference: LayerDifference | None


def _tensor_indices(model: bytes) -> dict[str, int]:
    graph = read_model(model).Subgraphs(0)
    return {graph.Tensors(i).Name().decode(): i for i in range(graph.TensorsLength())}


def compare_layers(model: bytes, inputs: list[np.ndarray], dump: Path) -> LayerComparison:
    """Run `model` with LiteRT's reference kernels on `inputs` (all tensors kept) and compare every tensor of the
    dump in `dump` with LiteRT's tensor of that name, bit for bit."""
    index, arrays = read_dump(dump)
    expected = litert_tensors(model, inputs)
    indices = _tensor_indices(model)
    differences = []
    for entry in sorted(index, key=lambda e: e["operator"]):
        name = entry["name"]
        if name not in indices:
            raise ValueError(f"dumped tensor {name!r} is not a tensor of the model")
        want, got = expected[indices[name]], arrays[name]
        if want.shape != got.shape or want.dtype != got.dtype:
            raise ValueError(f"dumped tensor {name!r} is {got.dtype} {list(got.shape)}, LiteRT's is "
                             f"{want.dtype} {list(want.shape)}")
        wide = np.float64 if np.issubdtype(want.dtype, np.floating) else np.int64
        diff = np.abs(want.astype(wide) - got.astype(wide))
        if diff.any():
            differences.append(LayerDifference(entry["operator"], entry["kind"], name, int(np.count_nonzero(diff)),
                                               diff.max().item()))
    return LayerComparison(tuple(e["name"] for e in index), differences[0] if differences else None)
