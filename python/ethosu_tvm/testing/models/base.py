"""The model under construction: its inputs and outputs, and the tensors and constants every op family adds."""
from __future__ import annotations

import math

import numpy as np

from ..tflite_builder import ModelBuilder, Quantization
from .quant import OP, QTensor, quant_for_range

_DEFAULT_ZERO_POINTS = {"int8": -3, "uint8": 125, "int16": 0}


class NetBase:
    """Model I/O and the shared tensor helpers; `Net` adds a mixin of layer methods per op family."""

    def __init__(self, seed: int = 0, description: str = "ethosu_tvm.testing.models",
                 per_tensor_axis: int | None = None, float_io: bool = False):
        """`float_io`: the model takes and gives float32, as TFLite's converter exports it, with a QUANTIZE after
        each input and a DEQUANTIZE before each output (the integer tensors are then `input_<i>_int` and
        `output_<i>_int`)."""
        self.rng = np.random.default_rng(seed)
        self.builder = ModelBuilder(description, per_tensor_axis)
        self.float_io = float_io
        self._inputs: list[QTensor] = []
        self._outputs: list[QTensor] = []
        self._io_tensors: dict[str, list[int]] = {"inputs": [], "outputs": []}
        self._names = 0

    def _name(self, kind: str) -> str:
        self._names += 1
        return f"{kind}_{self._names}"

    def _activation(self, shape, dtype, scale: float, zero_point: int, name: str | None = None,
                    rms: float | None = None, data: np.ndarray | None = None) -> QTensor:
        """A new activation tensor (a constant with `data`); without an `rms` estimate its values are taken as
        uniform over its range."""
        dtype = np.dtype(dtype)
        if dtype not in (np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int16)):
            raise ValueError(f"activations must be int8, uint8 or int16, got {dtype}")
        if dtype == np.int16 and zero_point != 0:
            raise ValueError("int16 activations must have zero point 0")
        info = np.iinfo(dtype)
        if not info.min <= zero_point <= info.max:
            raise ValueError(f"zero point {zero_point} is outside the {dtype} range")
        if not scale > 0:
            raise ValueError(f"scales must be positive, got {scale}")
        if any(int(d) < 1 for d in shape):
            raise ValueError(f"every dimension must be positive, got shape {tuple(shape)}")
        index = self.builder.add_tensor(name or self._name("t"), shape, dtype, data,
                                        quantization=Quantization((float(scale),), (int(zero_point),)))
        lo, hi = scale * (info.min - zero_point), scale * (info.max - zero_point)
        rms = rms if rms is not None else math.sqrt((lo * lo + lo * hi + hi * hi) / 3)
        return QTensor(index, tuple(int(d) for d in shape), dtype, float(scale), int(zero_point), float(rms))

    def input(self, shape, dtype="int8", scale: float | None = None, zero_point: int | None = None,
              float_edge: bool | None = None) -> QTensor:
        """A model input; int8 defaults to scale 0.02 and zero point -3, uint8 to the same reals (zero point 125),
        int16 to scale 1/2048. `float_edge` puts a float32 input and a QUANTIZE before this one (default: the
        model's `float_io`), for models mixing float and integer I/O."""
        is16 = np.dtype(dtype) == np.int16
        scale = scale if scale is not None else (1 / 2048 if is16 else 0.02)
        zero_point = zero_point if zero_point is not None else _DEFAULT_ZERO_POINTS.get(np.dtype(dtype).name, -3)
        name = f"input_{len(self._io_tensors['inputs'])}"
        float_edge = self.float_io if float_edge is None else float_edge
        tensor = self._activation(shape, dtype, scale, zero_point, name=f"{name}_int" if float_edge else name)
        self._inputs.append(tensor)
        self._io_tensors["inputs"].append(self._float_edge(tensor, name, OP.QUANTIZE) if float_edge
                                          else tensor.index)
        return tensor

    def plain_input(self, shape, dtype) -> int:
        """A model input without quantization (a bool condition, int32 indices; float_io leaves it as it is); its
        tensor index."""
        index = self.builder.add_tensor(f"input_{len(self._io_tensors['inputs'])}", shape, dtype)
        self._io_tensors["inputs"].append(index)
        return index

    def constant(self, shape, dtype, scale: float, zero_point: int, avoid: int | None = None) -> QTensor:
        """A quantized constant operand with values drawn from the seed over the whole integer range, except
        `avoid` (a divisor's zero point)."""
        info = np.iinfo(dtype)
        size = tuple(int(d) for d in shape)
        if avoid is None:
            data = self.rng.integers(info.min, info.max, size=size, endpoint=True, dtype=dtype)
        else:
            data = self.rng.integers(info.min, info.max - 1, size=size, endpoint=True).astype(np.int64)
            data = (data + (data >= avoid)).astype(dtype)
        return self._activation(shape, dtype, scale, zero_point, name=self._name("const"), data=data)

    def output(self, tensor: QTensor, float_edge: bool | None = None) -> None:
        """Mark a model output; it is named output_0, output_1, ... in order (a model input, or a tensor already
        given, keeps its name: a DEQUANTIZE of it gives the new one). `float_edge` gives it as float32 through a
        DEQUANTIZE (default: the model's `float_io`)."""
        name = f"output_{len(self._outputs)}"
        float_edge = self.float_io if float_edge is None else float_edge
        if tensor not in self._inputs + self._outputs:
            self.builder.rename_tensor(tensor.index, f"{name}_int" if float_edge else name)
        self._outputs.append(tensor)
        self._io_tensors["outputs"].append(self._float_edge(tensor, name, OP.DEQUANTIZE) if float_edge
                                           else tensor.index)

    def _float_edge(self, tensor: QTensor, name: str, builtin: int) -> int:
        """The float32 tensor `name` that a QUANTIZE turns into `tensor`, or a DEQUANTIZE computes from it."""
        edge = self.builder.add_tensor(name, tensor.shape, np.float32)
        inputs, outputs = ([edge], [tensor.index]) if builtin == OP.QUANTIZE else ([tensor.index], [edge])
        self.builder.add_operator(builtin, inputs, outputs)
        return edge

    def build(self) -> bytes:
        inputs, outputs = self._io_tensors["inputs"], self._io_tensors["outputs"]
        return self.builder.build(inputs, outputs, [f"input_{i}" for i in range(len(inputs))],
                                  [f"output_{i}" for i in range(len(outputs))])

    def _result(self, x: QTensor, shape, lo: float, hi: float, out_scale, out_zp, rms=None, dtype=None) -> QTensor:
        """The output tensor (of `dtype`, default the input's): given quantization, or one covering [lo, hi]."""
        dtype = x.dtype if dtype is None else dtype
        scale, zero_point = quant_for_range(lo, hi, dtype)
        return self._activation(shape, dtype, out_scale if out_scale is not None else scale,
                                out_zp if out_zp is not None else zero_point, rms=rms)

    def _same_quant(self, x: QTensor, shape) -> QTensor:
        return self._activation(shape, x.dtype, x.scale, x.zero_point)

    def _const(self, data: np.ndarray, quantization: Quantization | None = None) -> int:
        return self.builder.add_tensor(self._name("const"), data.shape, data.dtype, data, quantization)

    @staticmethod
    def _require_same_quant(a: QTensor, b: QTensor, op: str) -> None:
        if (a.scale, a.zero_point) != (b.scale, b.zero_point):
            raise ValueError(f"{op} needs both operands to share one scale and zero point")
