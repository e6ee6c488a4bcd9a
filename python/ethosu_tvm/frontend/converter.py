"""The converter core: TVM's TFLite OperatorConverter with what every operator's conversion needs from us, and the
helpers our converters share.

It runs the refusals (`refusals`) before each conversion, binds each operator's results as it converts them and
records which bindings each operator produced and the quantization of their tensors, applies the model's rewrites
(folded shape tensors, dilated convolutions) and names the operator in any failure. The converters themselves are
methods of subclasses by concern (`arithmetic`, `data_movement`, `indexing`, `normalization`, `recurrent`);
`operators.CONVERTERS` says which converts each TFLite operator, and `operators.Converter` is the class TVM runs.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import MethodType

import numpy as np
import tvm
from tvm import relax
from tvm.relax.frontend.tflite.tflite_frontend import OperatorConverter, get_tensor_name

from .dilated_conv import DilatedConv
from .errors import ModelImportError, UnsupportedModelError, error_line
from .model_check import operator_name
from .refusals import NOT_SUPPORTED_YET, check_operator, check_output_shapes


@dataclass(frozen=True)
class Rewrites:
    """What the converter does besides TVM's conversion: folded shape tensors' values, dilated convolutions."""

    folded: dict[int, np.ndarray]
    dilated: dict[int, DilatedConv]
    states: tuple[int, ...]  # variable tensors: model inputs and outputs of the view (the last ones of each)


class ConverterCore(OperatorConverter):
    """The base of our converter classes; TVM gives each operator to the method `converters` names, else to its own
    converter, and either way through `_tracked`."""

    # The class defining `convert_<name>` for each TFLite operator name we convert (`operators.CONVERTERS`).
    converters: dict[str, type] = {}

    def __init__(self, model, subgraph, exp_tab, bb, rewrites: Rewrites, wrappers: dict[int, object] | None = None):
        super().__init__(model, subgraph, exp_tab, bb)
        self.rewrites = rewrites
        # tensor index -> TensorWrapper (`get_tensors`), which the converters of one model may share
        self.wrappers = {} if wrappers is None else wrappers
        indices = getattr(subgraph, "source_indices", range(subgraph.OperatorsLength()))
        self.position_to_index = {subgraph.Operators(j)._tab.Pos: i for j, i in enumerate(indices)}
        self.outputs_by_op: dict[int, list[str]] = {}
        self.quant_by_name: dict[str, tuple[float, int]] = {}
        self.input_override: tuple[int, relax.Expr] | None = None
        ours = {name: MethodType(getattr(owner, f"convert_{name.lower()}"), self)
                for name, owner in self.converters.items()}
        self.convert_map = {name: self._tracked(func) for name, func in (self.convert_map | ours).items()}

    def index_of(self, op) -> int:
        """The operator's index in the source model."""
        return self.position_to_index[op._tab.Pos]

    def _tracked(self, convert):
        def run(op):
            index = self.index_of(op)
            try:
                return self._convert_and_bind(convert, op, index)
            except ModelImportError:
                raise
            except Exception as err:  # TVM's converters fail with asserts, TypeErrors, ...: name the operator
                raise UnsupportedModelError(f"the TFLite frontend cannot convert operator #{index} "
                                            f"{operator_name(self.model, op)}: {error_line(err)}") from err

        return run

    def _convert_and_bind(self, convert, op, index: int):
        name = operator_name(self.model, op)
        check_operator(self, op, name, f"operator #{index} {name}")
        ret = convert(op=op)
        if ret is None:
            return None
        # Bind the result now so that bindings are attributed to the operator that produced them (emitting also
        # runs the type inference that rejects what TVM cannot express).
        items = [self.bb.emit(r) if not isinstance(r, relax.Var) else r for r in _as_list(ret)]
        self.outputs_by_op[index] = [v.name for v in items]
        outputs = self.get_output_tensors(op)
        dilated = self.rewrites.dilated
        if index in dilated:  # the hidden BATCH_TO_SPACE_ND's output is the convolution's
            self.exp_tab.set_expr(get_tensor_name(self.subgraph, dilated[index].result), items[0])
            outputs = self.get_tensors([dilated[index].result])
        check_output_shapes(items, outputs, f"operator #{index} {name}")
        inputs = [(self.get_expr(t.tensor_idx), t) for t in self.get_input_tensors(op)
                  if t.tensor_idx >= 0 and self.has_expr(t.tensor_idx)]
        self.record_quant(inputs + list(zip(items, self.get_output_tensors(op))))
        return items[0] if not isinstance(ret, (list, tuple, relax.Tuple)) else relax.Tuple(items)

    def record_quant(self, pairs) -> None:
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
                name = operator_name(self.model, op)
                if f"'{name}'" in str(err):
                    reason = NOT_SUPPORTED_YET.get(name, error_line(err))
                    raise UnsupportedModelError(f"the TFLite frontend cannot convert operator "
                                                f"#{self.index_of(op)} {name}: {reason}") from err
            raise

    def get_tensors(self, tensors_idx_list):
        # TVM's converters ask for each tensor several times (MobileNetV2-224: 1,424 reads for 84 operators), and
        # TVM's reader builds new constants for its quantization each time: each tensor is read once. The model
        # does not change, nor does anything write to a wrapper.
        indices = list(self._indices_or_empty(tensors_idx_list))
        missing = [i for i in dict.fromkeys(indices) if i not in self.wrappers]
        for wrapper in super().get_tensors(missing):
            # A single scale is per-tensor whatever QuantizedDimension says (TFLite writes 3 for a one-channel
            # depthwise weight); TVM's converters reject per-tensor weights whose axis is not 0.
            params = wrapper.qnn_params
            if params and len(params["scale"].ty.shape) == 0:
                params["axis"] = 0
            self.wrappers[wrapper.tensor_idx] = wrapper
        return [self.wrappers[i] for i in indices]

    def get_tensor_value(self, tensor_wrapper, is_sparse=False):
        if tensor_wrapper.tensor_idx in self.rewrites.folded:
            return self.rewrites.folded[tensor_wrapper.tensor_idx]
        return super().get_tensor_value(tensor_wrapper, is_sparse)

    def get_tensor_expr(self, tensor, is_sparse=False):
        if self.input_override is not None and self.input_override[0] == tensor.tensor_idx:
            return self.input_override[1]
        return super().get_tensor_expr(tensor, is_sparse)

    def shape_of(self, tensor) -> tuple[int, ...]:
        """The tensor's shape, () for a scalar (UNPACK of a vector)."""
        return tuple(int(d) for d in tensor.tensor.ShapeAsNumpy()) if tensor.tensor.ShapeLength() else ()

    def bound(self, expr, output) -> relax.Var:
        """`expr` bound, in the quantization of the TFLite tensor `output`."""
        var = self.bb.emit(expr)
        self.record_quant([(var, output)])
        return var

    def concatenated(self, parts, axis: int, output) -> relax.Var:
        """The concatenation of `parts` (raw integers) in the output's quantization, as the host kernel for
        CONCATENATION takes it: the integers are copied."""
        if not output.qnn_params:
            return self.bound(relax.op.concat(parts, axis), output)
        parts = [self.dequantize(self.bound(part, output), output) for part in parts]
        return self.bound(self.quantize(relax.op.concat(parts, axis), output), output)


def _as_list(ret):
    if isinstance(ret, relax.Tuple):
        return list(ret.fields)
    return list(ret) if isinstance(ret, (list, tuple)) else [ret]
