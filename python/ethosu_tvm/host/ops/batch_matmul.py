"""BATCH_MATMUL (int8): acc = Σ_k (lhs − lhs_zp) · (rhs − rhs_zp), requantized, + output_zp, clamped.

TFLite's reference kernel takes the multiplier as lhs_scale · rhs_scale in float32, then / output_scale in double
(GetQuantizedConvolutionMultipler), and requantizes the int32 sum with the double-rounding multiply (LiteRT's
FULLY_CONNECTED rounds once: they differ by one LSB now and then, and the tests pin this down). adj_x and adj_y only
change which index of an operand is the contraction; batch axes broadcast (right-aligned, size 1 repeats).
"""
from __future__ import annotations

import numpy as np
from tvm import te

from ..fixed_point import multiply_by_quantized_multiplier
from ..spec import BatchMatMul, op_name
from ..te_kernel import (
    Constant,
    TeKernel,
    attach,
    require,
    require_dtype,
    saturate,
    split_reduction_init,
    tflite_multiplier,
)
from .binary import operand


def _matrix(shape: tuple[int, ...], adjoint: bool) -> tuple[int, int]:
    """An operand's (rows, depth) for the lhs or (depth, columns) for the rhs, after the adjoint swap."""
    return (shape[-1], shape[-2]) if adjoint else (shape[-2], shape[-1])


def _element(tensor, shape: tuple[int, ...], batch_rank: int, adjoint: bool):
    """Index an operand by output batch indices and its two matrix indices (in the product's order)."""
    offset = batch_rank - (len(shape) - 2)

    def at(batch, first, second):
        index = tuple(0 if d == 1 else batch[offset + k] for k, d in enumerate(shape[:-2]))
        return tensor[index + ((second, first) if adjoint else (first, second))]

    return at


def define(op: BatchMatMul) -> TeKernel:
    name = op_name(op)
    for tensor in (op.lhs, op.rhs, op.output):
        require_dtype(name, tensor, ("int8",))
    require(len(op.lhs.shape) >= 2 and len(op.rhs.shape) >= 2, name, "operands need at least two axes")
    (rows, depth), (rhs_depth, columns) = _matrix(op.lhs.shape, op.adj_x), _matrix(op.rhs.shape, op.adj_y)
    try:
        batch = tuple(np.broadcast_shapes(op.lhs.shape[:-2], op.rhs.shape[:-2]))
    except ValueError:
        batch = None
    require(depth == rhs_depth and batch is not None and batch + (rows, columns) == op.output.shape, name,
            f"{op.lhs.shape} (adj_x={op.adj_x}) by {op.rhs.shape} (adj_y={op.adj_y}) does not give {op.output.shape}")
    require(op.lhs_values is None or op.rhs_values is None, name, "both operands are constants")
    (lhs, lhs_shape), (rhs, rhs_shape) = operand(op.lhs, op.lhs_values, "lhs"), operand(op.rhs, op.rhs_values, "rhs")
    a = _element(lhs, lhs_shape, len(batch), op.adj_x)
    b = _element(rhs, rhs_shape, len(batch), op.adj_y)
    product_scale = float(np.float32(op.lhs.scale) * np.float32(op.rhs.scale))
    multiplier, shift = tflite_multiplier(name, product_scale / op.output.scale)
    k = te.reduce_axis((0, depth), "k")
    acc = te.compute(op.output.shape, lambda *i: te.sum(
        (a(i[:-2], i[-2], k).astype("int32") - op.lhs.zero_point)
        * (b(i[:-2], k, i[-1]).astype("int32") - op.rhs.zero_point), axis=k), name="acc")
    y = te.compute(op.output.shape, lambda *i: saturate(
        multiply_by_quantized_multiplier(acc(*i), multiplier, shift), op.output), name="output")
    rank = len(op.output.shape)

    def schedule(sch):
        attach(sch, "acc", "output", rank)
        split_reduction_init(sch, "acc", rank)

    return TeKernel(inputs=tuple(t for t in (lhs, rhs) if not isinstance(t, Constant)), output=y,
                    constants=tuple(t for t in (lhs, rhs) if isinstance(t, Constant)), schedule=schedule)
