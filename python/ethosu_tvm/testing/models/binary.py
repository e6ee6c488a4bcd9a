"""Ops of two tensors, with numpy broadcasting: elementwise ones and BATCH_MATMUL."""
from __future__ import annotations

import math

import numpy as np

from .base import NetBase
from .quant import ACTIVATIONS, OP, QTensor, choice


def _broadcast_shape(a: QTensor, b: QTensor) -> tuple[int, ...]:
    if a.dtype != b.dtype:
        raise ValueError("both operands must have the same dtype")
    try:
        return tuple(np.broadcast_shapes(a.shape, b.shape))
    except ValueError:
        raise ValueError(f"shapes {a.shape} and {b.shape} do not broadcast") from None


class BinaryOps(NetBase):
    """Add, sub, mul, div, minimum, maximum and squared difference (the output covers the operands' combined range);
    batch matmul, add_n and the comparisons (bool outputs)."""

    def _binary(self, builtin, options_table, a: QTensor, b: QTensor, lo, hi, activation, out_scale, out_zp,
                extra=None) -> QTensor:
        shape = _broadcast_shape(a, b)
        options = dict(extra or {})
        if activation is not None:
            options["FusedActivationFunction"] = choice(activation, ACTIVATIONS, "activation")
            if activation in ("RELU", "RELU6"):
                lo = 0.0
        y = self._result(a, shape, lo, hi, out_scale, out_zp)
        self.builder.add_operator(builtin, [a.index, b.index], [y.index], options_table, options)
        return y

    def add(self, a: QTensor, b: QTensor, activation: str = "NONE", out_scale=None, out_zp=None) -> QTensor:
        (alo, ahi), (blo, bhi) = a.real_range, b.real_range
        return self._binary(OP.ADD, "AddOptions", a, b, alo + blo, ahi + bhi, activation, out_scale, out_zp,
                            {"PotScaleInt16": False})

    def sub(self, a: QTensor, b: QTensor, activation: str = "NONE", out_scale=None, out_zp=None) -> QTensor:
        (alo, ahi), (blo, bhi) = a.real_range, b.real_range
        return self._binary(OP.SUB, "SubOptions", a, b, alo - bhi, ahi - blo, activation, out_scale, out_zp,
                            {"PotScaleInt16": False})

    def mul(self, a: QTensor, b: QTensor, activation: str = "NONE", out_scale=None, out_zp=None) -> QTensor:
        corners = [p * q for p in a.real_range for q in b.real_range]
        return self._binary(OP.MUL, "MulOptions", a, b, min(corners), max(corners), activation, out_scale, out_zp)

    def minimum(self, a: QTensor, b: QTensor) -> QTensor:
        """MINIMUM compares raw integers, so both operands and the output share one quantization."""
        self._require_same_quant(a, b, "minimum")
        return self._binary(OP.MINIMUM, "MaximumMinimumOptions", a, b, *a.real_range, None, a.scale, a.zero_point)

    def maximum(self, a: QTensor, b: QTensor) -> QTensor:
        """MAXIMUM compares raw integers, so both operands and the output share one quantization."""
        self._require_same_quant(a, b, "maximum")
        return self._binary(OP.MAXIMUM, "MaximumMinimumOptions", a, b, *a.real_range, None, a.scale, a.zero_point)

    def div(self, a: QTensor, b: QTensor, activation: str = "NONE", out_scale=None, out_zp=None) -> QTensor:
        """DIV; the default output covers quotients by divisors of at least a quarter of b's largest magnitude
        (smaller ones saturate)."""
        (alo, ahi), (blo, bhi) = a.real_range, b.real_range
        bound = max(-alo, ahi) / (max(-blo, bhi) / 4)
        return self._binary(OP.DIV, "DivOptions", a, b, -bound, bound, activation, out_scale, out_zp)

    def squared_difference(self, a: QTensor, b: QTensor, out_scale=None, out_zp=None) -> QTensor:
        (alo, ahi), (blo, bhi) = a.real_range, b.real_range
        spread = max(abs(ahi - blo), abs(bhi - alo))
        return self._binary(OP.SQUARED_DIFFERENCE, "SquaredDifferenceOptions", a, b, 0.0, spread * spread, None,
                            out_scale, out_zp)

    def batch_matmul(self, a: QTensor, b: QTensor, adj_x: bool = False, adj_y: bool = False, out_scale=None,
                     out_zp=None) -> QTensor:
        """BATCH_MATMUL of a [..., rows, depth] by b [..., depth, columns] (the last two axes swapped by adj_x,
        adj_y), the batch axes broadcasting; the output covers 3 RMS of the sum of depth products."""
        if a.dtype != b.dtype:
            raise ValueError("both operands must have the same dtype")
        if len(a.shape) < 2 or len(b.shape) < 2:
            raise ValueError("BATCH_MATMUL operands need at least two axes")
        rows, depth = a.shape[-2:][::-1] if adj_x else a.shape[-2:]
        rhs_depth, columns = b.shape[-2:][::-1] if adj_y else b.shape[-2:]
        if depth != rhs_depth:
            raise ValueError(f"shapes {a.shape} (adj_x={adj_x}) and {b.shape} (adj_y={adj_y}) do not multiply")
        try:
            batch = tuple(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
        except ValueError:
            raise ValueError(f"batch axes of {a.shape} and {b.shape} do not broadcast") from None
        rms = math.sqrt(depth) * a.rms * b.rms
        y = self._result(a, batch + (rows, columns), -3.0 * rms, 3.0 * rms, out_scale, out_zp, rms)
        self.builder.add_operator(OP.BATCH_MATMUL, [a.index, b.index], [y.index], "BatchMatMulOptions",
                                  {"AdjX": adj_x, "AdjY": adj_y})
        return y

    def add_n(self, inputs: list[QTensor], out_scale=None, out_zp=None) -> QTensor:
        """ADD_N of same-shaped, same-quantized inputs (TFLite Micro's int8 kernel requires it; LiteRT has none)."""
        if len(inputs) < 2:
            raise ValueError("add_n needs at least 2 inputs")
        first = inputs[0]
        for t in inputs[1:]:
            self._require_same_quant(first, t, "add_n")
            if t.shape != first.shape:
                raise ValueError(f"add_n needs equal shapes, got {first.shape} and {t.shape}")
        lo, hi = first.real_range
        y = self._result(first, first.shape, lo * len(inputs), hi * len(inputs), out_scale, out_zp)
        self.builder.add_operator(OP.ADD_N, [t.index for t in inputs], [y.index])
        return y

    def _comparison(self, builtin, a: QTensor, b: QTensor) -> QTensor:
        """A comparison's bool output of the broadcast shape (its operands may be quantized differently)."""
        shape = _broadcast_shape(a, b)
        index = self.builder.add_tensor(self._name("compared"), shape, np.bool_)
        self.builder.add_operator(builtin, [a.index, b.index], [index])
        return QTensor(index, shape, np.dtype(np.bool_), 1.0, 0, 0.0)

    def equal(self, a: QTensor, b: QTensor) -> QTensor:
        return self._comparison(OP.EQUAL, a, b)

    def not_equal(self, a: QTensor, b: QTensor) -> QTensor:
        return self._comparison(OP.NOT_EQUAL, a, b)

    def greater(self, a: QTensor, b: QTensor) -> QTensor:
        return self._comparison(OP.GREATER, a, b)

    def greater_equal(self, a: QTensor, b: QTensor) -> QTensor:
        return self._comparison(OP.GREATER_EQUAL, a, b)

    def less(self, a: QTensor, b: QTensor) -> QTensor:
        return self._comparison(OP.LESS, a, b)

    def less_equal(self, a: QTensor, b: QTensor) -> QTensor:
        return self._comparison(OP.LESS_EQUAL, a, b)

    def select_v2(self, condition: int, x: QTensor, y: QTensor) -> QTensor:
        """SELECT_V2 of x and y by the bool tensor `condition` (its index), the three broadcast against each other;
        the output has x's quantization (TFLite copies the integers whatever the quantizations)."""
        shape = self.builder.tensor_shape(condition)
        try:
            shape = tuple(np.broadcast_shapes(shape, _broadcast_shape(x, y)))
        except ValueError:
            raise ValueError(f"the condition's shape {shape} does not broadcast with {x.shape} and {y.shape}") from None
        out = self._same_quant(x, shape)
        self.builder.add_operator(OP.SELECT_V2, [condition, x.index, y.index], [out.index])
        return out
