"""Read the one operator of a factory .tflite model into the host op description the kernel is built from.

This is the test's stand-in for the AOT stage, which reads the same facts from the partitioned Relax module.
"""
from __future__ import annotations

import numpy as np
import tflite

from ethosu_tvm.frontend.tflite_file import TFLITE_DTYPES, read_model
from ethosu_tvm.host import spec
from ethosu_tvm.quantization import round_half_away

_OP = tflite.BuiltinOperator
# NONE, RELU, RELU_N1_TO_1, RELU6 by their fused-activation codes; RELU_0_TO_1 (no such code) by -1
_ACTIVATIONS = {0: None, 1: (0.0, None), 2: (-1.0, 1.0), 3: (0.0, 6.0), -1: (0.0, 1.0)}
_BINARY = {_OP.ADD: "add", _OP.SUB: "sub", _OP.MUL: "mul", _OP.MINIMUM: "minimum", _OP.MAXIMUM: "maximum",
           _OP.DIV: "div"}
_TABLES = {_OP.LOGISTIC: spec.Logistic, _OP.TANH: spec.Tanh, _OP.HARD_SWISH: spec.HardSwish, _OP.RSQRT: spec.Rsqrt,
           _OP.ABS: spec.Abs, _OP.SQRT: spec.Sqrt, _OP.NEG: spec.Neg}
_FLOAT_FUNCTIONS = {_OP.EXP: "exp", _OP.LOG: "log"}
_REDUCTIONS = {_OP.MEAN: "mean", _OP.SUM: "sum", _OP.REDUCE_MAX: "reduce_max", _OP.REDUCE_MIN: "reduce_min"}
_RESIZES = {_OP.RESIZE_BILINEAR: ("resize_bilinear", tflite.ResizeBilinearOptions),
            _OP.RESIZE_NEAREST_NEIGHBOR: ("resize_nearest_neighbor", tflite.ResizeNearestNeighborOptions)}
_COMPARISONS = {_OP.EQUAL: "equal", _OP.NOT_EQUAL: "not_equal", _OP.GREATER: "greater",
                _OP.GREATER_EQUAL: "greater_equal", _OP.LESS: "less", _OP.LESS_EQUAL: "less_equal"}
_RELUS = {_OP.RELU: 1, _OP.RELU_N1_TO_1: 2, _OP.RELU6: 3, _OP.RELU_0_TO_1: -1}  # the _ACTIVATIONS key of its range


class _Operator:
    """The first operator of the first subgraph, with typed access to its tensors and options."""

    def __init__(self, model: bytes):
        self.model = read_model(model)
        self.graph = self.model.Subgraphs(0)
        self.op = self.graph.Operators(0)
        code = self.model.OperatorCodes(self.op.OpcodeIndex())
        self.builtin = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
        self.inputs = [int(i) for i in self.op.InputsAsNumpy()]
        self.output_index = int(self.op.OutputsAsNumpy()[0])

    def tensor(self, index: int) -> spec.QuantTensor:
        tensor = self.graph.Tensors(index)
        quant = tensor.Quantization()
        return spec.QuantTensor(tuple(int(d) for d in tensor.ShapeAsNumpy()), str(TFLITE_DTYPES[tensor.Type()]),
                                float(quant.Scale(0)), int(quant.ZeroPoint(0)))

    @property
    def input(self) -> spec.QuantTensor:
        return self.tensor(self.inputs[0])

    @property
    def output(self) -> spec.QuantTensor:
        return self.tensor(self.output_index)

    def constant(self, position: int) -> np.ndarray | None:
        if position >= len(self.inputs) or self.inputs[position] < 0:
            return None
        tensor = self.graph.Tensors(self.inputs[position])
        raw = self.model.Buffers(tensor.Buffer()).DataAsNumpy()
        return raw.view(TFLITE_DTYPES[tensor.Type()]).reshape(tuple(tensor.ShapeAsNumpy()))

    def scales(self, position: int) -> tuple[float, ...]:
        quant = self.graph.Tensors(self.inputs[position]).Quantization()
        return tuple(float(s) for s in quant.ScaleAsNumpy())

    def options(self, table_class):
        options = table_class()
        table = self.op.BuiltinOptions()
        options.Init(table.Bytes, table.Pos)
        return options

    def clamp(self, activation: int) -> tuple[int, int] | None:
        """TFLite's CalculateActivationRangeQuantized: the fused activation's bounds in output integers."""
        bounds = _ACTIVATIONS[activation]
        if bounds is None:
            return None
        out = self.output
        low, high = out.limits

        def quantize(value):
            return out.zero_point + round_half_away(float(np.float32(value) / np.float32(out.scale)))

        return (max(low, quantize(bounds[0])), high if bounds[1] is None else min(high, quantize(bounds[1])))


