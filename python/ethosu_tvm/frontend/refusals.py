"""The checks that refuse a model TFLite's kernels refuse, or compute in a way the import would not reproduce,
each with a one-line reason naming the tensor or operator: shapes no tensor may have, int16 ADD/SUB on TFLite's
shift-only path, scales TFLite's int8 kernels refuse or leave undefined.

Every check raises UnsupportedModelError (DynamicShapeError for a dynamic shape).
"""
from __future__ import annotations

import math

import numpy as np
import tflite

from ..quantization import FLOAT32_FUNCTIONS, float32_table_overflow, hard_swish_refusal, softmax_input_multiplier
from .errors import DynamicShapeError, UnsupportedModelError
from .model_check import MAX_ELEMENTS
from .tflite_file import builtin_options

# Quantized operators TVM's converter refuses, met in real models: what to tell the user instead of TVM's text.
NOT_SUPPORTED_YET = dict.fromkeys(("LSTM", "BIDIRECTIONAL_SEQUENCE_LSTM"),
                                  "of the integer LSTMs only UNIDIRECTIONAL_SEQUENCE_LSTM is supported")


def check_tensors(graph: tflite.SubGraph) -> None:
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


def check_operator(converter, op, name: str, where: str) -> None:
    """The refusals of operator `op` (`name`, its builtin name) before it is converted; `where` names it."""
    _check_pot_scale_int16(converter, op, name, where)
    _check_scales(converter, op, name, where)


def _check_pot_scale_int16(converter, op, name: str, where: str) -> None:
    """int16 ADD/SUB asking for power-of-two scaling (pot_scale_int16, the schema's default) with every scale a
    power of two: TFLite then runs a shift-only kernel of its own, which rounds the shifted operand alone; with equal
    scales nothing shifts and it equals the rescaling kernel we build, otherwise not."""
    options = {"ADD": tflite.AddOptions, "SUB": tflite.SubOptions}.get(name)
    if options is None:
        return
    tensors = converter.get_input_tensors(op)[:2] + converter.get_output_tensors(op)
    if any(t.tensor.Type() != tflite.TensorType.INT16 for t in tensors):
        return
    pot_scale = op.BuiltinOptions() is None or builtin_options(op, options).PotScaleInt16()
    scales = {float(t.tensor.Quantization().Scale(0)) for t in tensors if _is_power_of_two(t)}
    if pot_scale and len(scales) > 1 and all(map(_is_power_of_two, tensors)):
        raise UnsupportedModelError(f"{where}: int16 with power-of-two scaling (pot_scale_int16) of unequal scales "
                                    "is not supported; convert the model with pot_scale_int16 false")


def _check_scales(converter, op, name: str, where: str) -> None:
    """Scales of int8 SOFTMAX, LOG_SOFTMAX, HARD_SWISH and ELU that TFLite's kernels refuse, or leave undefined
    (`_SCALE_REFUSALS`)."""
    refusal = _SCALE_REFUSALS.get(name)
    if refusal is None:
        return
    data, out = converter.get_input_tensors(op)[0], converter.get_output_tensors(op)[0]
    if data.tensor.Type() != tflite.TensorType.INT8 or not data.qnn_params or not out.qnn_params:
        return
    reason = refusal(op, _scale_and_zero_point(data), _scale_and_zero_point(out))
    if reason:
        raise UnsupportedModelError(f"{where}: {reason}")


def _scale_and_zero_point(tensor) -> tuple[float, int]:
    params = tensor.qnn_params
    return float(params["scale"].value.numpy().reshape(-1)[0]), int(params["zero_point"].value.numpy().reshape(-1)[0])


def _softmax_refusal(op, data: tuple[float, int], _) -> str:
    """TFLite's int8 SOFTMAX takes beta · input scale as a multiplier with a left shift and refuses a model where
    it is none (at most 2^-26)."""
    beta, scale = builtin_options(op, tflite.SoftmaxOptions).Beta(), data[0]
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


def check_output_shapes(items, outputs, where: str) -> None:
    """Refuse an output tensor declared with another number of elements than its operator computes: LiteRT resizes
    it, TFLite Micro's kernels abort (ADD) or write the computed elements alone, leaving the rest uninitialised
    (RELU). The same elements in another shape (a reduction to a scalar declared (1,)) are what TFLite Micro writes
    and are kept. A computed shape that no tensor may have is named as such first."""
    for item, output in zip(items, outputs):
        shapes = tensor_shapes(item.ty)
        if len(shapes) != 1:
            continue
        (computed,) = shapes
        check_size(computed, where)
        declared = tuple(int(d) for d in output.tensor.ShapeAsNumpy()) if output.tensor.ShapeLength() else ()
        if math.prod(computed) != math.prod(declared):
            raise UnsupportedModelError(f"{where}: output {output.tensor.Name().decode()!r} is declared with shape "
                                        f"{declared}, but the operator computes shape {computed}")


def tensor_shapes(ty) -> list[tuple[int, ...]]:
    """The static shapes in a binding's type (a tuple's fields each)."""
    from tvm import relax

    if isinstance(ty, relax.TupleType):
        return [shape for field in ty.fields for shape in tensor_shapes(field)]
    if isinstance(ty, relax.TensorType) and isinstance(ty.shape, relax.ShapeExpr):
        return [tuple(int(d) for d in ty.shape.values)]
    return []


def check_size(shape: tuple[int, ...], where: str) -> None:
    """Refuse a computed shape that is negative in size, empty or larger than the file's tensors may be."""
    elements = math.prod(shape)
    problem = ("has a negative extent" if any(d < 0 for d in shape) else
               "has no elements" if elements == 0 else
               f"has {elements:,} elements; the limit is {MAX_ELEMENTS:,}" if elements > MAX_ELEMENTS else None)
    if problem:
        raise UnsupportedModelError(f"{where} computes a tensor of shape {shape}, which {problem}")


def check_computed_sizes(mod, ops) -> None:
    """Refuse a tensor that the operators' attributes make empty, negative in size or larger than the file's tensors
    may be (a window larger than its input, paddings of millions, a stride that wraps around), naming the operator
    (of `ops`, the SourceOps) that computes it. The file's own shapes were checked before conversion; these are the
    shapes TVM derived from them."""
    owner = {name: op for op in ops for name in op.bindings}
    for block in mod["main"].body.blocks:
        for binding in block.bindings:
            for shape in tensor_shapes(binding.var.ty):
                op = owner.get(binding.var.name)
                check_size(shape, f"operator #{op.index} {op.op}" if op else "the model")
