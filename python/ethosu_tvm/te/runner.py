"""Build a TE graph for the host CPU (llvm) and run it: the functional reference of an NPU subgraph."""
from __future__ import annotations

import numpy as np
import tvm

from .graph import TeGraph


class CompiledTeGraph:
    """A TE graph built for llvm; call it with the subgraph inputs (NumPy, any shape with the right size)."""

    def __init__(self, graph: TeGraph, target: str = "llvm"):
        self.graph = graph
        mod = tvm.IRModule({graph.name: graph.prim_func()})
        self.executable = tvm.compile(mod, target=target)
        self._constants = [tvm.runtime.tensor(np.ascontiguousarray(value)) for _, value in graph.constants]

    def __call__(self, inputs: list[np.ndarray]) -> list[np.ndarray]:
        if len(inputs) != len(self.graph.inputs):
            raise ValueError(f"{self.graph.name} takes {len(self.graph.inputs)} inputs, got {len(inputs)}")
        args = [
            tvm.runtime.tensor(np.ascontiguousarray(np.asarray(x).reshape(_shape(t)).astype(str(t.dtype))))
            for x, t in zip(inputs, self.graph.inputs)
        ]
        outputs = [tvm.runtime.tensor(np.zeros(_shape(t), dtype=str(t.dtype))) for t in self.graph.outputs]
        self.executable[self.graph.name](*args, *self._constants, *outputs)
        return [out.numpy() for out in outputs]


def _shape(tensor) -> tuple[int, ...]:
    return tuple(int(d) for d in tensor.shape)