def _same_padding(size: int, kernel: int, stride: int, dilation: int) -> tuple[int, int]:
    """TFLite's SAME padding: the total split with the odd pixel after."""
    out = -(-size // stride)
    total = max((out - 1) * stride + (kernel - 1) * dilation + 1 - size, 0)
    return total // 2, total - total // 2


def _padding(op: _Operator, options, kernel: tuple[int, int], dilation: tuple[int, int]) -> tuple[int, ...]:
    if options.Padding() == tflite.Padding.VALID:
        return (0, 0, 0, 0)
    _, height, width, _ = op.input.shape
    top, bottom = _same_padding(height, kernel[0], options.StrideH(), dilation[0])
    left, right = _same_padding(width, kernel[1], options.StrideW(), dilation[1])
    return (top, left, bottom, right)


def _conv(op: _Operator, depthwise: bool) -> spec.Conv2D:
    options = op.options(tflite.DepthwiseConv2DOptions if depthwise else tflite.Conv2DOptions)
    weights = op.constant(1)
    dilation = (options.DilationHFactor(), options.DilationWFactor())
    return spec.Conv2D(op.input, op.output, weights, op.scales(1), op.constant(2),
                       stride=(options.StrideH(), options.StrideW()), dilation=dilation,
                       padding=_padding(op, options, weights.shape[1:3], dilation),
                       clamp=op.clamp(options.FusedActivationFunction()), depthwise=depthwise)


def _pool(op: _Operator, kind: str) -> spec.Pool2D:
    options = op.options(tflite.Pool2DOptions)
    pool = (options.FilterHeight(), options.FilterWidth())
    return spec.Pool2D(kind, op.input, op.output, pool, (options.StrideH(), options.StrideW()),
                       _padding(op, options, pool, (1, 1)), op.clamp(options.FusedActivationFunction()))


def _constants(op: _Operator, roles) -> dict:
    """`<role>_values` of the operands (in input order) that are model constants."""
    return {f"{role}_values": op.constant(k) for k, role in enumerate(roles)
            if op.model.Buffers(op.graph.Tensors(op.inputs[k]).Buffer()).DataLength()}


def _binary(op: _Operator) -> spec.Binary:
    kind = _BINARY[op.builtin]
    table = {"add": tflite.AddOptions, "sub": tflite.SubOptions, "mul": tflite.MulOptions,
             "div": tflite.DivOptions}.get(kind)
    clamp = op.clamp(op.options(table).FusedActivationFunction()) if table else None
    return spec.Binary(kind, op.input, op.tensor(op.inputs[1]), op.output, clamp, **_constants(op, ("lhs", "rhs")))


def host_op(model: bytes) -> spec.HostOp:
    """The host op description of a single-operator model."""
    op = _Operator(model)
    code = op.builtin
    if code == _OP.L2_NORMALIZATION:
        return spec.L2Normalization(op.input, op.output)
    if code == _OP.LOG_SOFTMAX:
        return spec.LogSoftmax(op.input, op.output)
    if code == _OP.SOFTMAX:
        return spec.Softmax(op.input, op.output, float(op.options(tflite.SoftmaxOptions).Beta()))
    if code in _TABLES:
        return _TABLES[code](op.input, op.output)
    if code in _FLOAT_FUNCTIONS:
        return spec.FloatFunction(op.input, op.output, _FLOAT_FUNCTIONS[code])
    if code == _OP.GELU:
        approximate = op.options(tflite.GeluOptions).Approximate()
        return spec.FloatFunction(op.input, op.output, "gelu_tanh" if approximate else "gelu")
    if code == _OP.QUANTIZE:
        return spec.Requantize(op.input, op.output)
    if code in _RELUS:
        return spec.Relu(op.input, op.output, op.clamp(_RELUS[code]))
    if code == _OP.LEAKY_RELU:
        return spec.LeakyRelu(op.input, op.output, float(op.options(tflite.LeakyReluOptions).Alpha()))
    if code in (_OP.RESHAPE, _OP.SQUEEZE, _OP.EXPAND_DIMS):
        return spec.Reshape(op.input, op.output)
    if code in (_OP.PAD, _OP.PADV2):
        fill = op.constant(2)  # PADV2's constant (in the input's quantization), PAD's zero point otherwise
        return spec.Pad(op.input, op.output, tuple((int(a), int(b)) for a, b in op.constant(1)),
                        None if fill is None or int(fill) == op.output.zero_point else int(fill))
    if code == _OP.CONCATENATION:
        inputs = tuple(op.tensor(i) for i in op.inputs)
        return spec.Concatenation(inputs, op.output, op.options(tflite.ConcatenationOptions).Axis())
    if code in _COMPARISONS:
        output = op.graph.Tensors(op.output_index)
        return spec.Comparison(_COMPARISONS[code], op.input, op.tensor(op.inputs[1]),
                               tuple(int(d) for d in output.ShapeAsNumpy()), **_constants(op, ("lhs", "rhs")))
    if code == _OP.SELECT_V2:
        shapes = [tuple(int(d) for d in op.graph.Tensors(i).ShapeAsNumpy()) for i in op.inputs + [op.output_index]]
        return spec.Select(*shapes, op.output.dtype, **_constants(op, ("condition", "x", "y")))
    if code == _OP.FILL:
        return spec.Fill(op.output.shape, op.output.dtype)
    if code == _OP.GATHER_ND:  # constant indices as the importer holds them, int64
        params, indices = (op.graph.Tensors(i) for i in op.inputs)
        values = op.constant(1) if op.model.Buffers(indices.Buffer()).DataLength() else None
        return spec.GatherNd(op.input.shape, tuple(int(d) for d in indices.ShapeAsNumpy()), op.input.dtype,
                             "int64" if values is not None else str(TFLITE_DTYPES[indices.Type()]),
                             params_values=op.constant(0) if op.model.Buffers(params.Buffer()).DataLength() else None,
                             indices_values=None if values is None else values.astype(np.int64))
    if code == _OP.ADD_N:
        return spec.AddN(tuple(op.tensor(i) for i in op.inputs), op.output)
    if code == _OP.PACK:
        return spec.Pack(tuple(op.tensor(i) for i in op.inputs), op.output, op.options(tflite.PackOptions).Axis())
    if code == _OP.TRANSPOSE:
        return spec.Transpose(op.input, op.output, tuple(int(p) for p in op.constant(1)))
    if code == _OP.SLICE:  # begin and a size per axis
        return spec.StridedSlice(op.input, op.output, tuple(int(b) for b in op.constant(1)),
                                 (1,) * len(op.input.shape), op.output.shape)
    if code == _OP.STRIDED_SLICE:  # without masks, from begins inside the input
        return spec.StridedSlice(op.input, op.output, tuple(int(b) for b in op.constant(1)),
                                 tuple(int(s) for s in op.constant(3)), op.output.shape)
    if code in (_OP.CONV_2D, _OP.DEPTHWISE_CONV_2D):
        return _conv(op, code == _OP.DEPTHWISE_CONV_2D)
    if code == _OP.FULLY_CONNECTED:
        options = op.options(tflite.FullyConnectedOptions)
        return spec.FullyConnected(op.input, op.output, op.constant(1), op.scales(1), op.constant(2),
                                   op.clamp(options.FusedActivationFunction()))
    if code in (_OP.AVERAGE_POOL_2D, _OP.MAX_POOL_2D):
        return _pool(op, "avg" if code == _OP.AVERAGE_POOL_2D else "max")
    if code in _BINARY:
        return _binary(op)
    if code in (_OP.ARG_MAX, _OP.ARG_MIN):
        rank = len(op.input.shape)
        output = op.graph.Tensors(op.output_index)
        kind, axis = "arg_max" if code == _OP.ARG_MAX else "arg_min", int(op.constant(1).reshape(-1)[0]) % rank
        return spec.ArgMinMax(op.input, tuple(int(d) for d in output.ShapeAsNumpy()), kind, axis,
                              str(TFLITE_DTYPES[output.Type()]))
    if code == _OP.CAST:
        output = op.graph.Tensors(op.output_index)
        return spec.Cast(op.input.shape, op.input.dtype, str(TFLITE_DTYPES[output.Type()]))
    if code == _OP.BATCH_MATMUL:
        options = op.options(tflite.BatchMatMulOptions)
        return spec.BatchMatMul(op.input, op.tensor(op.inputs[1]), op.output, bool(options.AdjX()),
                                bool(options.AdjY()), **_constants(op, ("lhs", "rhs")))
    if code in _REDUCTIONS:
        rank = len(op.input.shape)
        axes = tuple(sorted({int(a) % rank for a in op.constant(1).reshape(-1)}))
        return spec.Reduce(op.input, op.output, _REDUCTIONS[code], axes)
    if code in _RESIZES:
        kind, table = _RESIZES[code]
        options = op.options(table)
        return spec.Resize(op.input, op.output, kind, bool(options.AlignCorners()), bool(options.HalfPixelCenters()))
    raise NotImplementedError(f"no host op description for TFLite builtin {code}")
