"""A small writer of TFLite flatbuffers (schema v3) on top of the generated `tflite` builder functions.

It knows nothing about operators' meaning: callers add tensors (with optional constant data and quantization) and
operators (builtin code plus an options table given as field values), then `build()` serialises the model with a
`serving_default` signature so that frontends see stable input and output names.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field

import flatbuffers
import numpy as np
import tflite

from ..frontend.tflite_file import TFLITE_DTYPES

_TENSOR_TYPES = {dtype: kind for kind, dtype in TFLITE_DTYPES.items()}


def _schema(table: str):
    """The generated module of one schema table (the package's __init__ shadows modules with their functions)."""
    return importlib.import_module(f"tflite.{table}")


@dataclass(frozen=True)
class Quantization:
    """Affine quantization of a tensor; several scales mean per-axis quantization along `axis`. `scales` None
    writes no scale vector (a damaged file)."""

    scales: tuple[float, ...] | None
    zero_points: tuple[int, ...]
    axis: int = 0


@dataclass
class _Tensor:
    name: str
    shape: tuple[int, ...]
    dtype: np.dtype
    data: np.ndarray | None
    quantization: Quantization | None
    signature: tuple[int, ...] | None = None
    variable: bool = False


@dataclass
class _Operator:
    builtin: int
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    options_table: str | None
    options: dict = field(default_factory=dict)
    version: int = 1
    intermediates: tuple[int, ...] = ()


class ModelBuilder:
    """Collects tensors and operators of a single-subgraph model and serialises it."""

    def __init__(self, description: str = "ethosu_tvm.testing", per_tensor_axis: int | None = None):
        """`per_tensor_axis`, when given, is the QuantizedDimension written for every single-scale tensor: TFLite
        ignores it there, and some converters write 3 whatever the tensor's rank (TFLite Micro's person_detect)."""
        self.description = description
        self.per_tensor_axis = per_tensor_axis
        self._tensors: list[_Tensor] = []
        self._operators: list[_Operator] = []

    def add_tensor(self, name: str, shape, dtype, data=None, quantization: Quantization | None = None,
                   variable: bool = False) -> int:
        """Add a tensor (a constant when `data` is given; a `variable` one is state the runtime keeps between
        invocations, as an LSTM's) and return its index."""
        dtype = np.dtype(dtype)
        if dtype not in _TENSOR_TYPES:
            raise ValueError(f"unsupported tensor dtype {dtype}")
        shape = tuple(int(d) for d in shape)
        if data is not None:
            data = np.ascontiguousarray(np.asarray(data, dtype=dtype).reshape(shape))
        self._tensors.append(_Tensor(name, shape, dtype, data, quantization, variable=variable))
        return len(self._tensors) - 1

    def tensor_shape(self, index: int) -> tuple[int, ...]:
        return self._tensors[index].shape

    def rename_tensor(self, index: int, name: str) -> None:
        self._tensors[index].name = name

    def set_shape_signature(self, index: int, signature) -> None:
        """Write a shape signature (-1 for an unknown dimension, as Keras writes a dynamic batch)."""
        self._tensors[index].signature = tuple(int(d) for d in signature)

    def add_operator(self, builtin: int, inputs, outputs, options_table: str | None = None,
                     options: dict | None = None, version: int = 1, intermediates=()) -> None:
        """Add an operator; `options` maps schema field names (e.g. "StrideW") to ints, floats, bools or int lists;
        `intermediates` are the tensors a kernel takes its internal quantization from (an integer LSTM's).

        An input index of -1 marks an omitted optional input, as in the schema.
        """
        self._operators.append(_Operator(builtin, tuple(inputs), tuple(outputs), options_table,
                                         dict(options or {}), version, tuple(intermediates)))

    def build(self, inputs: list[int], outputs: list[int], input_names: list[str],
              output_names: list[str]) -> bytes:
        """Serialise the model; `input_names`/`output_names` become the `serving_default` signature keys."""
        fbb = flatbuffers.Builder(1024)
        buffers = [self._buffer(fbb, None)]  # buffer 0 is the schema's empty sentinel
        tensor_offsets = []
        for tensor in self._tensors:
            buffer_index = 0
            if tensor.data is not None:
                buffers.append(self._buffer(fbb, tensor.data))
                buffer_index = len(buffers) - 1
            tensor_offsets.append(self._tensor(fbb, tensor, buffer_index))

        codes: list[tuple[int, int]] = []
        operator_offsets = []
        for op in self._operators:
            key = (op.builtin, op.version)
            if key not in codes:
                codes.append(key)
            operator_offsets.append(self._operator(fbb, op, codes.index(key)))

        subgraph = _schema("SubGraph")
        t_vec = self._table_vector(fbb, subgraph.StartTensorsVector, tensor_offsets)
        i_vec = fbb.CreateNumpyVector(np.array(inputs, dtype=np.int32))
        o_vec = fbb.CreateNumpyVector(np.array(outputs, dtype=np.int32))
        op_vec = self._table_vector(fbb, subgraph.StartOperatorsVector, operator_offsets)
        name = fbb.CreateString("main")
        subgraph.Start(fbb)
        subgraph.AddTensors(fbb, t_vec)
        subgraph.AddInputs(fbb, i_vec)
        subgraph.AddOutputs(fbb, o_vec)
        subgraph.AddOperators(fbb, op_vec)
        subgraph.AddName(fbb, name)
        subgraph_offset = subgraph.End(fbb)

        code_offsets = [self._operator_code(fbb, builtin, version) for builtin, version in codes]
        signature = self._signature(fbb, inputs, outputs, input_names, output_names)

        model = _schema("Model")
        codes_vec = self._table_vector(fbb, model.StartOperatorCodesVector, code_offsets)
        graphs_vec = self._table_vector(fbb, model.StartSubgraphsVector, [subgraph_offset])
        buffers_vec = self._table_vector(fbb, model.StartBuffersVector, buffers)
        sig_vec = self._table_vector(fbb, model.StartSignatureDefsVector, [signature])
        description = fbb.CreateString(self.description)
        model.Start(fbb)
        model.AddVersion(fbb, 3)
        model.AddOperatorCodes(fbb, codes_vec)
        model.AddSubgraphs(fbb, graphs_vec)
        model.AddDescription(fbb, description)
        model.AddBuffers(fbb, buffers_vec)
        model.AddSignatureDefs(fbb, sig_vec)
        fbb.Finish(model.End(fbb), file_identifier=b"TFL3")
        return bytes(fbb.Output())

    @staticmethod
    def _table_vector(fbb, start, offsets) -> int:
        start(fbb, len(offsets))
        for offset in reversed(offsets):
            fbb.PrependUOffsetTRelative(offset)
        return fbb.EndVector()

    @staticmethod
    def _buffer(fbb, data: np.ndarray | None) -> int:
        buffer = _schema("Buffer")
        if data is None:
            buffer.Start(fbb)
            return buffer.End(fbb)
        fbb.StartVector(1, data.nbytes, 16)  # 16-byte alignment keeps constant data aligned for every reader
        fbb.head -= data.nbytes
        fbb.Bytes[fbb.head:fbb.head + data.nbytes] = data.tobytes()
        data_vec = fbb.EndVector()
        buffer.Start(fbb)
        buffer.AddData(fbb, data_vec)
        return buffer.End(fbb)

    def _quantization(self, fbb, quant: Quantization) -> int:
        table = _schema("QuantizationParameters")
        scales = None if quant.scales is None else fbb.CreateNumpyVector(np.array(quant.scales, dtype=np.float32))
        zero_points = fbb.CreateNumpyVector(np.array(quant.zero_points, dtype=np.int64))
        table.Start(fbb)
        if scales is not None:
            table.AddScale(fbb, scales)
        table.AddZeroPoint(fbb, zero_points)
        per_tensor = quant.scales is not None and len(quant.scales) == 1 and self.per_tensor_axis is not None
        table.AddQuantizedDimension(fbb, self.per_tensor_axis if per_tensor else quant.axis)
        return table.End(fbb)

    def _tensor(self, fbb, tensor: _Tensor, buffer_index: int) -> int:
        table = _schema("Tensor")
        quant = self._quantization(fbb, tensor.quantization) if tensor.quantization else None
        shape = None if tensor.shape is None else fbb.CreateNumpyVector(np.array(tensor.shape, dtype=np.int32))
        signature = None if tensor.signature is None else fbb.CreateNumpyVector(np.array(tensor.signature, np.int32))
        name = fbb.CreateString(tensor.name)
        table.Start(fbb)
        if shape is not None:  # None: no shape vector at all (a damaged file)
            table.AddShape(fbb, shape)
        if signature is not None:
            table.AddShapeSignature(fbb, signature)
        table.AddType(fbb, _TENSOR_TYPES[tensor.dtype])
        table.AddBuffer(fbb, buffer_index)
        table.AddName(fbb, name)
        if quant is not None:
            table.AddQuantization(fbb, quant)
        if tensor.variable:
            table.AddIsVariable(fbb, True)
        return table.End(fbb)

    @staticmethod
    def _options(fbb, table_name: str, values: dict) -> int:
        table = _schema(table_name)
        vectors = {key: fbb.CreateNumpyVector(np.array(value, dtype=np.int32))
                   for key, value in values.items() if isinstance(value, (list, tuple))}
        table.Start(fbb)
        for key, value in values.items():
            adder = getattr(table, f"Add{key}", None)
            if adder is None:
                raise ValueError(f"{table_name} has no field {key}")
            adder(fbb, vectors.get(key, value))
        return table.End(fbb)

    def _operator(self, fbb, op: _Operator, code_index: int) -> int:
        table = _schema("Operator")
        options = self._options(fbb, op.options_table, op.options) if op.options_table else None
        inputs = fbb.CreateNumpyVector(np.array(op.inputs, dtype=np.int32))
        outputs = fbb.CreateNumpyVector(np.array(op.outputs, dtype=np.int32))
        intermediates = fbb.CreateNumpyVector(np.array(op.intermediates, dtype=np.int32)) if op.intermediates \
            else None
        table.Start(fbb)
        table.AddOpcodeIndex(fbb, code_index)
        table.AddInputs(fbb, inputs)
        table.AddOutputs(fbb, outputs)
        if intermediates is not None:
            table.AddIntermediates(fbb, intermediates)
        if options is not None:
            table.AddBuiltinOptionsType(fbb, getattr(tflite.BuiltinOptions, op.options_table))
            table.AddBuiltinOptions(fbb, options)
        return table.End(fbb)

    @staticmethod
    def _operator_code(fbb, builtin: int, version: int) -> int:
        table = _schema("OperatorCode")
        table.Start(fbb)
        # Codes above 127 only fit the int32 field; the deprecated int8 field then holds the placeholder 127.
        table.AddDeprecatedBuiltinCode(fbb, min(builtin, 127))
        table.AddBuiltinCode(fbb, builtin)
        table.AddVersion(fbb, version)
        return table.End(fbb)

    def _signature(self, fbb, inputs, outputs, input_names, output_names) -> int:
        def tensor_maps(indices, names):
            table = _schema("TensorMap")
            offsets = []
            for index, name in zip(indices, names):
                name_offset = fbb.CreateString(name)
                table.Start(fbb)
                table.AddName(fbb, name_offset)
                table.AddTensorIndex(fbb, index)
                offsets.append(table.End(fbb))
            return offsets

        signature = _schema("SignatureDef")
        in_vec = self._table_vector(fbb, signature.StartInputsVector, tensor_maps(inputs, input_names))
        out_vec = self._table_vector(fbb, signature.StartOutputsVector, tensor_maps(outputs, output_names))
        key = fbb.CreateString("serving_default")
        signature.Start(fbb)
        signature.AddInputs(fbb, in_vec)
        signature.AddOutputs(fbb, out_vec)
        signature.AddSignatureKey(fbb, key)
        signature.AddSubgraphIndex(fbb, 0)
        return signature.End(fbb)
