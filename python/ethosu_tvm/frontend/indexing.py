"""FILL and GATHER_ND for TVM's TFLite frontend, which refuses both on quantized tensors (GATHER_ND asserts its
inputs are not quantized, FILL reads a constant value as a feature map). Both copy the integers: TFLite's kernels
do not requantize (LiteRT's FILL refuses another output quantization, TFLite Micro's copies).
"""
from __future__ import annotations

import numpy as np
from tvm import relax

from .converter import ConverterCore
from .slicing import strided_slice
from .tflite_file import TFLITE_DTYPES


# GATHER and GATHER_ND at up to this many uneven constant indices (index tuples) are sliced and concatenated (each
# slice an NPU copy); more stay one gather, a host kernel (a concatenation's definition and its host kernel grow with
# its inputs).
GATHER_SLICES = 64


class IndexingConverters(ConverterCore):
    def convert_fill(self, op):
        """A full of the output's static shape; the dims must be a constant (or folded at import), the value a
        feature map (TFLite's converter folds a FILL of a constant)."""
        dims, value = self.get_input_tensors(op)
        (output,) = self.get_output_tensors(op)
        if self.has_expr(dims.tensor_idx) or not self.has_expr(value.tensor_idx):
            raise ValueError("dims computed at run time or a constant value (only constant dims and a value computed "
                             "at run time are supported)")
        shape = [int(d) for d in self.get_tensor_value(dims).reshape(-1)]
        if tuple(shape) != self.shape_of(output) or self.shape_of(value) != ():
            raise ValueError(f"dims {shape} and a value of shape {list(self.shape_of(value))} do not give the "
                             f"output {list(self.shape_of(output))}")
        return relax.op.full(shape, self.get_tensor_expr(value), dtype=str(TFLITE_DTYPES[output.tensor.Type()]))

    def convert_gather_nd(self, op):
        """Relax's gather_nd takes TFLite's index layout (the last axis indexes the params) in int64."""
        params, indices = self.get_input_tensors(op)
        if TFLITE_DTYPES[indices.tensor.Type()] not in (np.int32, np.int64):
            raise ValueError(f"{TFLITE_DTYPES[indices.tensor.Type()]} indices (supported: int32, int64)")
        depth = self.shape_of(indices)[-1] if self.shape_of(indices) else 0
        if not self.shape_of(indices) or depth > len(self.shape_of(params)):
            raise ValueError(f"indices of shape {list(self.shape_of(indices))} for params of rank "
                             f"{len(self.shape_of(params))}")
        if self.has_expr(indices.tensor_idx):
            index = relax.op.astype(self.get_tensor_expr(indices), "int64")
        else:
            values = self.get_tensor_value(indices).astype(np.int64)
            if values.size // depth <= GATHER_SLICES:
                return self._constant_gather_nd(params, values, depth, self.get_output_tensors(op)[0])
            index = relax.const(values, "int64")
        return relax.op.gather_nd(self.get_tensor_expr(params), index)

    def _constant_gather_nd(self, params, indices: np.ndarray, depth: int, output):
        """GATHER_ND at a few constant indices: one slice of `params` per index (the whole trailing axes at that
        point of the leading ones), concatenated in index order, then the output's shape; the copies the NPU
        makes."""
        shape = self.shape_of(params)
        points = indices.reshape(-1, depth)
        if np.any((points < 0) | (points >= np.array(shape[:depth]))):
            raise ValueError(f"indices {indices.tolist()} are out of range for {list(shape)}")
        x = self.get_tensor_expr(params)
        row = [1, *shape[depth:]]
        parts = [relax.op.reshape(strided_slice(x, [range(int(i), int(i) + 1) for i in point]
                                                + [range(d) for d in shape[depth:]], shape), row)
                 for point in points]
        return relax.op.reshape(self.concatenated(parts, 0, output), list(self.shape_of(output)))
