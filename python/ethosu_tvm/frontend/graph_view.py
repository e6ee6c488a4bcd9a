"""The model as TVM's TFLite frontend should see it: some operators hidden, other tensors as inputs and outputs.

Stripped float I/O operators, folded shape computations and space-to-batch reshuffles are left out this way, without
rewriting the flatbuffer: the views answer the generated readers' calls TVM makes, and every other call reads the
model itself.
"""
from __future__ import annotations

import numpy as np
import tflite


class _SubGraphView(tflite.SubGraph):
    """The first subgraph with some operators hidden and other inputs and outputs; `source_indices` maps the
    operators it shows to their indices in the model; its tensors are `graph`'s. The methods are the generated
    reader's that TVM calls."""

    def __init__(self, graph: tflite.SubGraph, hidden: frozenset[int], inputs, outputs):
        self._tab = graph._tab
        self._graph = graph
        self.source_indices = [i for i in range(graph.OperatorsLength()) if i not in hidden]
        self._io = {"inputs": np.array(inputs, np.int32), "outputs": np.array(outputs, np.int32)}

    def OperatorsLength(self):
        return len(self.source_indices)

    def Operators(self, j):
        return super().Operators(self.source_indices[j])

    def Tensors(self, j):
        return self._graph.Tensors(j)

    def InputsLength(self):
        return len(self._io["inputs"])

    def Inputs(self, j):
        return int(self._io["inputs"][j])

    def InputsAsNumpy(self):
        return self._io["inputs"]

    def OutputsLength(self):
        return len(self._io["outputs"])

    def Outputs(self, j):
        return int(self._io["outputs"][j])

    def OutputsAsNumpy(self):
        return self._io["outputs"]


class _ModelView(tflite.Model):
    """The model with its first subgraph seen through a :class:`_SubGraphView`."""

    def __init__(self, model: tflite.Model, graph: _SubGraphView):
        self._tab = model._tab
        self._model = model
        self._graph = graph

    def Subgraphs(self, j):
        return self._graph if j == 0 else self._model.Subgraphs(j)


def view(model: tflite.Model, hidden: frozenset[int], inputs, outputs) -> tflite.Model:
    """The model with the operators `hidden` (indices) left out and the tensors `inputs`, `outputs` as its I/O."""
    return _ModelView(model, _SubGraphView(model.Subgraphs(0), hidden, inputs, outputs))
