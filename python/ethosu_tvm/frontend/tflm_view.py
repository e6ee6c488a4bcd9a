"""The model's tensors as TFLite Micro reads them, for every reader of the file (our checks, TVM's frontend, the
runners): what TFLite Micro accepts and reads its own way is given the meaning it has there, not refused.

- Names: TFLite Micro ignores them, the schema makes them optional, and the compiler refers to tensors by name
  (TVM's expression table, the interface, layer dumps). A tensor without one is called ``tensor_<index>``; a name an
  earlier tensor already has (TVM's table would take the two for one) or that is not UTF-8 (decoded with
  replacement characters) gets ``_<index>`` appended; ``_`` is then appended until no tensor has the name.
- Quantization: TFLite Micro takes a tensor as quantized only when it has both scales and zero points; where the
  counts differ it uses the first zero point for every scale. It never reads a bias's scales (its kernels scale the
  accumulator by the input's and the filter's), so a 1-D int32 or int64 tensor (a bias) with one scale per element
  is read along its only dimension whatever quantized_dimension says (TFLite Micro's person detection writes 3).
- Shapes: a tensor without a shape vector is a scalar, as TFLite Micro takes it (the generated reader gives 0).
"""
from __future__ import annotations

import numpy as np
import tflite


def _tensor_names(graph: tflite.SubGraph) -> list[bytes]:
    """Each tensor's name in `graph` (by index), unique and never empty; the file's names come first."""
    raw = [graph.Tensors(i).Name() or b"" for i in range(graph.TensorsLength())]
    reserved = set(raw)
    names: list[bytes] = []
    used: set[bytes] = set()
    for index, name in enumerate(raw):
        text = name.decode("utf-8", errors="replace").encode()
        candidate = name
        if not name or text != name or name in used:
            candidate = text + f"_{index}".encode() if name else f"tensor_{index}".encode()
            while candidate in reserved or candidate in used:
                candidate += b"_"
        used.add(candidate)
        names.append(candidate)
    return names


class _Quantization(tflite.QuantizationParameters):
    """A tensor's scales with one zero point each, along `axis`."""

    def __init__(self, quant: tflite.QuantizationParameters, zero_points: np.ndarray, axis: int):
        self._tab = quant._tab
        self._zero_points = zero_points
        self._axis = axis

    def ZeroPointAsNumpy(self):
        return self._zero_points

    def ZeroPointLength(self):
        return len(self._zero_points)

    def ZeroPoint(self, j):
        return int(self._zero_points[j])

    def QuantizedDimension(self):
        return self._axis


def _quantization(tensor: tflite.Tensor):
    """The tensor's quantization as TFLite Micro takes it: None, the file's, or a :class:`_Quantization`."""
    quant = tensor.Quantization()
    if quant is None or not quant.ScaleLength() or not quant.ZeroPointLength():
        return None
    count, zero_points, axis = quant.ScaleLength(), quant.ZeroPointAsNumpy(), quant.QuantizedDimension()
    shape = tensor.ShapeAsNumpy() if tensor.ShapeLength() else ()
    one_dimension = (count > 1 and len(shape) == 1 and shape[0] == count and axis != 0
                     and tensor.Type() in (tflite.TensorType.INT32, tflite.TensorType.INT64))
    if len(zero_points) == count and not one_dimension:
        return quant
    return _Quantization(quant, np.resize(zero_points[:1], count) if len(zero_points) != count else zero_points,
                         0 if one_dimension else axis)


class _Tensor(tflite.Tensor):
    def __init__(self, tensor: tflite.Tensor, name: bytes):
        self._tab = tensor._tab
        self._name = name
        self._quant = _quantization(tensor)

    def Name(self):
        return self._name

    def ShapeAsNumpy(self):
        return super().ShapeAsNumpy() if self.ShapeLength() else np.zeros(0, np.int32)

    def Quantization(self):
        return self._quant


class _SubGraph(tflite.SubGraph):
    def __init__(self, graph: tflite.SubGraph):
        self._tab = graph._tab
        self._tensors = [_Tensor(graph.Tensors(j), name) for j, name in enumerate(_tensor_names(graph))]

    def Tensors(self, j):
        return self._tensors[j]


class _Model(tflite.Model):
    def __init__(self, model: tflite.Model):
        self._tab = model._tab
        self._graphs = [_SubGraph(model.Subgraphs(j)) for j in range(model.SubgraphsLength())]

    def Subgraphs(self, j):
        return self._graphs[j]


def tflm_view(model: tflite.Model) -> tflite.Model:
    """`model` (structurally verified) with its tensors named and quantized as described above."""
    return _Model(model)
