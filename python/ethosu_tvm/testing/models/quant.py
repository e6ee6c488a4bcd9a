"""What every op family shares: the quantized tensor (`QTensor`), the quantization covering a real range, TFLite's
option codes and the checks of layer arguments."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import tflite

OP = tflite.BuiltinOperator
ACTIVATIONS = {"NONE": 0, "RELU": 1, "RELU_N1_TO_1": 2, "RELU6": 3}
PADDINGS = {"SAME": 0, "VALID": 1}


@dataclass(frozen=True)
class QTensor:
    """A quantized activation tensor of the model being built."""

    index: int
    shape: tuple[int, ...]
    dtype: np.dtype
    scale: float
    zero_point: int
    rms: float  # estimated root-mean-square of the real values, to size downstream quantization

    @property
    def real_range(self) -> tuple[float, float]:
        """The real values this tensor can represent."""
        info = np.iinfo(self.dtype)
        return self.scale * (info.min - self.zero_point), self.scale * (info.max - self.zero_point)


def quant_for_range(lo: float, hi: float, dtype) -> tuple[float, int]:
    """Scale and zero point covering [lo, hi] (always including 0); int16 is symmetric with zero point 0."""
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    if hi - lo < 1e-6:
        hi = lo + 1e-6
    info = np.iinfo(dtype)
    if np.dtype(dtype) == np.int16:
        return max(-lo, hi) / info.max, 0
    scale = (hi - lo) / (info.max - info.min)
    zero_point = int(np.clip(round(info.min - lo / scale), info.min, info.max))
    return scale, zero_point


def pair(value, name: str) -> tuple[int, int]:
    values = (value, value) if isinstance(value, int) else tuple(value)
    if len(values) != 2 or any(not isinstance(v, (int, np.integer)) or v < 1 for v in values):
        raise ValueError(f"{name} must be a positive int or a pair of positive ints, got {value!r}")
    return int(values[0]), int(values[1])


def choice(value: str, options: dict, name: str) -> int:
    if value not in options:
        raise ValueError(f"{name} must be one of {', '.join(options)}, got {value!r}")
    return options[value]


def conv_out_size(size: int, kernel: int, stride: int, dilation: int, padding: str) -> int:
    effective = (kernel - 1) * dilation + 1
    out = -(-size // stride) if padding == "SAME" else (size - effective) // stride + 1
    if out < 1:
        raise ValueError(f"kernel extent {effective} does not fit an input of size {size} with {padding} padding")
    return out
