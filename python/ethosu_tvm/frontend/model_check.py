"""Consistency of a structurally sound TFLite model: what a damaged or hand-edited file can get wrong even when every
offset is in bounds. Each rule names the tensor or operator it found wrong, so that nothing downstream (TVM's
frontend, our importer, the kernels) meets an index out of range, a buffer of the wrong size or a zero scale."""
from __future__ import annotations

import math

import numpy as np
import tflite

# A tensor with more elements than this is refused before anything allocates it (a real model for a
# microcontroller is far below; a corrupt shape is usually far above).
MAX_ELEMENTS = 1 << 28

_ITEM_SIZES = {tflite.TensorType.FLOAT32: 4, tflite.TensorType.INT32: 4, tflite.TensorType.UINT8: 1,
               tflite.TensorType.INT64: 8, tflite.TensorType.INT16: 2, tflite.TensorType.INT8: 1,
               tflite.TensorType.FLOAT16: 2, tflite.TensorType.BOOL: 1, tflite.TensorType.UINT32: 4,
               tflite.TensorType.UINT16: 2, tflite.TensorType.FLOAT64: 8}


# Window options, by builtin options type: the option table and its fields, each with its largest value. All must be
# positive (TFLite Micro divides by strides and filter sizes). Strides and dilations may be as large as the field
# holds; TFLite Micro keeps the depth multiplier in an int16 (LiteRT refuses more); our kernels loop over a pool's
# whole window where TFLite Micro clips it to the input, so a filter beyond MAX_WINDOW is taken as corrupt.
MAX_WINDOW = 1 << 16
_STRIDES = {"StrideH": None, "StrideW": None}
_DILATIONS = {"DilationHFactor": None, "DilationWFactor": None}
_WINDOW_OPTIONS = {
    tflite.BuiltinOptions.Conv2DOptions: (tflite.Conv2DOptions, _STRIDES | _DILATIONS),
    tflite.BuiltinOptions.DepthwiseConv2DOptions: (tflite.DepthwiseConv2DOptions,
                                                   _STRIDES | _DILATIONS | {"DepthMultiplier": (1 << 15) - 1}),
    tflite.BuiltinOptions.Pool2DOptions: (tflite.Pool2DOptions,
                                          _STRIDES | {"FilterHeight": MAX_WINDOW, "FilterWidth": MAX_WINDOW}),
    tflite.BuiltinOptions.TransposeConvOptions: (tflite.TransposeConvOptions, _STRIDES),
}
# Builtin operator codes and tensor type codes → their schema names.
OPERATOR_NAMES = {v: k for k, v in vars(tflite.BuiltinOperator).items() if not k.startswith("_")}
TENSOR_TYPE_NAMES = {v: k for k, v in vars(tflite.TensorType).items() if not k.startswith("_")}


_INTEGER_DTYPES = {tflite.TensorType.INT8: np.int8, tflite.TensorType.UINT8: np.uint8,
                   tflite.TensorType.INT16: np.int16, tflite.TensorType.INT32: np.int32}


class ModelConsistencyError(ValueError):
    """The model's tables contradict each other; the message names the tensor or operator."""


def _tensor_name(graph, index: int) -> str:
    return f"tensor {index} ({graph.Tensors(index).Name().decode()!r})"


def _check_tensor(model, graph, index: int) -> None:
    tensor = graph.Tensors(index)
    what = _tensor_name(graph, index)
    if tensor.Type() not in TENSOR_TYPE_NAMES:
        raise ModelConsistencyError(f"{what} has type {tensor.Type()}, which is no TFLite tensor type")
    shape = [int(d) for d in tensor.ShapeAsNumpy()] if tensor.ShapeLength() else []
    if any(d < -1 for d in shape):
        raise ModelConsistencyError(f"{what} has a negative dimension in its shape {shape}")
    elements = math.prod(max(d, 1) for d in shape)
    if elements > MAX_ELEMENTS:
        raise ModelConsistencyError(f"{what} declares {elements:,} elements (shape {shape}); the limit is "
                                    f"{MAX_ELEMENTS:,}")
    if not 0 <= tensor.Buffer() < model.BuffersLength():
        raise ModelConsistencyError(f"{what} names buffer {tensor.Buffer()}, but the model has "
                                    f"{model.BuffersLength()}")
    data = model.Buffers(tensor.Buffer()).DataLength()
    item = _ITEM_SIZES.get(tensor.Type())
    if data and item and -1 not in shape and data != elements * item:
        raise ModelConsistencyError(f"{what}: its buffer holds {data} bytes, but shape {shape} of type "
                                    f"{tensor.Type()} needs {elements * item}")
    quant = tensor.Quantization()  # as TFLite Micro takes it (tflm_view): scales with one zero point each, or None
    if quant is None:
        return
    scales = quant.ScaleAsNumpy()
    if not np.all(np.isfinite(scales)) or np.any(scales <= 0):
        raise ModelConsistencyError(f"{what} has quantization scale(s) {scales.tolist()[:4]}: they must be "
                                    "positive and finite")
    dtype = _INTEGER_DTYPES.get(tensor.Type())
    zero_points = quant.ZeroPointAsNumpy()
    if dtype is not None and (zero_points.min() < np.iinfo(dtype).min or zero_points.max() > np.iinfo(dtype).max):
        raise ModelConsistencyError(f"{what} has zero point(s) {zero_points.tolist()[:4]} outside the range of its "
                                    f"{np.dtype(dtype).name} values")
    axis = quant.QuantizedDimension()
    if len(scales) > 1 and not (0 <= axis < len(shape) and shape[axis] == len(scales)):
        raise ModelConsistencyError(f"{what} has {len(scales)} scales along dimension {axis} of shape {shape}")


