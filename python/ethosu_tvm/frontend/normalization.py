"""L2_NORMALIZATION for TVM's TFLite frontend, which refuses it on quantized tensors: x / sqrt(Σ x²) over the last
axis on the dequantized input, then quantized (the host pattern reads it back as the op; TFLite's int8 kernel is
integer arithmetic of its own).
"""
from __future__ import annotations

import tflite
from tvm import relax

from .converter import ConverterCore
from .tflite_file import builtin_options


class NormalizationConverters(ConverterCore):
    def convert_l2_normalization(self, op):
        """TFLite's int8 kernel takes no fused activation (LiteRT's Prepare refuses one)."""
        (data,) = self.get_input_tensors(op)
        (output,) = self.get_output_tensors(op)
        if not data.qnn_params:
            return super().convert_l2_normalization(op)
        options = builtin_options(op, tflite.L2NormOptions)
        if options.FusedActivationFunction() != tflite.ActivationFunctionType.NONE:
            raise ValueError(f"fused activation {options.FusedActivationFunction()} (TFLite's kernel takes none)")
        x = self.dequantize(self.get_tensor_expr(data), data)
        norm = relax.op.sqrt(relax.op.sum(relax.op.multiply(x, x), axis=[-1], keepdims=True))
        return self.quantize(relax.op.divide(x, norm), output)
