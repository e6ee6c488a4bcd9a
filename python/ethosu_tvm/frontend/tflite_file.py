"""Reading a .tflite flatbuffer safely: validation and tensor descriptions without any interpreter."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import tflite

from .flatbuffer_check import FlatbufferError, check_flatbuffer
from .model_check import ModelConsistencyError, check_model
from .tflm_view import tflm_view

# TensorType enum values of the TFLite schema that the project handles, with their NumPy dtypes.
TFLITE_DTYPES = {
    tflite.TensorType.FLOAT32: np.dtype(np.float32),
    tflite.TensorType.INT32: np.dtype(np.int32),
    tflite.TensorType.UINT8: np.dtype(np.uint8),
    tflite.TensorType.INT64: np.dtype(np.int64),
    tflite.TensorType.INT16: np.dtype(np.int16),
    tflite.TensorType.INT8: np.dtype(np.int8),
    tflite.TensorType.BOOL: np.dtype(np.bool_),
}


class ModelFormatError(ValueError):
    """The bytes are not a usable TFLite model (wrong identifier, truncated, inconsistent)."""


@dataclass(frozen=True)
class TensorInfo:
    """Name, shape, dtype and per-tensor quantization of one model input or output."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype
    scale: float | None
    zero_point: int | None


def read_model(buf: bytes) -> tflite.Model:
    """Parse a flatbuffer after verifying its structure (every offset inside the file) and its consistency
    (indices, buffer sizes, quantization); raise ModelFormatError saying what is wrong and where. The model's tensors
    are named and quantized as TFLite Micro reads them (`tflm_view`)."""
    buf = bytes(buf)
    # The identifier is optional in a flatbuffer, and TFLite Micro does not read it: without it, only bytes that hold
    # no model are refused, and for not being a TFLite flatbuffer.
    identified = len(buf) >= 8 and buf[4:8] == b"TFL3"
    try:
        check_flatbuffer(buf)
    except FlatbufferError as err:
        if not identified:
            raise ModelFormatError("not a TFLite flatbuffer (missing the 'TFL3' file identifier)") from None
        raise ModelFormatError(f"the TFLite flatbuffer is truncated or corrupt: {err}") from None
    model = tflite.Model.GetRootAs(buf, 0)
    if model.SubgraphsLength() < 1:
        raise ModelFormatError("the TFLite model has no subgraph")
    model = tflm_view(model)
    try:
        check_model(model)
    except ModelConsistencyError as err:
        raise ModelFormatError(str(err)) from None
    return model


def builtin_options(op: tflite.Operator, options_class):
    """The operator's builtin options as `options_class`."""
    options = options_class()
    table = op.BuiltinOptions()
    options.Init(table.Bytes, table.Pos)
    return options


def constant_value(model: tflite.Model, index: int) -> np.ndarray | None:
    """The value of constant tensor `index` of the first subgraph; None for a tensor without data."""
    tensor = model.Subgraphs(0).Tensors(index)
    data = model.Buffers(tensor.Buffer()).DataAsNumpy()
    if not isinstance(data, np.ndarray) or tensor.Type() not in TFLITE_DTYPES:
        return None
    shape = tuple(int(d) for d in tensor.ShapeAsNumpy()) if tensor.ShapeLength() else ()
    return np.frombuffer(data.tobytes(), TFLITE_DTYPES[tensor.Type()]).reshape(shape)


def _tensor_info(graph, index: int) -> TensorInfo:
    tensor = graph.Tensors(index)
    shape = tuple(int(d) for d in tensor.ShapeAsNumpy()) if tensor.ShapeLength() else ()
    kind = tensor.Type()
    if kind not in TFLITE_DTYPES:
        raise ModelFormatError(f"tensor {tensor.Name().decode()!r} has unsupported TFLite type {kind}")
    scale = zero_point = None
    quant = tensor.Quantization()
    if quant is not None and quant.ScaleLength() == 1:
        scale = float(quant.Scale(0))
        zero_point = int(quant.ZeroPoint(0)) if quant.ZeroPointLength() else 0
    return TensorInfo(tensor.Name().decode(), shape, TFLITE_DTYPES[kind], scale, zero_point)


def input_infos(buf: bytes) -> list[TensorInfo]:
    """The model's inputs in subgraph order (the order interpreters and our runners use)."""
    graph = read_model(buf).Subgraphs(0)
    return [_tensor_info(graph, int(i)) for i in graph.InputsAsNumpy()]


def output_infos(buf: bytes) -> list[TensorInfo]:
    """The model's outputs in subgraph order."""
    graph = read_model(buf).Subgraphs(0)
    return [_tensor_info(graph, int(i)) for i in graph.OutputsAsNumpy()]
