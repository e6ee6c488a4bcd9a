"""Folding shape arithmetic to constants at import: SHAPE, and STRIDED_SLICE and PACK on its results; and TILE and
BROADCAST_TO of a constant.

Keras exports `tf.reshape(x, [tf.shape(x)[0], -1])` as SHAPE → STRIDED_SLICE → PACK → RESHAPE. The shapes are
static (a -1 batch in the shape signature is 1 in the shape itself), so the chain is a constant; TVM's frontend
refuses SHAPE in a quantized model instead. TFLite's converter folds a TILE or BROADCAST_TO of a constant itself;
one left in the file copies the constant's integers, which no kernel need do at run time. The folded operators are
hidden from TVM and their outputs read as constants.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import tflite

from .tflite_file import TFLITE_DTYPES, builtin_options, constant_value


@dataclass(frozen=True)
class FoldedShapes:
    """The operators folded away (indices) and the constant value of each tensor they computed."""

    ops: frozenset[int]
    values: dict[int, np.ndarray]


def fold_shapes(model: tflite.Model, kinds: list[str]) -> FoldedShapes:
    """Fold, in model order, every SHAPE, every 1-D STRIDED_SLICE or PACK whose inputs are all constant and every
    TILE or BROADCAST_TO of a constant into the shape its output declares (but none that computes a model
    output)."""
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
        elif kind in _FOLDS:
            operands = [values[t] if t in values else constant_value(model, t) for t in inputs]
            if any(v is None for v in operands):
                continue
            value = _FOLDS[kind](op, operands, out)
            if value is None:
                continue
        else:
            continue
        values[int(op.Outputs(0))] = value.astype(TFLITE_DTYPES[out.Type()])
        folded.add(index)
    return FoldedShapes(frozenset(folded), values)


def _strided_slice(op: tflite.Operator, data, begin, end, strides) -> np.ndarray | None:
    """A 1-D slice with begin/end/shrink masks (None for anything else, which stays with TVM)."""
    options = builtin_options(op, tflite.StridedSliceOptions)
    if data.ndim != 1 or begin.size != 1 or options.EllipsisMask() or options.NewAxisMask() or options.Offset():
        return None
    if options.ShrinkAxisMask() & 1:
        return np.asarray(data[int(begin[0])])
    start = None if options.BeginMask() & 1 else int(begin[0])
    stop = None if options.EndMask() & 1 else int(end[0])
    return data[start:stop:int(strides[0])]


def _pack(op: tflite.Operator, operands: list[np.ndarray]) -> np.ndarray:
    return np.stack(operands, axis=builtin_options(op, tflite.PackOptions).Axis())


def _copies(fold, operands: list[np.ndarray], out: tflite.Tensor) -> np.ndarray | None:
    """TILE's or BROADCAST_TO's `fold` of its constant input into the shape its output declares, where the types
    agree (None otherwise: the conversion names what is wrong)."""
    declared = tuple(int(d) for d in out.ShapeAsNumpy()) if out.ShapeLength() else ()
    if len(operands) != 2 or operands[0].dtype != TFLITE_DTYPES[out.Type()]:
        return None
    return fold(operands[0], [int(d) for d in operands[1].reshape(-1)], declared)


def _tile(data: np.ndarray, multiples: list[int], declared: tuple[int, ...]) -> np.ndarray | None:
    """Compared before copying: an absurd multiple allocates nothing."""
    if len(multiples) != data.ndim or min(multiples, default=1) < 1 or \
            tuple(d * m for d, m in zip(data.shape, multiples)) != declared:
        return None
    return np.tile(data, multiples)


def _broadcast_to(data: np.ndarray, shape: list[int], declared: tuple[int, ...]) -> np.ndarray | None:
    if tuple(shape) != declared:
        return None
    try:
        return np.broadcast_to(data, declared).copy()  # NumPy's broadcasting rules are BROADCAST_TO's
    except ValueError:  # not a broadcast of `data`
        return None


_FOLDS = {
    "STRIDED_SLICE": lambda op, operands, out: _strided_slice(op, *operands),
    "PACK": lambda op, operands, out: _pack(op, operands),
    "TILE": lambda op, operands, out: _copies(_tile, operands, out),
    "BROADCAST_TO": lambda op, operands, out: _copies(_broadcast_to, operands, out),
}
