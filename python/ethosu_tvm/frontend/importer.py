"""Import a quantized TFLite model into QDQ Relax, with our fixes around TVM's frontend and a source-op map.

The map (module attribute ``ethosu.source_ops``, read back with :func:`source_ops`) records for every TFLite operator
the names of the Relax bindings it produced in ``main``: the offload report needs one entry per source operator.
A second map (``ethosu.tensor_quant``, :func:`tensor_quant`) keeps the TFLite quantization of the tensors by Relax
var name: ops the frontend imports on raw integers (pools, pad, reshape) carry none in the graph itself.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import tflite

from ..qdq.values import const_value, dtype_of, is_const
from ..quantization import FLOAT32_FUNCTIONS, float32_table_overflow, hard_swish_refusal, softmax_input_multiplier
from .dilated_conv import DilatedConv, find_dilated_convs
from .float_io import float_edges
from .graph_view import view
from .indexing import GATHER_SLICES, IndexingConverters
from .normalization import NormalizationConverters
from .recurrent import RecurrentConverters, State, state_of, variable_states
from .model_check import MAX_ELEMENTS, OPERATOR_NAMES, ModelConsistencyError, builtin_code, check_inputs_defined
from .shape_folding import fold_shapes
from .slicing import SliceSpec, strided_slice_ranges
from .tflite_file import TFLITE_DTYPES, ModelFormatError, read_model

SOURCE_OPS_ATTR = "ethosu.source_ops"
TENSOR_QUANT_ATTR = "ethosu.tensor_quant"
# The indices of the operators no model output depends on (only when there are any).
UNUSED_OPS_ATTR = "ethosu.unused_ops"
MODEL_IO_ATTR = "ethosu.io"
# Each operator's output tensors (name, scales, zero points), for layer dumps; build-time only: the MLF's relax.txt
# leaves it out.
OP_OUTPUTS_ATTR = "ethosu.op_outputs"
VALUE_MOVING_OPS = frozenset({"PAD", "SQUEEZE", "EXPAND_DIMS", "TRANSPOSE", "SLICE", "STRIDED_SLICE", "SPLIT",
                              "SPLIT_V", "PACK", "UNPACK", "RESIZE_NEAREST_NEIGHBOR", "DEPTH_TO_SPACE",
                              "SPACE_TO_DEPTH", "MIRROR_PAD", "PADV2", "REVERSE_V2", "GATHER", "BROADCAST_TO",
                              "TILE", "SPACE_TO_BATCH_ND", "BATCH_TO_SPACE_ND", "SELECT_V2", "FILL",
                              "GATHER_ND"})


STATES_ATTR = "ethosu.states"
# Quantized operators TVM's converter refuses, met in real models: what to tell the user instead of TVM's text.
_NOT_SUPPORTED_YET = dict.fromkeys(("LSTM", "BIDIRECTIONAL_SEQUENCE_LSTM"),
                                   "of the integer LSTMs only UNIDIRECTIONAL_SEQUENCE_LSTM is supported")


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
    """One operator of the source model and the Relax bindings (by var name in ``main``) that compute it; `unused`
    when no model output depends on its results (its bindings are removed: it is not compiled)."""

    index: int
    op: str
    bindings: tuple[str, ...]
    unused: bool = False


@dataclass(frozen=True)
class OpOutput:
    """One output tensor of a TFLite operator: its name and quantization (one scale and zero point per channel,
    or one; empty when unquantized)."""

    name: str
    scales: tuple[float, ...]
    zero_points: tuple[int, ...]


def _op_name(model: tflite.Model, op: tflite.Operator) -> str:
    builtin = builtin_code(model.OperatorCodes(op.OpcodeIndex()))
    return OPERATOR_NAMES.get(builtin, f"BUILTIN_{builtin}")


@dataclass(frozen=True)
class _Rewrites:
    """What the converter does besides TVM's conversion: folded shape tensors' values, dilated convolutions."""

    folded: dict[int, np.ndarray]
    dilated: dict[int, DilatedConv]
    states: tuple[int, ...]  # variable tensors: model inputs and outputs of the view (the last ones of each)


def _converted_view(model: tflite.Model, strip_float_io: bool) -> tuple[tflite.Model, _Rewrites]:
    """The model TVM's frontend converts, and the rewrites its converter applies.

    Float I/O other than through a QUANTIZE after an input or a DEQUANTIZE before an output is rejected with one
    clear message; with `strip_float_io` those edge operators are hidden. Shape arithmetic over static shapes is
    folded to constants, and TensorFlow's dilated convolutions become one convolution (the operators they replace
    hidden).
    """
    graph = model.Subgraphs(0)
    kinds = [_op_name(model, graph.Operators(i)) for i in range(graph.OperatorsLength())]
    if "CUSTOM" in kinds:
        index = kinds.index("CUSTOM")
        code = (model.OperatorCodes(graph.Operators(index).OpcodeIndex()).CustomCode() or b"").decode()
        hint = ": the model was already compiled by Vela; compile the model Vela was given" if code == "ethos-u" else ""
        raise UnsupportedModelError(f"operator #{index} CUSTOM {code!r} cannot be compiled{hint}")
    edges = float_edges(model, kinds)
    if edges.refused:
        raise FloatModelError(f"tensor {graph.Tensors(edges.refused[0]).Name().decode()!r} is floating point: only "
                              "int8/int16-quantized models can be compiled")
    folded = fold_shapes(model, kinds)
    dilated = find_dilated_convs(model, kinds)
    hidden = folded.ops | {i for d in dilated.values() for i in (d.space_to_batch, d.batch_to_space)}
    if strip_float_io:
        if edges.passed:
            raise FloatModelError(f"float input {graph.Tensors(edges.passed[0]).Name().decode()!r} is also a model "
                                  "output: --strip-float-io cannot strip it")
        hidden |= edges.stripped
        inputs, outputs = edges.inputs, edges.outputs
    else:
        inputs, outputs = graph.InputsAsNumpy(), graph.OutputsAsNumpy()
    states = tuple(variable_states(model, kinds))
    rewrites = _Rewrites(folded.values, dilated, states)
    if not hidden and not states:
        return model, rewrites
    return view(model, frozenset(hidden), [*inputs, *states], [*outputs, *states]), rewrites


def _check_tensors(graph: tflite.SubGraph) -> None:
    """Reject dynamic shapes and empty tensors with one clear message each. An operator's intermediates (an integer
    LSTM's quantization carriers) hold no data: TFLite writes them with shape [0]."""
    operators = [graph.Operators(j) for j in range(graph.OperatorsLength())]
    intermediates = {int(i) for op in operators if op.IntermediatesLength() for i in op.IntermediatesAsNumpy()}
    for i in range(graph.TensorsLength()):
        if i in intermediates:
            continue
        tensor = graph.Tensors(i)
        shape = tensor.ShapeAsNumpy() if tensor.ShapeLength() else np.zeros(0, np.int32)
        signature = tensor.ShapeSignatureAsNumpy() if tensor.ShapeSignatureLength() else shape
        if np.any(shape == 0):
            raise UnsupportedModelError(f"tensor {tensor.Name().decode()!r} is empty: its shape "
                                        f"{tuple(int(d) for d in shape)} has a zero dimension")
        # A -1 batch in the signature is how Keras exports a batch-1 model; any other unknown dimension is dynamic.
        if np.any(shape < 0) or np.any(signature[1:] < 0):
            raise DynamicShapeError(
                f"tensor {tensor.Name().decode()!r} has a dynamic shape {tuple(int(d) for d in signature)}:"
                " only static shapes can be compiled"
            )


