"""Import a quantized TFLite model into QDQ Relax, with our fixes around TVM's frontend and a source-op map.

The map (module attribute ``ethosu.source_ops``, read back with :func:`source_ops`) records for every TFLite operator
the names of the Relax bindings it produced in ``main``: the offload report needs one entry per source operator.
A second map (``ethosu.tensor_quant``, :func:`tensor_quant`) keeps the TFLite quantization of the tensors by Relax
var name: ops the frontend imports on raw integers (pools, pad, reshape) carry none in the graph itself.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import tflite

from .tflite_file import read_model

SOURCE_OPS_ATTR = "ethosu.source_ops"
TENSOR_QUANT_ATTR = "ethosu.tensor_quant"
MODEL_IO_ATTR = "ethosu.io"
VALUE_MOVING_OPS = frozenset({"PAD", "SQUEEZE", "EXPAND_DIMS", "TRANSPOSE", "SLICE", "STRIDED_SLICE", "SPLIT", "PACK",
                              "RESIZE_NEAREST_NEIGHBOR"})


class ModelImportError(ValueError):
    """Base of the typed errors for models the NPU flow cannot import."""


class FloatModelError(ModelImportError):
    """The model computes in floating point; the NPU flow needs a fully int8/int16-quantized model."""


class DynamicShapeError(ModelImportError):
    """A tensor has an unknown (dynamic) dimension; the NPU flow needs static shapes."""


class UnsupportedModelError(ModelImportError):
    """TVM's TFLite frontend cannot convert the model (an operator it does not implement, or similar)."""


@dataclass(frozen=True)
class SourceOp:
    """One operator of the source model and the Relax bindings (by var name in ``main``) that compute it."""

    index: int
    op: str
    bindings: tuple[str, ...]


def _builtin_names() -> dict[int, str]:
    return {value: name for name, value in vars(tflite.BuiltinOperator).items() if not name.startswith("_")}


def _op_name(model: tflite.Model, op: tflite.Operator, names: dict[int, str]) -> str:
    code = model.OperatorCodes(op.OpcodeIndex())
    builtin = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
    return names.get(builtin, f"BUILTIN_{builtin}")


def _check_tensors(graph: tflite.SubGraph) -> None:
    """Reject float activations and dynamic shapes with one clear message each."""
    float_types = (tflite.TensorType.FLOAT32, tflite.TensorType.FLOAT16, tflite.TensorType.FLOAT64)
    for index in list(graph.InputsAsNumpy()) + list(graph.OutputsAsNumpy()):
        tensor = graph.Tensors(int(index))
        if tensor.Type() in float_types:
            raise FloatModelError(
                f"tensor {tensor.Name().decode()!r} is floating point: only int8/int16-quantized models can be compiled"
            )
    for i in range(graph.TensorsLength()):
        tensor = graph.Tensors(i)
        shape = tensor.ShapeAsNumpy() if tensor.ShapeLength() else np.zeros(0, np.int32)
        signature = tensor.ShapeSignatureAsNumpy() if tensor.ShapeSignatureLength() else shape
        # A -1 batch in the signature is how Keras exports a batch-1 model; any other unknown dimension is dynamic.
        if np.any(shape <= 0) or np.any(signature[1:] < 0):
            raise DynamicShapeError(
                f"tensor {tensor.Name().decode()!r} has a dynamic shape {tuple(int(d) for d in signature)}:"
                " only static shapes can be compiled"
            )


