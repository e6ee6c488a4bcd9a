"""Reading the QDQ Relax form the TFLite frontend produces: constants, quantization parameters, shapes.

Shared by the partition checks, the NPU legalizer and the host side, which all need the same facts about matched
expressions.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from tvm import relax

from ..quantization import table_multipliers


@dataclass(frozen=True)
class Quant:
    """Affine quantization: real = scale * (q - zero_point); several scales mean per-axis along `axis`."""

    scale: np.ndarray  # float32, shape (1,) or (channels,)
    zero_point: np.ndarray  # int64, shape (1,) or (channels,)
    axis: int

    @property
    def per_axis(self) -> bool:
        return self.scale.size > 1

    @property
    def scalar_scale(self) -> float:
        return float(self.scale.reshape(-1)[0])

    @property
    def scalar_zero_point(self) -> int:
        return int(self.zero_point.reshape(-1)[0])


def const_value(expr) -> np.ndarray:
    """The NumPy value of a Relax constant (TVM 0.27 calls it GenericConst, with `.value`)."""
    return expr.value.numpy()


def is_const(expr) -> bool:
    return hasattr(expr, "value") and hasattr(expr.value, "numpy")


def quant_of(call) -> Quant:
    """Quantization parameters of a `relax.quantize` or `relax.dequantize` call with constant scale/zero point."""
    scale = np.asarray(const_value(call.args[1]), dtype=np.float32).reshape(-1)
    zero_point = np.asarray(const_value(call.args[2]), dtype=np.int64).reshape(-1)
    return Quant(scale, zero_point, int(call.attrs.axis))


def shape_of(expr) -> tuple[int, ...]:
    return tuple(int(d) for d in expr.ty.shape)


def dtype_of(expr) -> str:
    return str(expr.ty.dtype)


def prim_float(value) -> float:
    """A clip bound: a PrimValue/PrimExpr (T.float64(...)) or a Python number."""
    value = getattr(value, "value", value)
    return float(getattr(value, "value", value))


def bound_values(func: relax.Function) -> dict[relax.Var, relax.Expr]:
    """Map each bound var of the function body to its value (to look through dataflow vars)."""
    return {b.var: b.value for block in func.body.blocks for b in block.bindings}


def int_tuple(value) -> tuple[int, ...]:
    """A tuple of integer PrimExprs (a Relax call argument or attribute)."""
    return tuple(int(v) for v in (value.fields if isinstance(value, relax.Tuple) else value))


def slice_parameters(call: relax.Call) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """(axes, begin, strides) of a relax.strided_slice call; SLICE imports without strides (all 1)."""
    begin = int_tuple(call.args[2])
    strides = int_tuple(call.args[4]) if len(call.args) > 4 else (1,) * len(begin)
    return int_tuple(call.args[1]), begin, strides


REQUANTIZING_TABLES = ("relu", "clip", "requantize", "leaky_relu", "abs")


def table_reals(match) -> tuple[float, ...]:
    """The real multipliers TFLite requantizes a RELU, CLIP, QUANTIZE, LEAKY_RELU or ABS composite (`match`, a
    qdq.Match of one of REQUANTIZING_TABLES) with: what its int8 table is computed from."""
    alpha = float(match["core"].attrs.alpha) if match.kind == "leaky_relu" else 0.0
    return table_multipliers(match.kind, quant_of(match["ifm_dq"]).scalar_scale,
                             quant_of(match["quantize"]).scalar_scale, alpha)
