"""What :func:`~ethosu_tvm.frontend.importer.from_tflite` records about the source model as attributes of the Relax
module it returns, and their readers: the later stages read these, never the converter.

The source-op map (``ethosu.source_ops``, :func:`source_ops`) records for every TFLite operator the names of the
Relax bindings it produced in ``main``: the offload report needs one entry per source operator. The tensor map
(``ethosu.tensor_quant``, :func:`tensor_quant`) keeps the TFLite quantization of the tensors by Relax var name: ops
the frontend imports on raw integers (pools, pad, reshape) carry none in the graph itself.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

SOURCE_OPS_ATTR = "ethosu.source_ops"
TENSOR_QUANT_ATTR = "ethosu.tensor_quant"
# The indices of the operators no model output depends on (only when there are any).
UNUSED_OPS_ATTR = "ethosu.unused_ops"
MODEL_IO_ATTR = "ethosu.io"
# Each operator's output tensors (name, scales, zero points), for layer dumps; build-time only: the MLF's relax.txt
# leaves it out.
OP_OUTPUTS_ATTR = "ethosu.op_outputs"
STATES_ATTR = "ethosu.states"


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


@dataclass(frozen=True)
class State:
    """A variable tensor: its name (a model input and output after import) and the byte every element starts as
    (TFLite resets a variable tensor to its zero point when int8, else to 0)."""

    name: str
    fill: int


def with_import_attrs(mod, ops: list[SourceOp], quant_by_name: dict[str, tuple[float, int]], states: list[State],
                      outputs: list[list[OpOutput]], io_names: dict[str, list[str]]):
    """`mod` with everything the readers below read back."""
    mod = mod.with_attr(SOURCE_OPS_ATTR, json.dumps([[op.index, op.op, list(op.bindings)] for op in ops]))
    if any(op.unused for op in ops):
        mod = mod.with_attr(UNUSED_OPS_ATTR, json.dumps([op.index for op in ops if op.unused]))
    mod = mod.with_attr(TENSOR_QUANT_ATTR, json.dumps(quant_by_name))
    if states:
        mod = mod.with_attr(STATES_ATTR, json.dumps([[s.name, s.fill] for s in states]))
    mod = mod.with_attr(OP_OUTPUTS_ATTR, json.dumps([[[out.name, list(out.scales), list(out.zero_points)]
                                                      for out in op_outputs] for op_outputs in outputs]))
    return mod.with_attr(MODEL_IO_ATTR, json.dumps(io_names))


def op_outputs(mod) -> list[list[OpOutput]]:
    """The output tensors of each TFLite operator (by operator index), as :func:`from_tflite` recorded them."""
    text = mod.attrs[OP_OUTPUTS_ATTR] if mod.attrs is not None and OP_OUTPUTS_ATTR in mod.attrs else "[]"
    return [[OpOutput(name, tuple(scales), tuple(zero_points)) for name, scales, zero_points in outputs]
            for outputs in json.loads(str(text))]


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