def _tracking_converter():
    """An OperatorConverter subclass that fixes known conversion failures and records each operator's bindings."""
    from tvm import relax
    from tvm.relax.frontend.tflite.tflite_frontend import OperatorConverter

    class _Converter(OperatorConverter):
        # These converters only move values (PAD pads with the zero point), so they are exact on quantized
        # tensors; TVM lists them as unsupported for quantized models all the same.
        _SUPPORTED_QUANTIZED_OPS = OperatorConverter._SUPPORTED_QUANTIZED_OPS | VALUE_MOVING_OPS

        def __init__(self, model, subgraph, exp_tab, bb):
            super().__init__(model, subgraph, exp_tab, bb)
            self.position_to_index = {subgraph.Operators(i)._tab.Pos: i for i in range(subgraph.OperatorsLength())}
            self.outputs_by_op: dict[int, list[str]] = {}
            self.quant_by_name: dict[str, tuple[float, int]] = {}
            self.builtin_names = _builtin_names()
            self.input_override: tuple[int, relax.Expr] | None = None
            self.convert_map = {name: self._tracked(func) for name, func in self.convert_map.items()}

        def _tracked(self, convert):
            def run(op):
                index = self.position_to_index[op._tab.Pos]
                try:
                    return self._convert_and_bind(convert, op, index)
                except ModelImportError:
                    raise
                except Exception as err:  # TVM's converters fail with asserts, TypeErrors, ...: name the operator
                    name = _op_name(self.model, op, self.builtin_names)
                    raise UnsupportedModelError(
                        f"the TFLite frontend cannot convert operator #{index} {name}: {_first_line(err)}") from err

            return run

        def _convert_and_bind(self, convert, op, index: int):
            self._check_pot_scale_int16(op, index)
            ret = convert(op=op)
            if ret is None:
                return None
            # Bind the result now so that bindings are attributed to the operator that produced them (emitting
            # also runs the type inference that rejects what TVM cannot express).
            items = [self.bb.emit(r) if not isinstance(r, relax.Var) else r for r in _as_list(ret)]
            self.outputs_by_op[index] = [v.name for v in items]
            inputs = [(self.get_expr(t.tensor_idx), t) for t in self.get_input_tensors(op)
                      if t.tensor_idx >= 0 and self.has_expr(t.tensor_idx)]
            self._record_quant(inputs + list(zip(items, self.get_output_tensors(op))))
            return items[0] if not isinstance(ret, (list, tuple, relax.Tuple)) else relax.Tuple(items)

        def _check_pot_scale_int16(self, op, index: int) -> None:
            """int16 ADD/SUB asking for power-of-two scaling (pot_scale_int16, the schema's default) with every
            scale a power of two: TFLite then runs a shift-only kernel of its own, which rounds the shifted operand
            alone; with equal scales nothing shifts and it equals the rescaling kernel we build, otherwise not."""
            name = _op_name(self.model, op, self.builtin_names)
            options = {"ADD": tflite.AddOptions, "SUB": tflite.SubOptions}.get(name)
            tensors = self.get_input_tensors(op)[:2] + self.get_output_tensors(op)
            if options is None or any(t.tensor.Type() != tflite.TensorType.INT16 for t in tensors):
                return
            table, parsed = op.BuiltinOptions(), options()
            if table is not None:
                parsed.Init(table.Bytes, table.Pos)
            scales = {float(t.tensor.Quantization().Scale(0)) for t in tensors if _is_power_of_two(t)}
            if (table is None or parsed.PotScaleInt16()) and len(scales) > 1 and all(map(_is_power_of_two, tensors)):
                raise UnsupportedModelError(
                    f"operator #{index} {name}: int16 with power-of-two scaling (pot_scale_int16) of unequal scales is "
                    "not supported; convert the model with pot_scale_int16 false")

        def _record_quant(self, pairs) -> None:
            """Per-tensor quantization of the (Relax var, TFLite tensor) pairs."""
            for expr, tensor in pairs:
                params = tensor.qnn_params
                if not isinstance(expr, relax.Var) or not params:
                    continue
                scale, zero_point = (params[k].value.numpy().reshape(-1) for k in ("scale", "zero_point"))
                if scale.size == 1:
                    self.quant_by_name[expr.name] = (float(scale[0]), int(zero_point[0]))

        def get_tensors(self, tensors_idx_list):
            # A single scale is per-tensor whatever QuantizedDimension says (TFLite writes 3 for a one-channel
            # depthwise weight); TVM's converters reject per-tensor weights whose axis is not 0.
            wrappers = super().get_tensors(tensors_idx_list)
            for wrapper in wrappers:
                params = wrapper.qnn_params
                if params and len(params["scale"].ty.shape) == 0:
                    params["axis"] = 0
            return wrappers

        def get_tensor_expr(self, tensor, is_sparse=False):
            if self.input_override is not None and self.input_override[0] == tensor.tensor_idx:
                return self.input_override[1]
            return super().get_tensor_expr(tensor, is_sparse)

        def convert_expand_dims(self, op):
            # TVM's converter calls relax.op.expand_dims with an argument it does not take; it is a reshape.
            data = self.get_input_tensors(op)[0]
            (output,) = self.get_output_tensors(op)
            return relax.op.reshape(self.get_tensor_expr(data), [int(d) for d in self.get_tensor_shape(output)])

        def convert_softmax(self, op):
            # TVM's converter drops beta; TFLite computes softmax(beta · x) on the real input.
            options = tflite.SoftmaxOptions()
            table = op.BuiltinOptions()
            options.Init(table.Bytes, table.Pos)
            beta = options.Beta()
            if beta == 1.0:
                return super().convert_softmax(op)
            (data,) = self.get_input_tensors(op)
            (output,) = self.get_output_tensors(op)
            x = self.get_tensor_expr(data)
            if data.qnn_params:
                x = self.dequantize(x, data)
            out = relax.op.nn.softmax(relax.op.multiply(x, relax.const(np.float32(beta), "float32")), axis=-1)
            return self.quantize(out, output) if output.qnn_params else out

        def convert_fully_connected(self, op):
            # TVM's converter feeds an N-D input straight into matmul; TFLite flattens it to [-1, n_inputs] (unless
            # keep_num_dims, where the output keeps the input's rank).
            data, weights = self.get_input_tensors(op)[:2]
            (output,) = self.get_output_tensors(op)
            n_inputs = int(self.get_tensor_shape(weights)[1])
            if len(self.get_tensor_shape(data)) != 2 and len(self.get_tensor_shape(output)) == 2:
                flat = self.bb.emit(relax.op.reshape(self.get_tensor_expr(data), (-1, n_inputs)))
                self.input_override = (data.tensor_idx, flat)
            try:
                return super().convert_fully_connected(op)
            finally:
                self.input_override = None

    return _Converter