def _check_indices(indices, count: int, what: str, optional: bool) -> None:
    low = -1 if optional else 0
    for index in indices:
        if not low <= int(index) < count:
            raise ModelConsistencyError(f"{what} names tensor {int(index)}, but the subgraph has {count} tensors")


def _check_operators(model, graph, subgraph: int) -> None:
    """Indices in range, each tensor written by one operator at most, and no operator reading a tensor that a later
    operator writes: the operator list is an execution order, so the graph is acyclic. (A tensor nobody writes,
    such as a Vela command stream's scratch, may be read.)"""
    count = graph.TensorsLength()
    writer: dict[int, int] = {}
    for position in range(graph.OperatorsLength()):
        op = graph.Operators(position)
        for index in op.OutputsAsNumpy() if op.OutputsLength() else []:
            if int(index) in writer:
                raise ModelConsistencyError(f"operators #{writer[int(index)]} and #{position} both write "
                                            f"tensor {int(index)}")
            writer[int(index)] = position
    for position in range(graph.OperatorsLength()):
        op = graph.Operators(position)
        what = f"operator #{position}" + (f" of subgraph {subgraph}" if subgraph else "")
        if not 0 <= op.OpcodeIndex() < model.OperatorCodesLength():
            raise ModelConsistencyError(f"{what} has opcode index {op.OpcodeIndex()}, but the model has "
                                        f"{model.OperatorCodesLength()} operator codes")
        if not op.InputsLength() or not op.OutputsLength():
            raise ModelConsistencyError(f"{what} has no {'inputs' if not op.InputsLength() else 'outputs'}")
        inputs, outputs = op.InputsAsNumpy(), op.OutputsAsNumpy()
        _check_indices(inputs, count, f"{what} input", optional=True)
        _check_indices(outputs, count, f"{what} output", optional=False)
        _check_options(op, what)
        later = [int(i) for i in inputs if writer.get(int(i), -1) >= position]
        if later:
            raise ModelConsistencyError(f"{what} reads {_tensor_name(graph, later[0])}, which operator "
                                        f"#{writer[later[0]]} writes later (a cycle)")


def _check_options(op, what: str) -> None:
    """Strides, dilations, filter sizes and depth multipliers positive and within their bounds."""
    if op.BuiltinOptionsType() not in _WINDOW_OPTIONS or op.BuiltinOptions() is None:
        return
    table_class, fields = _WINDOW_OPTIONS[op.BuiltinOptionsType()]
    options = table_class()
    options.Init(op.BuiltinOptions().Bytes, op.BuiltinOptions().Pos)
    for name, largest in fields.items():
        value = getattr(options, name)()
        if value < 1 or largest is not None and value > largest:
            bounds = f"in [1, {largest}]" if largest is not None else "positive"
            raise ModelConsistencyError(f"{what} has {name} {value}; it must be {bounds}")


# Weighted operators: (activation input, bias input) positions.
_BIASED = {tflite.BuiltinOperator.CONV_2D: (0, 2), tflite.BuiltinOperator.DEPTHWISE_CONV_2D: (0, 2),
           tflite.BuiltinOperator.FULLY_CONNECTED: (0, 2), tflite.BuiltinOperator.TRANSPOSE_CONV: (2, 3)}
# The bias types their quantized kernels take, by activation type (LiteRT refuses others when it prepares the
# operator: "bias->type != kTfLiteInt32").
_BIAS_TYPES = {tflite.TensorType.INT8: ("INT32",), tflite.TensorType.UINT8: ("INT32",),
               tflite.TensorType.INT16: ("INT32", "INT64")}


