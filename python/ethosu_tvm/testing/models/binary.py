"""Elementwise ops of two tensors, with numpy broadcasting."""
from __future__ import annotations

import numpy as np

from .base import NetBase
from .quant import _ACTIVATIONS, _OP, QTensor, _choice


class BinaryOps(NetBase):
    """Add, sub, mul, minimum, maximum and squared difference; the output covers the operands' combined range."""

    def _binary(self, builtin, options_table, a: QTensor, b: QTensor, lo, hi, activation, out_scale, out_zp,
                extra=None) -> QTensor:
        if a.dtype != b.dtype:
            raise ValueError("both operands must have the same dtype")
        try:
            shape = tuple(np.broadcast_shapes(a.shape, b.shape))
        except ValueError:
            raise ValueError(f"shapes {a.shape} and {b.shape} do not broadcast") from None
        options = dict(extra or {})
        if activation is not None:
            options["FusedActivationFunction"] = _choice(activation, _ACTIVATIONS, "activation")
            if activation in ("RELU", "RELU6"):
                lo = 0.0
        y = self._result(a, shape, lo, hi, out_scale, out_zp)
        self.builder.add_operator(builtin, [a.index, b.index], [y.index], options_table, options)
        return y

    def add(self, a: QTensor, b: QTensor, activation: str = "NONE", out_scale=None, out_zp=None) -> QTensor:
        (alo, ahi), (blo, bhi) = a.real_range, b.real_range
        return self._binary(_OP.ADD, "AddOptions", a, b, alo + blo, ahi + bhi, activation, out_scale, out_zp,
                            {"PotScaleInt16": False})

    def sub(self, a: QTensor, b: QTensor, activation: str = "NONE", out_scale=None, out_zp=None) -> QTensor:
        (alo, ahi), (blo, bhi) = a.real_range, b.real_range
        return self._binary(_OP.SUB, "SubOptions", a, b, alo - bhi, ahi - blo, activation, out_scale, out_zp,
                            {"PotScaleInt16": False})

    def mul(self, a: QTensor, b: QTensor, activation: str = "NONE", out_scale=None, out_zp=None) -> QTensor:
        corners = [p * q for p in a.real_range for q in b.real_range]
        return self._binary(_OP.MUL, "MulOptions", a, b, min(corners), max(corners), activation, out_scale, out_zp)

    def minimum(self, a: QTensor, b: QTensor) -> QTensor:
        """MINIMUM compares raw integers, so both operands and the output share one quantization."""
        self._require_same_quant(a, b, "minimum")
        return self._binary(_OP.MINIMUM, "MaximumMinimumOptions", a, b, *a.real_range, None, a.scale, a.zero_point)

    def maximum(self, a: QTensor, b: QTensor) -> QTensor:
        """MAXIMUM compares raw integers, so both operands and the output share one quantization."""
        self._require_same_quant(a, b, "maximum")
        return self._binary(_OP.MAXIMUM, "MaximumMinimumOptions", a, b, *a.real_range, None, a.scale, a.zero_point)

    def squared_difference(self, a: QTensor, b: QTensor, out_scale=None, out_zp=None) -> QTensor:
        (alo, ahi), (blo, bhi) = a.real_range, b.real_range
        spread = max(abs(ahi - blo), abs(bhi - alo))
        return self._binary(_OP.SQUARED_DIFFERENCE, "SquaredDifferenceOptions", a, b, 0.0, spread * spread, None,
                            out_scale, out_zp)