def _is_power_of_two(tensor) -> bool:
    """A per-tensor scale within 1e-3 of a power of two in log2 (TFLite's test for its shift-only int16 path)."""
    quant = tensor.tensor.Quantization()
    if quant is None or quant.ScaleLength() != 1:
        return False
    log2 = np.log2(float(quant.Scale(0)))
    return abs(log2 - np.round(log2)) < 1e-3


def _as_list(ret):
    from tvm import relax

    if isinstance(ret, relax.Tuple):
        return list(ret.fields)
    return list(ret) if isinstance(ret, (list, tuple)) else [ret]


def _attribute_bindings(mod, model: tflite.Model, outputs_by_op: dict[int, list[str]]) -> list[SourceOp]:
    """Give each binding of main to the first operator (in model order) whose outputs it precedes or is."""
    owner_of_output = {name: index for index, names in outputs_by_op.items() for name in names}
    bindings: dict[int, list[str]] = {index: [] for index in range(model.Subgraphs(0).OperatorsLength())}
    pending: list[str] = []
    for block in mod["main"].body.blocks:
        for binding in block.bindings:
            name = binding.var.name
            pending.append(name)
            if name in owner_of_output:
                bindings[owner_of_output[name]].extend(pending)
                pending = []
    names = _builtin_names()
    graph = model.Subgraphs(0)
    return [SourceOp(i, _op_name(model, graph.Operators(i), names), tuple(bindings[i])) for i in bindings]