def _check_biases(model, graph, subgraph: int) -> None:
    """A weighted operator with quantized activations has a bias of a type its kernel takes (or none)."""
    for position in range(graph.OperatorsLength()):
        op = graph.Operators(position)
        builtin = builtin_code(model.OperatorCodes(op.OpcodeIndex()))
        if builtin not in _BIASED:
            continue
        inputs = op.InputsAsNumpy()
        activation, bias = (int(inputs[i]) if i < len(inputs) else -1 for i in _BIASED[builtin])
        if activation < 0 or bias < 0 or graph.Tensors(activation).Type() not in _BIAS_TYPES:
            continue
        kind, allowed = TENSOR_TYPE_NAMES[graph.Tensors(bias).Type()], _BIAS_TYPES[graph.Tensors(activation).Type()]
        if kind not in allowed:
            what = f"operator #{position}" + (f" of subgraph {subgraph}" if subgraph else "")
            raise ModelConsistencyError(
                f"{what} ({OPERATOR_NAMES[builtin]}) has bias {_tensor_name(graph, bias)} of type {kind}; with "
                f"{TENSOR_TYPE_NAMES[graph.Tensors(activation).Type()]} activations it takes {' or '.join(allowed)}")


def check_inputs_defined(model: tflite.Model) -> None:
    """Every tensor an operator of the main subgraph reads, and every model output, is a model input, a constant, a
    variable or an earlier operator's output (check_model allows tensors nobody writes, as Vela's scratch; a
    compiled model may not)."""
    graph = model.Subgraphs(0)
    defined = {int(i) for i in graph.InputsAsNumpy()} if graph.InputsLength() else set()
    for index in range(graph.TensorsLength()):
        tensor = graph.Tensors(index)
        buffer = model.Buffers(tensor.Buffer())
        if tensor.IsVariable() or buffer.DataLength() or buffer.Offset() > 1:
            defined.add(index)
    for position in range(graph.OperatorsLength()):
        op = graph.Operators(position)
        for index in op.InputsAsNumpy() if op.InputsLength() else []:
            if int(index) >= 0 and int(index) not in defined:
                raise ModelConsistencyError(f"operator #{position} reads {_tensor_name(graph, int(index))}, which is "
                                            "neither a model input, a constant nor written by an earlier operator")
        if op.OutputsLength():
            defined.update(int(i) for i in op.OutputsAsNumpy())
    for index in graph.OutputsAsNumpy() if graph.OutputsLength() else []:
        if int(index) not in defined:
            raise ModelConsistencyError(f"model output {_tensor_name(graph, int(index))} is written by no operator")


def builtin_code(code: tflite.OperatorCode) -> int:
    """An operator code's builtin operator (codes above 127 are only in the newer field)."""
    return max(code.BuiltinCode(), code.DeprecatedBuiltinCode())


def operator_name(model: tflite.Model, op: tflite.Operator) -> str:
    """The operator's builtin name (``BUILTIN_<code>`` for a code this schema does not know)."""
    builtin = builtin_code(model.OperatorCodes(op.OpcodeIndex()))
    return OPERATOR_NAMES.get(builtin, f"BUILTIN_{builtin}")


def check_model(model: tflite.Model) -> None:
    """Raise ModelConsistencyError at the first inconsistency of `model` (structurally verified, seen through
    `tflm_view`)."""
    for index in range(model.OperatorCodesLength()):
        builtin = builtin_code(model.OperatorCodes(index))
        if builtin not in OPERATOR_NAMES:
            raise ModelConsistencyError(f"operator code {index} has builtin code {builtin}, which is no TFLite "
                                        "operator")
    main = model.Subgraphs(0)
    for kind, length in (("inputs", main.InputsLength()), ("outputs", main.OutputsLength())):
        if not length:
            raise ModelConsistencyError(f"the model has no {kind} (the compiled interface passes them)")
    for subgraph in range(model.SubgraphsLength()):
        graph = model.Subgraphs(subgraph)
        count = graph.TensorsLength()
        for index in range(count):
            _check_tensor(model, graph, index)
        where = f" of subgraph {subgraph}" if subgraph else ""
        _check_indices(graph.InputsAsNumpy() if graph.InputsLength() else [], count, f"input list{where}", False)
        _check_indices(graph.OutputsAsNumpy() if graph.OutputsLength() else [], count, f"output list{where}", False)
        _check_operators(model, graph, subgraph)
        _check_biases(model, graph, subgraph)
