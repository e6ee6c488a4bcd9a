"""Folding shape arithmetic to constants at import: SHAPE, and STRIDED_SLICE and PACK on its results.

Keras exports `tf.reshape(x, [tf.shape(x)[0], -1])` as SHAPE → STRIDED_SLICE → PACK → RESHAPE. The shapes are
static (a -1 batch in the shape signature is 1 in the shape itself), so the chain is a constant; TVM's frontend
refuses SHAPE in a quantized model instead. The folded operators are hidden from TVM and their outputs read as
constants.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import tflite

from .tflite_file import TFLITE_DTYPES, constant_value


@dataclass(frozen=True)
class FoldedShapes:
    """The operators folded away (indices) and the constant value of each tensor they computed."""

    ops: frozenset[int]
    values: dict[int, np.ndarray]


def fold_shapes(model: tflite.Model, kinds: list[str]) -> FoldedShapes:
    """Fold, in model order, every SHAPE and every 1-D STRIDED_SLICE or PACK whose inputs are all constant (but
    none that computes a model output)."""
    graph = model.Subgraphs(0)
    model_outputs = {int(t) for t in graph.OutputsAsNumpy()}
    values: dict[int, np.ndarray] = {}
    folded = set()
    for index, kind in enumerate(kinds):
        op = graph.Operators(index)
        inputs = [int(t) for t in op.InputsAsNumpy()]
        out = graph.Tensors(int(op.Outputs(0)))
        if int(op.Outputs(0)) in model_outputs:
            continue
        if kind == "SHAPE":
            value = np.array(graph.Tensors(inputs[0]).ShapeAsNumpy())
        elif kind in ("STRIDED_SLICE", "PACK"):
            operands = [values[t] if t in values else constant_value(model, t) for t in inputs]
            if any(v is None for v in operands):
                continue
            value = _strided_slice(op, *operands) if kind == "STRIDED_SLICE" else _pack(op, operands)
            if value is None:
                continue
        else:
            continue
        values[int(op.Outputs(0))] = value.astype(TFLITE_DTYPES[out.Type()])
        folded.add(index)
    return FoldedShapes(frozenset(folded), values)


def _options(op: tflite.Operator, table):
    options = table()
    raw = op.BuiltinOptions()
    options.Init(raw.Bytes, raw.Pos)
    return options


def _strided_slice(op: tflite.Operator, data, begin, end, strides) -> np.ndarray | None:
    """A 1-D slice with begin/end/shrink masks (None for anything else, which stays with TVM)."""
    options = _options(op, tflite.StridedSliceOptions)
    if data.ndim != 1 or begin.size != 1 or options.EllipsisMask() or options.NewAxisMask() or options.Offset():
        return None
    if options.ShrinkAxisMask() & 1:
        return np.asarray(data[int(begin[0])])
    start = None if options.BeginMask() & 1 else int(begin[0])
    stop = None if options.EndMask() & 1 else int(end[0])
    return data[start:stop:int(strides[0])]


def _pack(op: tflite.Operator, operands: list[np.ndarray]) -> np.ndarray:
    return np.stack(operands, axis=_options(op, tflite.PackOptions).Axis())