def from_tflite(model: str | Path | bytes):
    """Import a TFLite file or flatbuffer into a QDQ Relax IRModule (with the source-op map attached).

    Raises ModelFormatError, FloatModelError, DynamicShapeError or UnsupportedModelError.
    """
    import tvm
    from tvm import relax
    from tvm.relax.frontend.tflite import from_tflite as tvm_from_tflite
    from tvm.relax.frontend.tflite.tflite_frontend import ExprTable

    buf = Path(model).read_bytes() if isinstance(model, (str, Path)) else bytes(model)
    parsed = read_model(buf)
    _check_tensors(parsed.Subgraphs(0))
    converter_cls = _tracking_converter()
    instances = []

    def make_converter(*args):
        instances.append(converter_cls(*args))
        return instances[-1]

    try:
        # Checked before TVM opens its function scope, so that a refusal leaves no half-built BlockBuilder behind.
        converter_cls(parsed, parsed.Subgraphs(0), ExprTable(), relax.BlockBuilder()).check_unsupported_ops()
        mod = tvm_from_tflite(parsed, op_converter=make_converter)
    except (tvm.error.OpNotImplemented, tvm.error.OpAttributeInvalid, tvm.error.OpAttributeUnImplemented) as err:
        raise UnsupportedModelError(f"the TFLite frontend cannot convert the model: {_first_line(err)}") from err
    ops = _attribute_bindings(mod, parsed, instances[0].outputs_by_op)
    mod = mod.with_attr(SOURCE_OPS_ATTR, json.dumps([[op.index, op.op, list(op.bindings)] for op in ops]))
    mod = mod.with_attr(TENSOR_QUANT_ATTR, json.dumps(instances[0].quant_by_name))
    graph = parsed.Subgraphs(0)
    names = {kind: [graph.Tensors(int(i)).Name().decode() for i in indices]
             for kind, indices in (("inputs", graph.InputsAsNumpy()), ("outputs", graph.OutputsAsNumpy()))}
    return mod.with_attr(MODEL_IO_ATTR, json.dumps(names))


def _first_line(err: Exception) -> str:
    lines = [line for line in str(err).splitlines() if line.strip()]
    return lines[-1].strip() if lines else type(err).__name__


def tensor_quant(mod) -> dict[str, tuple[float, int]]:
    """(scale, zero point) of each per-tensor quantized TFLite tensor, by the name of the Relax var holding it in the
    ``main`` :func:`from_tflite` returned (empty when imported otherwise)."""
    text = mod.attrs[TENSOR_QUANT_ATTR] if mod.attrs is not None and TENSOR_QUANT_ATTR in mod.attrs else "{}"
    return {name: (float(scale), int(zero_point)) for name, (scale, zero_point) in json.loads(str(text)).items()}


def model_io_names(mod) -> tuple[list[str], list[str]]:
    """The source model's input and output tensor names, in order; for a module not from :func:`from_tflite`,
    main's parameter names and ``output_<i>``."""
    if mod.attrs is not None and MODEL_IO_ATTR in mod.attrs:
        names = json.loads(str(mod.attrs[MODEL_IO_ATTR]))
        return names["inputs"], names["outputs"]
    from tvm import relax

    main = mod["main"]
    result = main.body.body.ty
    count = len(result.fields) if isinstance(result, relax.TupleType) else 1
    return [p.name for p in main.params], [f"output_{i}" for i in range(count)]


def source_ops(mod) -> list[SourceOp]:
    """The source-operator map :func:`from_tflite` attached to the module (empty when imported otherwise)."""
    text = mod.attrs[SOURCE_OPS_ATTR] if mod.attrs is not None and SOURCE_OPS_ATTR in mod.attrs else "[]"
    return [SourceOp(int(i), str(op), tuple(names)) for i, op, names in json.loads(str(text))]
