"""What conv, depthwise conv and fully connected share: dtype rules, bias and per-channel requantization."""
from __future__ import annotations

import numpy as np

from ..spec import UnsupportedHostOp, Weighted, op_name
from ..te_kernel import Constant, constant, require_dtype, tflite_multipliers

# accumulator (and bias) dtype per activation dtype: int8, or int16 activations with int8 weights ("16x8")
ACCUMULATORS = {"int8": "int32", "int16": "int64"}


def accumulator_dtype(op: Weighted, widening: bool = False) -> str:
    """The accumulator dtype, after checking the op's dtypes; `widening` also allows an int8 → int16 op (a fully
    connected one of an integer LSTM's gates)."""
    name = op_name(op)
    require_dtype(name, op.input, tuple(ACCUMULATORS))
    require_dtype(name, op.output, (op.input.dtype, "int16") if widening else (op.input.dtype,))
    if op.weights.dtype != np.int8:
        raise UnsupportedHostOp(f"{name}: weights must be int8, got {op.weights.dtype}")
    return ACCUMULATORS[op.input.dtype]


def bias(op: Weighted, channels: int) -> Constant:
    """The bias constant (zeros without one), in the accumulator dtype."""
    dtype = ACCUMULATORS[op.input.dtype]
    values = op.bias if op.bias is not None else np.zeros(channels, dtype=dtype)
    if values.dtype != np.dtype(dtype) or values.shape != (channels,):
        raise UnsupportedHostOp(f"{op_name(op)}: the bias must be {dtype} with one value per output channel")
    return constant(values, "bias")


def channel_multipliers(op: Weighted, channels: int, float32_product: bool = False) -> list[Constant]:
    """Per-output-channel `multiplier` and `shift` constants for input_scale · weight_scale / output_scale.

    TFLite computes the ratio in double, except for a per-tensor fully connected op, whose scale product it takes
    in float32 (`float32_product`).
    """
    scales = np.asarray(op.weight_scales, dtype=np.float64)
    if float32_product and scales.size == 1:
        reals = np.float64(np.float32(op.input.scale) * np.float32(scales)) / op.output.scale
    else:
        reals = op.input.scale * scales / op.output.scale
    multipliers, shifts = tflite_multipliers(op_name(op), np.broadcast_to(reals, (channels,)))
    return [constant(multipliers, "multiplier"), constant(shifts, "shift")]