def _tracking_converter(rewrites: _Rewrites):
    """An OperatorConverter subclass that fixes known conversion failures, applies the `rewrites` and records each
    operator's bindings."""
    import tvm
    from tvm import relax
    from tvm.relax.frontend.tflite.tflite_frontend import OperatorConverter, get_tensor_name

    folded = rewrites.folded

    class _Converter(IndexingConverters, NormalizationConverters, RecurrentConverters, OperatorConverter):
        # These converters only move values (PAD pads with the zero point), so they are exact on quantized
        # tensors; TVM lists them as unsupported for quantized models all the same. PRELU's, ELU's, GELU's,
        # BATCH_MATMUL's, ARG_MAX's, ARG_MIN's, CAST's and ADD_N's are ours (below), FILL's and GATHER_ND's in
        # .indexing, L2_NORMALIZATION's in .normalization, UNIDIRECTIONAL_SEQUENCE_LSTM's in .recurrent. TVM's
        # RELU_0_TO_1 converter dequantizes, clips and quantizes, as its RELU_N1_TO_1 one does, but TVM leaves it off
        # the list.
        _SUPPORTED_QUANTIZED_OPS = (OperatorConverter._SUPPORTED_QUANTIZED_OPS | VALUE_MOVING_OPS
                                    | {"PRELU", "ELU", "BATCH_MATMUL", "ARG_MAX", "ARG_MIN", "CAST", "ADD_N",
                                       "L2_NORMALIZATION", "RELU_0_TO_1", "UNIDIRECTIONAL_SEQUENCE_LSTM",
                                       "GELU"})

        def __init__(self, model, subgraph, exp_tab, bb):
            super().__init__(model, subgraph, exp_tab, bb)
            indices = getattr(subgraph, "source_indices", range(subgraph.OperatorsLength()))
            self.position_to_index = {subgraph.Operators(j)._tab.Pos: i for j, i in enumerate(indices)}
            self.outputs_by_op: dict[int, list[str]] = {}
            self.quant_by_name: dict[str, tuple[float, int]] = {}
            self.input_override: tuple[int, relax.Expr] | None = None
            self.convert_map = {name: self._tracked(func) for name, func in
                                (self.convert_map | {"NEG": self.convert_neg, "ARG_MAX": self.convert_arg_max,
                                                     "ARG_MIN": self.convert_arg_min,
                                                     "UNIDIRECTIONAL_SEQUENCE_LSTM":
                                                         self.convert_unidirectional_sequence_lstm}).items()}

        def _tracked(self, convert):
            def run(op):
                index = self.position_to_index[op._tab.Pos]
                try:
                    return self._convert_and_bind(convert, op, index)
                except ModelImportError:
                    raise
                except Exception as err:  # TVM's converters fail with asserts, TypeErrors, ...: name the operator
                    name = _op_name(self.model, op)
                    raise UnsupportedModelError(
                        f"the TFLite frontend cannot convert operator #{index} {name}: {_first_line(err)}") from err

            return run

        def _convert_and_bind(self, convert, op, index: int):
            self._check_pot_scale_int16(op, index)
            self._check_scales(op, index)
            ret = convert(op=op)
            if ret is None:
                return None
            # Bind the result now so that bindings are attributed to the operator that produced them (emitting
            # also runs the type inference that rejects what TVM cannot express).
            items = [self.bb.emit(r) if not isinstance(r, relax.Var) else r for r in _as_list(ret)]
            self.outputs_by_op[index] = [v.name for v in items]
            outputs = self.get_output_tensors(op)
            if index in rewrites.dilated:  # the hidden BATCH_TO_SPACE_ND's output is the convolution's
                self.exp_tab.set_expr(get_tensor_name(self.subgraph, rewrites.dilated[index].result), items[0])
                outputs = self.get_tensors([rewrites.dilated[index].result])
            _check_output_shapes(items, outputs, f"operator #{index} {_op_name(self.model, op)}")
            inputs = [(self.get_expr(t.tensor_idx), t) for t in self.get_input_tensors(op)
                      if t.tensor_idx >= 0 and self.has_expr(t.tensor_idx)]
            self._record_quant(inputs + list(zip(items, self.get_output_tensors(op))))
            return items[0] if not isinstance(ret, (list, tuple, relax.Tuple)) else relax.Tuple(items)

        def _check_pot_scale_int16(self, op, index: int) -> None:
            """int16 ADD/SUB asking for power-of-two scaling (pot_scale_int16, the schema's default) with every
            scale a power of two: TFLite then runs a shift-only kernel of its own, which rounds the shifted operand
            alone; with equal scales nothing shifts and it equals the rescaling kernel we build, otherwise not."""
            name = _op_name(self.model, op)
            options = {"ADD": tflite.AddOptions, "SUB": tflite.SubOptions}.get(name)
            if options is None:
                return
            tensors = self.get_input_tensors(op)[:2] + self.get_output_tensors(op)
            if any(t.tensor.Type() != tflite.TensorType.INT16 for t in tensors):
                return
            table, parsed = op.BuiltinOptions(), options()
            if table is not None:
                parsed.Init(table.Bytes, table.Pos)
            scales = {float(t.tensor.Quantization().Scale(0)) for t in tensors if _is_power_of_two(t)}
            if (table is None or parsed.PotScaleInt16()) and len(scales) > 1 and all(map(_is_power_of_two, tensors)):
                raise UnsupportedModelError(
                    f"operator #{index} {name}: int16 with power-of-two scaling (pot_scale_int16) of unequal scales is "
                    "not supported; convert the model with pot_scale_int16 false")

        def _check_scales(self, op, index: int) -> None:
            """Scales of int8 SOFTMAX, LOG_SOFTMAX, HARD_SWISH and ELU that TFLite's kernels refuse, or leave
            undefined (`_SCALE_REFUSALS`): a one-line refusal naming the operator."""
            name = _op_name(self.model, op)
            refusal = _SCALE_REFUSALS.get(name)
            if refusal is None:
                return
            data, out = self.get_input_tensors(op)[0], self.get_output_tensors(op)[0]
            if data.tensor.Type() != tflite.TensorType.INT8 or not data.qnn_params or not out.qnn_params:
                return
            reason = refusal(op, _scale_and_zero_point(data), _scale_and_zero_point(out))
            if reason:
                raise UnsupportedModelError(f"operator #{index} {name}: {reason}")

        def _record_quant(self, pairs) -> None:
            """Per-tensor quantization of the (Relax var, TFLite tensor) pairs."""
            for expr, tensor in pairs:
                params = tensor.qnn_params
                if not isinstance(expr, relax.Var) or not params:
                    continue
                scale, zero_point = (params[k].value.numpy().reshape(-1) for k in ("scale", "zero_point"))
                if scale.size == 1:
                    self.quant_by_name[expr.name] = (float(scale[0]), int(zero_point[0]))

        def check_unsupported_ops(self):
            # TVM lists the kinds it refuses; name the first operator of one of them.
            try:
                super().check_unsupported_ops()
            except tvm.error.OpNotImplemented as err:
                for j in range(self.subgraph.OperatorsLength()):
                    op = self.subgraph.Operators(j)
                    name = _op_name(self.model, op)
                    if f"'{name}'" in str(err):
                        reason = _NOT_SUPPORTED_YET.get(name, _first_line(err))
                        raise UnsupportedModelError(f"the TFLite frontend cannot convert operator "
                                                    f"#{self.position_to_index[op._tab.Pos]} {name}: {reason}") from err
                raise

        def get_tensors(self, tensors_idx_list):
            # A single scale is per-tensor whatever QuantizedDimension says (TFLite writes 3 for a one-channel
            # depthwise weight); TVM's converters reject per-tensor weights whose axis is not 0.
            wrappers = super().get_tensors(tensors_idx_list)
            for wrapper in wrappers:
                params = wrapper.qnn_params
                if params and len(params["scale"].ty.shape) == 0:
                    params["axis"] = 0
            return wrappers

        def get_tensor_value(self, tensor_wrapper, is_sparse=False):
            if tensor_wrapper.tensor_idx in folded:
                return folded[tensor_wrapper.tensor_idx]
            return super().get_tensor_value(tensor_wrapper, is_sparse)

        def convert_reshape(self, op):
            # A folded new shape may hold -1; the output tensor has the static shape it resolves to.
            inputs = self.get_input_tensors(op)
            if len(inputs) < 2 or inputs[1].tensor_idx not in folded:
                return super().convert_reshape(op)
            new_shape = [int(d) for d in folded[inputs[1].tensor_idx].reshape(-1)]
            (output,) = self.get_output_tensors(op)
            shape = [int(d) for d in self.get_tensor_shape(output)]
            if len(new_shape) != len(shape) or any(d not in (-1, o) for d, o in zip(new_shape, shape)):
                raise ValueError(f"the shape computed at import {new_shape} does not give the output's {shape}")
            return relax.op.reshape(self.get_tensor_expr(inputs[0]), shape)

        def get_tensor_expr(self, tensor, is_sparse=False):
            if self.input_override is not None and self.input_override[0] == tensor.tensor_idx:
                return self.input_override[1]
            return super().get_tensor_expr(tensor, is_sparse)

        def convert_expand_dims(self, op):
            # TVM's converter calls relax.op.expand_dims with an argument it does not take; it is a reshape.
            data = self.get_input_tensors(op)[0]
            (output,) = self.get_output_tensors(op)
            return relax.op.reshape(self.get_tensor_expr(data), [int(d) for d in self.get_tensor_shape(output)])

        def convert_transpose_conv(self, op):
            # TVM's converter reads an absent bias (TFLite's input index -1) as a tensor (it handles three inputs),
            # and the output shape as a constant: one given at run time (a model input, as in TFLite Micro's SEANet
            # tests) is the output tensor's static shape, the only one a compiled program has. A 16x8 one's int64
            # bias is narrowed as CONV_2D's.
            cls, overrides = type(self), {}
            if op.InputsLength() == 4 and op.Inputs(3) < 0:
                overrides["get_input_tensors"] = lambda op_: cls.get_input_tensors(self, op_)[:3]
            shape = self.get_input_tensors(op)[0].tensor_idx
            if shape not in folded and self.has_expr(shape):
                static = np.array(self.get_tensor_shape(self.get_output_tensors(op)[0]), dtype=np.int32)
                overrides["get_tensor_value"] = lambda tensor, is_sparse=False: (
                    static if tensor.tensor_idx == shape else cls.get_tensor_value(self, tensor, is_sparse))
            vars(self).update(overrides)
            try:
                return _int32_bias(super().convert_transpose_conv(op))
            finally:
                for name in overrides:
                    delattr(self, name)

        def convert_prelu(self, op):
            # TVM's converter applies prelu to the raw integers; TFLite's PRELU is x where x ≥ 0, else alpha · x,
            # on the real values.
            data, alpha = self.get_input_tensors(op)
            (output,) = self.get_output_tensors(op)
            if not data.qnn_params:
                return super().convert_prelu(op)
            x = self.dequantize(self.get_tensor_expr(data), data)
            negative = relax.op.multiply(x, self.dequantize(self.get_tensor_expr(alpha), alpha))
            out = relax.op.where(relax.op.greater_equal(x, relax.const(0.0, "float32")), x, negative)
            return self.quantize(out, output)

        def convert_elu(self, op):
            # TVM's converter computes on the raw integers; TFLite's ELU is exp(x) − 1 below zero, x above, on the
            # real values.
            (data,) = self.get_input_tensors(op)
            (output,) = self.get_output_tensors(op)
            if not data.qnn_params:
                return super().convert_elu(op)
            x = self.dequantize(self.get_tensor_expr(data), data)
            below = relax.op.subtract(relax.op.exp(x), relax.const(1.0, "float32"))
            out = relax.op.where(relax.op.less(x, relax.const(0.0, "float32")), below, x)
            return self.quantize(out, output)

        def _matrices_transposed(self, tensor) -> relax.Var:
            """The integers of `tensor` (rank 2 or more) with its last two axes swapped, as copies the NPU makes:
            one transpose of two axes per matrix (sliced off the batch axes), concatenated."""
            *batch, rows, columns = self._shape(tensor)
            count = int(np.prod(batch, dtype=np.int64))
            x = self._copy(relax.op.reshape(self.get_tensor_expr(tensor), [count, rows, columns]), tensor)
            parts = [relax.op.permute_dims(_strided_slice(x, [range(i, i + 1), range(rows), range(columns)],
                                                          (count, rows, columns)), [0, 2, 1]) for i in range(count)]
            joined = self._copy(parts[0], tensor) if count == 1 else self._concat(parts, 0, tensor)
            return self._copy(relax.op.reshape(joined, [*batch, columns, rows]), tensor)

        def _batches_repeated(self, value, tensor, count: int, matrix: list[int]) -> relax.Var:
            """`value` (the integers of `tensor`, one matrix of `matrix` rows and columns, or its transposed copy)
            repeated `count` times along the batch axis: copies concatenated, each a tensor of its own (a host
            concatenation takes distinct inputs)."""
            copies = [self._copy(relax.op.reshape(value, [1, *matrix]), tensor) for _ in range(count)]
            joined = relax.op.concat([self.dequantize(copy, tensor) for copy in copies], 0)
            return self._copy(self.quantize(joined, tensor), tensor)

        def convert_gelu(self, op):
            # TVM's converter refuses quantized GELU: dequantize, GELU (its tanh form when `approximate`), quantize.
            (data,) = self.get_input_tensors(op)
            (output,) = self.get_output_tensors(op)
            if not data.qnn_params:
                return super().convert_gelu(op)
            approximate = op.BuiltinOptions() is not None and _options(op, tflite.GeluOptions).Approximate()
            function = relax.op.nn.gelu_tanh if approximate else relax.op.nn.gelu
            return self.quantize(function(self.dequantize(self.get_tensor_expr(data), data)), output)

        def convert_batch_matmul(self, op):
            # TVM's converter has no quantized form: dequantize both operands, swap the last two axes of the ones
            # adj_x/adj_y name, matmul (batch axes broadcast), quantize. Operands computed at run time have their
            # integers copied first where the NPU needs them otherwise: the left one transposed (it reads the
            # left-hand rows as they are; `_matrices_transposed`), and each repeated to the output's batch axis (it
            # takes equal batch axes; `_batches_repeated`; with more batch axes the copies would be a concatenation
            # along the NPU's batch axis, so those broadcast on the host).
            lhs, rhs = self.get_input_tensors(op)
            (output,) = self.get_output_tensors(op)
            if not lhs.qnn_params:
                return super().convert_batch_matmul(op)
            options = _options(op, tflite.BatchMatMulOptions)
            batch = np.broadcast_shapes(self._shape(lhs)[:-2], self._shape(rhs)[:-2])
            operands = []
            for tensor, adjoint in ((lhs, options.AdjX()), (rhs, options.AdjY())):
                rank = len(self._shape(tensor))
                swap = [*range(rank - 2), rank - 1, rank - 2]
                value, matrix = self.get_tensor_expr(tensor), list(self._shape(tensor)[-2:])
                if adjoint and tensor is lhs and self.has_expr(tensor.tensor_idx):
                    value, adjoint, matrix = self._matrices_transposed(tensor), False, matrix[::-1]
                if self.has_expr(tensor.tensor_idx) and self._shape(tensor)[:-2] != batch and len(batch) == 1:
                    value = self._batches_repeated(value, tensor, batch[0], matrix)
                    rank = len(batch) + 2
                    swap = [*range(rank - 2), rank - 1, rank - 2]
                value = self.dequantize(value, tensor)
                operands.append(relax.op.permute_dims(value, swap) if adjoint else value)
            return self.quantize(relax.op.matmul(*operands), output)

        # ARG_MAX and ARG_MIN: the order of the raw integers is the order of the real values, so TVM's argmax and
        # argmin of them are exact; TVM's converter leaves them int64 where TFLite's output is int32 (or int64).
        def convert_arg_max(self, op):
            return self._arg_min_max(op, relax.op.argmax)

        def convert_arg_min(self, op):
            return self._arg_min_max(op, relax.op.argmin)

        def _arg_min_max(self, op, relax_op):
            data, axis_tensor = self.get_input_tensors(op)
            (output,) = self.get_output_tensors(op)
            axis = int(self.get_tensor_value(axis_tensor).reshape(-1)[0]) % len(self._shape(data))
            index = relax_op(self.get_tensor_expr(data), axis=axis, keepdims=False)
            return relax.op.astype(index, str(TFLITE_DTYPES[output.tensor.Type()]))

        def convert_add_n(self, op):
            # Stacked and summed over the new axis rather than added in a chain, which the NPU would take as ADDs:
            # TFLite Micro's int8 ADD_N (LiteRT has none) is not their arithmetic.
            inputs = self.get_input_tensors(op)
            (output,) = self.get_output_tensors(op)
            if not inputs[0].qnn_params:
                return super().convert_add_n(op)
            stacked = relax.op.concat([relax.op.expand_dims(self.dequantize(self.get_tensor_expr(t), t), 0)
                                       for t in inputs], 0)
            return self.quantize(relax.op.sum(stacked, axis=[0]), output)

        def convert_cast(self, op):
            # TFLite's CAST converts the stored integers as C does, whatever their quantization.
            (data,) = self.get_input_tensors(op)
            (output,) = self.get_output_tensors(op)
            dtypes = [str(TFLITE_DTYPES[t.tensor.Type()]) for t in (data, output)]
            if not all(d in ("int8", "int16", "int32") for d in dtypes):
                raise ValueError(f"CAST from {dtypes[0]} to {dtypes[1]}: only int8, int16 and int32 are supported")
            return relax.op.astype(self.get_tensor_expr(data), dtypes[1])

        def convert_quantize(self, op):
            # Relax's quantize has no int32 output. TFLite Micro requantizes int8 and int16 to int32: that is written
            # round(input's real value / output scale) as int32 plus the output zero point, the form the host fuses
            # into TFLite's integer requantization (host.quantize_int32), so nothing computes it in float.
            (data,) = self.get_input_tensors(op)
            (output,) = self.get_output_tensors(op)
            if output.tensor.Type() != tflite.TensorType.INT32 or not data.qnn_params:
                return super().convert_quantize(op)
            real = self.dequantize(self.get_tensor_expr(data), data)
            rounded = relax.op.round(relax.op.divide(real, output.qnn_params["scale"]))
            return relax.op.add(relax.op.astype(rounded, "int32"), output.qnn_params["zero_point"])

        def convert_neg(self, op):
            # LiteRT's int8 NEG negates the raw integers (wrapping −128 to itself) whatever the quantization: that
            # is −x on the real values only with equal scales and opposite zero points; refuse the rest.
            (data,) = self.get_input_tensors(op)
            (output,) = self.get_output_tensors(op)
            if data.qnn_params:
                (in_scale, in_zp), (out_scale, out_zp) = (
                    (t.tensor.Quantization().Scale(0), t.tensor.Quantization().ZeroPoint(0)) for t in (data, output))
                if in_scale != out_scale or in_zp + out_zp:
                    raise ValueError(f"int8 NEG needs equal scales and opposite zero points, got scale {in_scale:g} "
                                     f"zero point {in_zp} → scale {out_scale:g} zero point {out_zp}")
            return self._convert_unary_elemwise(op, relax.op.negative)

        def convert_strided_slice(self, op):
            # TVM's converter ignores `offset` and reads the masks unlike TFLite: slice what TFLite's kernel copies.
            data, *indices = self.get_input_tensors(op)
            options = _options(op, tflite.StridedSliceOptions)
            spec = SliceSpec(*(tuple(int(v) for v in self.get_tensor_value(t).reshape(-1)) for t in indices),
                             options.BeginMask(), options.EndMask(), options.EllipsisMask(), options.NewAxisMask(),
                             options.ShrinkAxisMask(), bool(options.Offset()))
            ranges, shape = strided_slice_ranges(spec, self._shape(data))
            return self._slice(data, ranges, shape, self.get_output_tensors(op)[0])

        # SPLIT, SPLIT_V and UNPACK become one strided slice per output (TVM's converters emit a tuple-valued
        # split, and ignore a -1 size of SPLIT_V): every output is then a single-output host kernel. A ValueError
        # becomes an UnsupportedModelError naming the operator.
        def convert_split(self, op):
            axis_tensor, data = self.get_input_tensors(op)
            outputs = self.get_output_tensors(op)
            axis = int(self.get_tensor_value(axis_tensor).reshape(-1)[0]) % len(self._shape(data))
            size, count = self._shape(data)[axis], len(outputs)
            if size % count:
                raise ValueError(f"{size} elements do not split into {count} equal parts")
            return self._split(data, axis, [size // count] * count, outputs)

        def convert_split_v(self, op):
            data, sizes_tensor, axis_tensor = self.get_input_tensors(op)
            if self.has_expr(sizes_tensor.tensor_idx):
                raise ValueError("sizes computed at run time")
            axis = int(self.get_tensor_value(axis_tensor).reshape(-1)[0]) % len(self._shape(data))
            sizes = [int(s) for s in self.get_tensor_value(sizes_tensor).reshape(-1)]
            if sizes.count(-1) == 1:  # the one unknown size takes what the others leave
                sizes[sizes.index(-1)] = self._shape(data)[axis] - sum(s for s in sizes if s != -1)
            if min(sizes) < 0 or sum(sizes) != self._shape(data)[axis]:
                raise ValueError(f"sizes {sizes} do not split {self._shape(data)[axis]} elements")
            return self._split(data, axis, sizes, self.get_output_tensors(op))

        def convert_unpack(self, op):
            (data,) = self.get_input_tensors(op)
            outputs = self.get_output_tensors(op)
            axis = _options(op, tflite.UnpackOptions).Axis() % len(self._shape(data))
            return self._split(data, axis, [1] * self._shape(data)[axis], outputs)

        def convert_pack(self, op):
            # TVM's converter refuses inputs quantized unlike the output, as LiteRT does; TFLite Micro copies the
            # integers, and so does the host kernel.
            inputs = self.get_input_tensors(op)
            axis = _options(op, tflite.PackOptions).Axis() % (len(self._shape(inputs[0])) + 1)
            return relax.op.concat([relax.op.expand_dims(self.get_tensor_expr(t), axis) for t in inputs], axis)

        def convert_depth_to_space(self, op):
            return self._block_move(op, _options(op, tflite.DepthToSpaceOptions).BlockSize(), to_depth=False)

        def convert_space_to_depth(self, op):
            return self._block_move(op, _options(op, tflite.SpaceToDepthOptions).BlockSize(), to_depth=True)

        def _block_move(self, op, block: int, to_depth: bool):
            """DEPTH_TO_SPACE and SPACE_TO_DEPTH as `block` slices concatenated, between reshapes that only
            regroup the elements (each slice then a strided copy into its place in the output, as the NPU
            copies). With rows h·block + i and columns w·block + j, DEPTH_TO_SPACE reads its input as
            (1, (n, h), w, (i, j, c)), slices it by i along the channels and concatenates the slices along the
            width into (1, (n, h), (i, w), (j, c)), the output's element order; SPACE_TO_DEPTH slices
            (1, (n, h), (i, w), (j, c)) by i along the width and concatenates along the channels. Every step is in
            the output's quantization (TVM's converters nest a transpose in reshapes, which leaves the inner ones
            unquantized)."""
            (data,) = self.get_input_tensors(op)
            (output,) = self.get_output_tensors(op)
            n, h, w, c = self._shape(data)
            if to_depth:
                source, sliced, joined = (1, n * h // block, block * (w // block), block * c), 2, 3
            else:
                source, sliced, joined = (1, n * h, w, c), 3, 2
            x = self.get_tensor_expr(data)
            if source != (n, h, w, c):
                x = self._copy(relax.op.reshape(x, source), output)
            parts = []
            for i in range(block):
                ranges = [range(d) for d in source]
                step = source[sliced] // block
                ranges[sliced] = range(i * step, (i + 1) * step)
                parts.append(_strided_slice(x, ranges, source))
            return relax.op.reshape(self._concat(parts, joined, output), list(self._shape(output)))

        def convert_mirror_pad(self, op):
            # TVM's converter refuses SYMMETRIC and emits a reflect pad that has no host kernel: per axis, a
            # concatenation of the reflected rows, each a slice of its own, and the tensor (the NPU copies forwards
            # only, so one copy per reflected row, as Vela does, rather than a backward slice).
            data, pads = self.get_input_tensors(op)
            (output,) = self.get_output_tensors(op)
            symmetric = _options(op, tflite.MirrorPadOptions).Mode() == tflite.MirrorPadMode.SYMMETRIC
            widths = self.get_tensor_value(pads).reshape(-1, 2).tolist()
            shape = list(self._shape(data))
            x = self._copy(relax.op.reshape(self.get_tensor_expr(data), shape), output)  # a copy if none pads
            for axis, (before, after) in enumerate(widths):
                size, edge = shape[axis], 0 if symmetric else 1
                if max(before, after) > size - edge:
                    raise ValueError(f"paddings {widths} exceed the input shape {self._shape(data)}")
                if before == after == 0:
                    continue
                rows = [*range(before - 1 + edge, edge - 1, -1), None,
                        *range(size - 1 - edge, size - 1 - edge - after, -1)]
                parts = [range(size) if row is None else range(row, row + 1) for row in rows]
                x = self._concat([self._take(x, shape, axis, r) for r in parts], axis, output)
                shape[axis] += before + after
            return x

        def convert_tile(self, op):
            # TVM's converter emits a tile, which has no host kernel: per tiled axis, a concatenation of that many
            # copies of the tensor (the NPU's copies, as Vela splits TILE into one tiled axis at a time), the axes of
            # smaller multiples first so that less is copied twice. The integers are copied whatever the
            # quantizations, as LiteRT's kernel does: every copy is read in the output's quantization.
            data, multiples = self.get_input_tensors(op)
            (output,) = self.get_output_tensors(op)
            if self.has_expr(multiples.tensor_idx):
                raise ValueError("multiples computed at run time (only constant multiples are supported)")
            if not output.qnn_params:
                raise ValueError(f"an unquantized {TFLITE_DTYPES[output.tensor.Type()]} tensor (only quantized int8 "
                                 "and int16 ones are supported)")
            reps = [int(m) for m in self.get_tensor_value(multiples).reshape(-1)]
            shape = self._shape(data)
            if len(reps) != len(shape) or tuple(d * m for d, m in zip(shape, reps)) != self._shape(output):
                raise ValueError(f"multiples {reps} of an input of shape {list(shape)} do not give the output "
                                 f"{list(self._shape(output))}")
            x = self.get_tensor_expr(data)
            axes = sorted((a for a, m in enumerate(reps) if m > 1), key=reps.__getitem__)
            if not axes:
                return relax.op.reshape(x, list(shape))  # a copy
            for axis in axes:
                copies = relax.op.concat([self.dequantize(x, output) for _ in range(reps[axis])], axis)
                x = self._copy(self.quantize(copies, output), output)
            return x

        def convert_reverse_v2(self, op):
            # TVM's converter emits a flip, which has no host kernel: a slice with stride -1 on the axes.
            data, axes = self.get_input_tensors(op)
            shape = self._shape(data)
            axes = {int(a) % len(shape) for a in self.get_tensor_value(axes).reshape(-1)}
            ranges = [range(d - 1, -1, -1) if i in axes else range(d) for i, d in enumerate(shape)]
            return self._slice(data, ranges, shape, self.get_output_tensors(op)[0])

        def convert_gather(self, op):
            # TVM's converter emits a take, which has no host kernel: with constant indices, a strided slice when
            # they step evenly, else a concatenation of one slice per index (up to GATHER_SLICES of them; more are
            # one GATHER_ND over the axes up to `axis`, a host gather); then the output's shape.
            data, indices = self.get_input_tensors(op)
            (output,) = self.get_output_tensors(op)
            if self.has_expr(indices.tensor_idx):
                raise ValueError("indices computed at run time")
            shape, options = self._shape(data), _options(op, tflite.GatherOptions)
            if options.BatchDims():
                raise ValueError(f"batch_dims {options.BatchDims()} is not supported")
            axis = options.Axis() % len(shape)
            picks = [int(i) for i in self.get_tensor_value(indices).reshape(-1)]
            if min(picks) < 0 or max(picks) >= shape[axis]:
                raise ValueError(f"indices {picks} are out of range for dimension {shape[axis]}")
            steps = {b - a for a, b in zip(picks, picks[1:])}
            if len(steps) <= 1 and 0 not in steps:
                step = steps.pop() if steps else 1
                ranges = [range(d) for d in shape]
                ranges[axis] = range(picks[0], picks[-1] + step, step)
                return self._slice(data, ranges, self._shape(output), output)
            x = self.get_tensor_expr(data)
            if len(picks) > GATHER_SLICES:
                grid = np.indices(shape[:axis] + (len(picks),))  # every point of the leading axes, every pick
                grid[axis] = np.asarray(picks)[grid[axis]]
                tuples = np.moveaxis(grid, 0, -1).astype(np.int64)
                return relax.op.reshape(relax.op.gather_nd(x, relax.const(tuples, "int64")), list(self._shape(output)))
            x = self._concat([self._take(x, shape, axis, range(i, i + 1)) for i in picks], axis, output)
            return relax.op.reshape(x, list(self._shape(output)))

        # SPACE_TO_BATCH_ND and BATCH_TO_SPACE_ND outside a dilated convolution (the chains are folded before):
        # TVM's converters call TOPI functions that have no host kernel; these are a pad or crop around a reshape →
        # transpose → reshape, each a host copy in the output's quantization.
        def convert_space_to_batch_nd(self, op):
            data, blocks, pads = self.get_input_tensors(op)
            (output,) = self.get_output_tensors(op)
            bh, bw, n, h, w, c = self._batch_blocks(data, blocks)
            widths = [[0, 0], *self.get_tensor_value(pads).reshape(-1, 2).tolist(), [0, 0]]
            zero_point = int(output.qnn_params["zero_point"].value.numpy()) if output.qnn_params else 0
            x = self._copy(relax.op.nn.pad(self.get_tensor_expr(data), [int(v) for pair in widths for v in pair],
                                           pad_value=float(zero_point)), output)
            h, w = h + sum(widths[1]), w + sum(widths[2])
            x = self._copy(relax.op.reshape(x, [n, h // bh, bh, w // bw, bw, c]), output)
            x = self._copy(relax.op.permute_dims(x, [2, 4, 0, 1, 3, 5]), output)
            return relax.op.reshape(x, list(self._shape(output)))

        def convert_batch_to_space_nd(self, op):
            data, blocks, crops = self.get_input_tensors(op)
            (output,) = self.get_output_tensors(op)
            bh, bw, n, h, w, c = self._batch_blocks(data, blocks)
            x = self._copy(relax.op.reshape(self.get_tensor_expr(data), [bh, bw, n // (bh * bw), h, w, c]), output)
            x = self._copy(relax.op.permute_dims(x, [2, 3, 0, 4, 1, 5]), output)
            shape = [n // (bh * bw), h * bh, w * bw, c]
            x = self._copy(relax.op.reshape(x, shape), output)
            (top, bottom), (left, right) = self.get_tensor_value(crops).reshape(2, 2).tolist()
            ranges = [range(shape[0]), range(top, shape[1] - bottom), range(left, shape[2] - right), range(c)]
            if tuple(len(r) for r in ranges) != self._shape(output):
                raise ValueError(f"crops {[[top, bottom], [left, right]]} do not give the output {self._shape(output)}")
            return _strided_slice(x, ranges, shape)

        def _batch_blocks(self, data, blocks) -> tuple[int, ...]:
            """The block height and width and the NHWC shape of `data`; two spatial dimensions only."""
            block_shape = [int(b) for b in self.get_tensor_value(blocks).reshape(-1)]
            if len(self._shape(data)) != 4 or len(block_shape) != 2:
                raise ValueError(f"a block shape {block_shape} on a {len(self._shape(data))}-D input (only 2 on 4-D)")
            return (*block_shape, *self._shape(data))

        def _take(self, x, shape: list[int], axis: int, r: range):
            """The elements of `x` (of `shape`) at `r` along `axis`."""
            return _strided_slice(x, [r if i == axis else range(d) for i, d in enumerate(shape)], shape)

        def _concat(self, parts, axis: int, output) -> relax.Var:
            """The concatenation of `parts` (raw integers) in the output's quantization, as the host kernel for
            CONCATENATION takes it: the integers are copied."""
            if not output.qnn_params:
                return self._copy(relax.op.concat(parts, axis), output)
            parts = [self.dequantize(self._copy(part, output), output) for part in parts]
            return self._copy(self.quantize(relax.op.concat(parts, axis), output), output)

        def _copy(self, expr, output) -> relax.Var:
            """`expr` bound, in the quantization of the TFLite tensor `output`."""
            var = self.bb.emit(expr)
            self._record_quant([(var, output)])
            return var

        def _shape(self, tensor) -> tuple[int, ...]:
            """The tensor's shape, () for a scalar (UNPACK of a vector)."""
            return tuple(int(d) for d in tensor.tensor.ShapeAsNumpy()) if tensor.tensor.ShapeLength() else ()

        def _split(self, data, axis: int, sizes: list[int], outputs):
            if len(sizes) != len(outputs):
                raise ValueError(f"{len(outputs)} outputs for {len(sizes)} parts")
            starts = np.cumsum([0] + sizes).tolist()
            full = [range(d) for d in self._shape(data)]
            return relax.Tuple([self._slice(data, full[:axis] + [range(start, stop)] + full[axis + 1:],
                                            self._shape(output), output)
                                for start, stop, output in zip(starts, starts[1:], outputs)])

        def _slice(self, data, ranges: list[range], shape: tuple[int, ...], output):
            """The elements `ranges` select, reshaped to `shape`, which must be the output tensor's."""
            if shape != self._shape(output):
                raise ValueError(f"the output shape {self._shape(output)} is not TFLite's {shape}")
            sliced = _strided_slice(self.get_tensor_expr(data), ranges, self._shape(data))
            if tuple(len(r) for r in ranges) == shape:
                return sliced
            sliced = self.bb.emit(sliced)
            self._record_quant([(sliced, output)])  # the output's values before the reshape
            return relax.op.reshape(sliced, list(shape))

        def convert_softmax(self, op):
            # TVM's converter drops beta; TFLite computes softmax(beta · x) on the real input.
            beta = _options(op, tflite.SoftmaxOptions).Beta()
            if beta == 1.0:
                return super().convert_softmax(op)
            (data,) = self.get_input_tensors(op)
            (output,) = self.get_output_tensors(op)
            x = self.get_tensor_expr(data)
            if data.qnn_params:
                x = self.dequantize(x, data)
            out = relax.op.nn.softmax(relax.op.multiply(x, relax.const(np.float32(beta), "float32")), axis=-1)
            return self.quantize(out, output) if output.qnn_params else out

        def convert_conv(self, op, conv_type):
            dilated = rewrites.dilated.get(self.position_to_index[op._tab.Pos])
            if dilated is None:
                return _per_tensor_depthwise(_int32_bias(super().convert_conv(op, conv_type)))
            # The hidden SPACE_TO_BATCH_ND's output is its input; the VALID convolution TVM builds on it gets the
            # chain's dilation and padding.
            inner = self.get_input_tensors(op)[0].tensor_idx
            self.exp_tab.set_expr(get_tensor_name(self.subgraph, inner), self.get_expr(dilated.source))
            return _per_tensor_depthwise(_int32_bias(_dilate(super().convert_conv(op, conv_type), dilated)))

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
                return _int32_bias(super().convert_fully_connected(op))
            finally:
                self.input_override = None

    return _Converter


def _strided_slice(x, ranges: list[range], shape):
    """The elements of `x` (of `shape`) at `ranges`, one per axis."""
    from tvm import relax

    # Ends past the front of an axis (going backward) are written below -size, as Relax reads them.
    ends = [r.start + len(r) * r.step for r in ranges]
    ends = [end if end >= 0 else -size - 1 for end, size in zip(ends, shape)]
    return relax.op.strided_slice(x, list(range(len(ranges))), [r.start for r in ranges], ends,
                                  [r.step for r in ranges])


def _options(op, options_class):
    """The operator's builtin options as `options_class`."""
    options = options_class()
    table = op.BuiltinOptions()
    options.Init(table.Bytes, table.Pos)
    return options


def _rewrite_calls(expr, rewrite):
    """The converter's (not yet bound) expression tree with `rewrite(call, args)` building every call anew."""
    from tvm import relax

    if not isinstance(expr, relax.Call):
        return expr
    return rewrite(expr, [_rewrite_calls(arg, rewrite) for arg in expr.args])


def _int32_bias(expr):
    """The converted 16x8 op with its int64 bias narrowed to int32 (TVM's dequantize refuses int64 data).

    Exact while every value fits int32 (the host kernel widens it back to its int64 accumulator); a bias beyond
    int32 is refused (the caller names the operator)."""
    from tvm import relax

    def rewrite(call, args):
        if call.op.name == "relax.dequantize" and is_const(args[0]) and dtype_of(args[0]) == "int64":
            values = const_value(args[0])
            info = np.iinfo(np.int32)
            if values.size and not info.min <= values.min() <= values.max() <= info.max:
                raise ValueError(f"int64 bias values up to {int(np.abs(values).max())} exceed the int32 range")
            args[0] = relax.const(values.astype(np.int32), "int32")
        return relax.Call(call.op, args, call.attrs, call.ty_args, call.span)

    return _rewrite_calls(expr, rewrite)


def _per_tensor_depthwise(expr):
    """The converted convolution with a per-tensor depthwise kernel written as a per-channel one is: the TFLite
    [1, H, W, C] weights dequantized, then reshaped to HWOI. TVM reshapes the raw constant instead, which leaves a
    grouped convolution over a dequantized HWOI constant that no depthwise pattern matches."""
    from tvm import relax

    def rewrite(call, args):
        weights = args[1] if call.op.name == "relax.nn.conv2d" and int(call.attrs.groups) > 1 else None
        if (weights is None or not isinstance(weights, relax.Call) or weights.op.name != "relax.dequantize"
                or not is_const(weights.args[0])):
            return relax.Call(call.op, args, call.attrs, call.ty_args, call.span)
        raw = const_value(weights.args[0])
        height, width, channels, _ = raw.shape
        tflite_layout = relax.const(raw.reshape(1, height, width, channels), dtype_of(weights.args[0]))
        dequantized = relax.Call(weights.op, [tflite_layout, *weights.args[1:]], weights.attrs)
        args[1] = relax.op.reshape(dequantized, raw.shape)
        return relax.Call(call.op, args, call.attrs, call.ty_args, call.span)

    return _rewrite_calls(expr, rewrite)


def _dilate(expr, dilated: DilatedConv):
    """The converted convolution with the dilation and padding of the chain it stands for."""
    from tvm import relax

    def rewrite(call, args):
        if call.op.name != "relax.nn.conv2d":
            return relax.Call(call.op, args, call.attrs, call.ty_args, call.span)
        attrs = call.attrs
        return relax.op.nn.conv2d(args[0], args[1], strides=attrs.strides, padding=dilated.padding,
                                  dilation=dilated.dilation, groups=int(attrs.groups),
                                  data_layout=str(attrs.data_layout), kernel_layout=str(attrs.kernel_layout),
                                  out_layout=str(attrs.out_layout), out_dtype=attrs.out_dtype)

    return _rewrite_calls(expr, rewrite)


def _scale_and_zero_point(tensor) -> tuple[float, int]:
    params = tensor.qnn_params
    return float(params["scale"].value.numpy().reshape(-1)[0]), int(params["zero_point"].value.numpy().reshape(-1)[0])


def _softmax_refusal(op, data: tuple[float, int], _) -> str:
    """TFLite's int8 SOFTMAX takes beta · input scale as a multiplier with a left shift and refuses a model where
    it is none (at most 2^-26)."""
    beta, scale = _options(op, tflite.SoftmaxOptions).Beta(), data[0]
    if softmax_input_multiplier(beta, scale) > 1.0:
        return ""
    return (f"beta · input scale is {beta * scale:.3g}; TFLite's int8 kernel needs more than 2^-26 (it refuses the "
            "model)")


def _log_softmax_refusal(op, data: tuple[float, int], _) -> str:
    """LOG_SOFTMAX: as SOFTMAX with beta 1."""
    if softmax_input_multiplier(1.0, data[0]) > 1.0:
        return ""
    return f"its input scale is {data[0]:.3g}; TFLite's int8 kernel needs more than 2^-26 (it refuses the model)"


def _elu_refusal(op, data: tuple[float, int], out: tuple[float, int]) -> str:
    """ELU's reference, TFLite Micro, converts its float table values to int32 before clamping them: undefined in
    C beyond int32, where the runtimes differ."""
    beyond = float32_table_overflow(FLOAT32_FUNCTIONS["elu"], *data, *out)
    if beyond is None:
        return ""
    return (f"output scale {out[0]:.3g} takes table values to {beyond:.3g}, beyond the int32 TFLite converts them to "
            "(undefined in C: LiteRT and TFLite Micro differ there)")


_SCALE_REFUSALS = {
    "SOFTMAX": _softmax_refusal,
    "LOG_SOFTMAX": _log_softmax_refusal,
    "HARD_SWISH": lambda op, data, out: hard_swish_refusal(data[0], out[0]),
    "ELU": _elu_refusal,
}


def _is_power_of_two(tensor) -> bool:
    """A per-tensor scale within 1e-3 of a power of two in log2 (TFLite's test for its shift-only int16 path)."""
    quant = tensor.tensor.Quantization()
    if quant is None or quant.ScaleLength() != 1:
        return False
    log2 = np.log2(float(quant.Scale(0)))
    return abs(log2 - np.round(log2)) < 1e-3


def _check_output_shapes(items, outputs, where: str) -> None:
    """Refuse an output tensor declared with another number of elements than its operator computes: LiteRT resizes
    it, TFLite Micro's kernels abort (ADD) or write the computed elements alone, leaving the rest uninitialised
    (RELU). The same elements in another shape (a reduction to a scalar declared (1,)) are what TFLite Micro writes
    and are kept. A computed shape that no tensor may have is named as such first."""
    for item, output in zip(items, outputs):
        shapes = _tensor_shapes(item.ty)
        if len(shapes) != 1:
            continue
        (computed,) = shapes
        _check_size(computed, where)
        declared = tuple(int(d) for d in output.tensor.ShapeAsNumpy()) if output.tensor.ShapeLength() else ()
        if math.prod(computed) != math.prod(declared):
            raise UnsupportedModelError(f"{where}: output {output.tensor.Name().decode()!r} is declared with shape "
                                        f"{declared}, but the operator computes shape {computed}")


def _as_list(ret):
    from tvm import relax

    if isinstance(ret, relax.Tuple):
        return list(ret.fields)
    return list(ret) if isinstance(ret, (list, tuple)) else [ret]


def _attribute_bindings(mod, model: tflite.Model, outputs_by_op: dict[int, list[str]]) -> list[SourceOp]:
    """Give each binding of main to the first operator (in model order) whose outputs it precedes or is; operators
    hidden from TVM (stripped float I/O, folded shape arithmetic, space-to-batch reshuffles) have no entry."""
    owner_of_output = {name: index for index, names in outputs_by_op.items() for name in names}
    graph = model.Subgraphs(0)
    indices = getattr(graph, "source_indices", range(graph.OperatorsLength()))
    bindings: dict[int, list[str]] = {index: [] for index in indices}
    pending: list[str] = []
    for block in mod["main"].body.blocks:
        for binding in block.bindings:
            name = binding.var.name
            pending.append(name)
            if name in owner_of_output:
                bindings[owner_of_output[name]].extend(pending)
                pending = []
    return [SourceOp(i, _op_name(model, model.Subgraphs(0).Operators(j)), tuple(bindings[i]))
            for j, i in enumerate(bindings)]


def _without_unused(mod, ops: list[SourceOp]):
    """The module without the bindings no model output depends on, and the operators with the bindings left to
    them: an operator left none is `unused`. TFLite runs such an operator for nothing; Vela, which builds its graph
    back from the outputs, leaves it out, and so does this."""
    from tvm import relax

    mod = relax.transform.DeadCodeElimination(["main"])(mod)
    kept = {binding.var.name for block in mod["main"].body.blocks for binding in block.bindings}
    result = []
    for op in ops:
        bindings = tuple(name for name in op.bindings if name in kept)
        result.append(SourceOp(op.index, op.op, bindings, unused=bool(op.bindings) and not bindings))
    return mod, result


def _tensor_shapes(ty) -> list[tuple[int, ...]]:
    """The static shapes in a binding's type (a tuple's fields each)."""
    from tvm import relax

    if isinstance(ty, relax.TupleType):
        return [shape for field in ty.fields for shape in _tensor_shapes(field)]
    if isinstance(ty, relax.TensorType) and isinstance(ty.shape, relax.ShapeExpr):
        return [tuple(int(d) for d in ty.shape.values)]
    return []


def _check_computed_sizes(mod, ops: list[SourceOp]) -> None:
    """Refuse a tensor that the operators' attributes make empty, negative in size or larger than the file's tensors
    may be (a window larger than its input, paddings of millions, a stride that wraps around), naming the operator
    that computes it. The file's own shapes were checked before conversion; these are the shapes TVM derived from
    them."""
    owner = {name: op for op in ops for name in op.bindings}
    for block in mod["main"].body.blocks:
        for binding in block.bindings:
            for shape in _tensor_shapes(binding.var.ty):
                op = owner.get(binding.var.name)
                _check_size(shape, f"operator #{op.index} {op.op}" if op else "the model")


def _check_size(shape: tuple[int, ...], where: str) -> None:
    elements = math.prod(shape)
    problem = ("has a negative extent" if any(d < 0 for d in shape) else
               "has no elements" if elements == 0 else
               f"has {elements:,} elements; the limit is {MAX_ELEMENTS:,}" if elements > MAX_ELEMENTS else None)
    if problem:
        raise UnsupportedModelError(f"{where} computes a tensor of shape {shape}, which {problem}")


def from_tflite(model: str | Path | bytes, strip_float_io: bool = False):
    """Import a TFLite file or flatbuffer into a QDQ Relax IRModule (with the source-op map attached).

    A model may take and give float32 through a QUANTIZE after each float input and a DEQUANTIZE before each float
    output (host kernels compute them); with `strip_float_io` those are left out, and the module takes and gives
    their integer tensors. Raises ModelFormatError, FloatModelError, DynamicShapeError or UnsupportedModelError.
    """
    import tvm
    from tvm import relax
    from tvm.relax.frontend.tflite import from_tflite as tvm_from_tflite
    from tvm.relax.frontend.tflite.tflite_frontend import ExprTable

    buf = Path(model).read_bytes() if isinstance(model, (str, Path)) else bytes(model)
    original = read_model(buf)
    parsed, rewrites = _converted_view(original, strip_float_io)  # refuses CUSTOM (Vela) operators first
    try:
        check_inputs_defined(original)
    except ModelConsistencyError as err:
        raise ModelFormatError(str(err)) from None
    _check_tensors(parsed.Subgraphs(0))
    converter_cls = _tracking_converter(rewrites)
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
    except ModelImportError:
        # A converter refused an operator inside TVM's function scope, which leaves the block it began open: close
        # it, or TVM warns about it on stderr when the builder is freed.
        if instances:
            instances[0].bb._end_block()
        raise
    ops = _attribute_bindings(mod, parsed, instances[0].outputs_by_op)
    _check_computed_sizes(mod, ops)
    mod, ops = _without_unused(mod, ops)
    mod = mod.with_attr(SOURCE_OPS_ATTR, json.dumps([[op.index, op.op, list(op.bindings)] for op in ops]))
    if any(op.unused for op in ops):
        mod = mod.with_attr(UNUSED_OPS_ATTR, json.dumps([op.index for op in ops if op.unused]))
    mod = mod.with_attr(TENSOR_QUANT_ATTR, json.dumps(instances[0].quant_by_name))
    graph = parsed.Subgraphs(0)
    count = len(rewrites.states)
    names = {kind: [graph.Tensors(int(i)).Name().decode() for i in indices[:len(indices) - count]]
             for kind, indices in (("inputs", graph.InputsAsNumpy()), ("outputs", graph.OutputsAsNumpy()))}
    if count:
        mod = mod.with_attr(STATES_ATTR, json.dumps([[s.name, s.fill] for s in map(state_of, map(graph.Tensors,
                                                                                                 rewrites.states))]))
    mod = mod.with_attr(OP_OUTPUTS_ATTR, json.dumps([[[out.name, list(out.scales), list(out.zero_points)]
                                                      for out in outputs] for outputs in _op_outputs(original)]))
    return mod.with_attr(MODEL_IO_ATTR, json.dumps(names))


def _op_outputs(model: tflite.Model) -> list[list[OpOutput]]:
    """Every operator's output tensors, in model order."""
    graph = model.Subgraphs(0)
    result = []
    for j in range(graph.OperatorsLength()):
        outputs = []
        for index in graph.Operators(j).OutputsAsNumpy():
            tensor = graph.Tensors(int(index))
            quant = tensor.Quantization()
            scales = [float(v) for v in quant.ScaleAsNumpy()] if quant is not None and quant.ScaleLength() else []
            zero_points = [int(v) for v in quant.ZeroPointAsNumpy()] if quant is not None and quant.ZeroPointLength() \
                else []
            outputs.append(OpOutput(tensor.Name().decode(), tuple(scales), tuple(zero_points)))
        result.append(outputs)
    return result


def op_outputs(mod) -> list[list[OpOutput]]:
    """The output tensors of each TFLite operator (by operator index), as :func:`from_tflite` recorded them."""
    text = mod.attrs[OP_OUTPUTS_ATTR] if mod.attrs is not None and OP_OUTPUTS_ATTR in mod.attrs else "[]"
    return [[OpOutput(name, tuple(scales), tuple(zero_points)) for name, scales, zero_points in outputs]
            for outputs in json.loads(str(text))]


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


def model_states(mod) -> list[State]:
    """The variable tensors :func:`from_tflite` made the last inputs and outputs of main, in that order."""
    text = mod.attrs[STATES_ATTR] if mod.attrs is not None and STATES_ATTR in mod.attrs else "[]"
    return [State(str(name), int(fill)) for name, fill in json.loads(str(text))]


def source_ops(mod) -> list[SourceOp]:
    """The source-operator map :func:`from_tflite` attached to the module (empty when imported otherwise)."""
    attrs = mod.attrs if mod.attrs is not None else {}
    text = attrs[SOURCE_OPS_ATTR] if SOURCE_OPS_ATTR in attrs else "[]"
    unused = set(json.loads(str(attrs[UNUSED_OPS_ATTR]))) if UNUSED_OPS_ATTR in attrs else set()
    return [SourceOp(int(i), str(op), tuple(names), int(i) in unused) for i, op, names in json.loads(str(text))]
