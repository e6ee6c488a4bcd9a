"""Import a quantized TFLite model into QDQ Relax: the model prepared for TVM's frontend (float I/O, shape
arithmetic, dilated convolutions, LSTM states), converted by our converter (`operators`), and what the later
stages need to know about the source model recorded on the module (`attributes`).
"""
from __future__ import annotations

from pathlib import Path

import tflite
import tvm
from tvm import relax
from tvm.relax.frontend.tflite import from_tflite as tvm_from_tflite
from tvm.relax.frontend.tflite.tflite_frontend import ExprTable

from .attributes import OpOutput, SourceOp, with_import_attrs
from .converter import Rewrites
from .dilated_conv import find_dilated_convs
from .errors import FloatModelError, ModelImportError, UnsupportedModelError, error_line
from .float_io import float_edges
from .graph_view import view
from .model_check import ModelConsistencyError, check_inputs_defined, operator_name
from .operators import Converter
from .recurrent import state_of, variable_states
from .refusals import check_computed_sizes, check_tensors
from .shape_folding import fold_shapes
from .tflite_file import ModelFormatError, read_model


def from_tflite(model: str | Path | bytes, strip_float_io: bool = False):
    """Import a TFLite file or flatbuffer into a QDQ Relax IRModule (with the source-op map attached).

    A model may take and give float32 through a QUANTIZE after each float input and a DEQUANTIZE before each float
    output (host kernels compute them); with `strip_float_io` those are left out, and the module takes and gives
    their integer tensors. Raises ModelFormatError, FloatModelError, DynamicShapeError or UnsupportedModelError.
    """
    buf = Path(model).read_bytes() if isinstance(model, (str, Path)) else bytes(model)
    original = read_model(buf)
    parsed, rewrites = _converted_view(original, strip_float_io)  # refuses CUSTOM (Vela) operators first
    try:
        check_inputs_defined(original)
    except ModelConsistencyError as err:
        raise ModelFormatError(str(err)) from None
    check_tensors(parsed.Subgraphs(0))
    instances = []
    checker = Converter(parsed, parsed.Subgraphs(0), ExprTable(), relax.BlockBuilder(), rewrites)

    def make_converter(*args):
        instances.append(Converter(*args, rewrites, checker.wrappers))  # the tensors the checker read
        return instances[-1]

    try:
        # Checked before TVM opens its function scope, so that a refusal leaves no half-built BlockBuilder behind.
        checker.check_unsupported_ops()
        mod = tvm_from_tflite(parsed, op_converter=make_converter)
    except (tvm.error.OpNotImplemented, tvm.error.OpAttributeInvalid, tvm.error.OpAttributeUnImplemented) as err:
        raise UnsupportedModelError(f"the TFLite frontend cannot convert the model: {error_line(err)}") from err
    except ModelImportError:
        # A converter refused an operator inside TVM's function scope, which leaves the block it began open: close
        # it, or TVM warns about it on stderr when the builder is freed.
        if instances:
            instances[0].bb._end_block()
        raise
    ops = _attribute_bindings(mod, parsed, instances[0].outputs_by_op)
    check_computed_sizes(mod, ops)
    mod, ops = _without_unused(mod, ops)
    graph = parsed.Subgraphs(0)
    count = len(rewrites.states)
    names = {kind: [graph.Tensors(int(i)).Name().decode() for i in indices[:len(indices) - count]]
             for kind, indices in (("inputs", graph.InputsAsNumpy()), ("outputs", graph.OutputsAsNumpy()))}
    states = [state_of(graph.Tensors(i)) for i in rewrites.states]
    return with_import_attrs(mod, ops, instances[0].quant_by_name, states, _op_outputs(original), names)


def _converted_view(model: tflite.Model, strip_float_io: bool) -> tuple[tflite.Model, Rewrites]:
    """The model TVM's frontend converts, and the rewrites its converter applies.

    Float I/O other than through a QUANTIZE after an input or a DEQUANTIZE before an output is rejected with one
    clear message; with `strip_float_io` those edge operators are hidden. Shape arithmetic over static shapes is
    folded to constants, and TensorFlow's dilated convolutions become one convolution (the operators they replace
    hidden).
    """
    graph = model.Subgraphs(0)
    kinds = [operator_name(model, graph.Operators(i)) for i in range(graph.OperatorsLength())]
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
    rewrites = Rewrites(folded.values, dilated, states)
    if not hidden and not states:
        return model, rewrites
    return view(model, frozenset(hidden), [*inputs, *states], [*outputs, *states]), rewrites


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
    return [SourceOp(i, operator_name(model, model.Subgraphs(0).Operators(j)), tuple(bindings[i]))
            for j, i in enumerate(bindings)]


def _without_unused(mod, ops: list[SourceOp]):
    """The module without the bindings no model output depends on, and the operators with the bindings left to
    them: an operator left none is `unused`. TFLite runs such an operator for nothing; Vela, which builds its graph
    back from the outputs, leaves it out, and so does this."""
    mod = relax.transform.DeadCodeElimination(["main"])(mod)
    kept = {binding.var.name for block in mod["main"].body.blocks for binding in block.bindings}
    result = []
    for op in ops:
        bindings = tuple(name for name in op.bindings if name in kept)
        result.append(SourceOp(op.index, op.op, bindings, unused=bool(op.bindings) and not bindings))
    return mod, result


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
