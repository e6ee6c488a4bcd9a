"""ADD_N (int8) as TFLite Micro's reference kernel (LiteRT has no int8 ADD_N, so TFLite Micro is the reference).

Every input is offset by the shared zero point, shifted left by 20 bits and halved (the rescaling to twice the
input scale that ADD uses), the results summed and rescaled to the output by 2·input_scale / (2^20·output_scale).
TFLite Micro starts the sum from the rescaled offset of a zero input, so the result carries one extra
−zero_point·input_scale; the kernel keeps that term to stay bit-exact.
"""
from __future__ import annotations

from tvm import te

from ...quantization import add_output_refusal, quantize_multiplier
from ..fixed_point import multiply_by_quantized_multiplier
from ..spec import AddN
from ..te_kernel import TeKernel, activation, require, require_dtype, saturate, tflite_multiplier

_LEFT_SHIFT = 20


def define(op: AddN) -> TeKernel:
    first = op.inputs[0]
    require_dtype("add_n", op.output, ("int8",))
    for tensor in op.inputs:
        require_dtype("add_n", tensor, ("int8",))
        require((tensor.shape, tensor.scale, tensor.zero_point) == (first.shape, first.scale, first.zero_point)
                and tensor.size == op.output.size, "add_n", "inputs must share the output's shape and one quantization")
    input_multiplier = quantize_multiplier(0.5)  # input_scale / (2 · input_scale)
    real = 2.0 * first.scale / ((1 << _LEFT_SHIFT) * op.output.scale)
    refusal = add_output_refusal(real)  # TFLite Micro takes it as ADD does, below 1
    require(not refusal, "add_n", refusal)
    output_multiplier = tflite_multiplier("add_n", real)
    inputs = [activation(t, f"input{k}", (t.size,)) for k, t in enumerate(op.inputs)]

    def rescaled(value):
        return multiply_by_quantized_multiplier((value - first.zero_point) * (1 << _LEFT_SHIFT), *input_multiplier)

    def output(i):
        total = rescaled(0)
        for x in inputs:
            total = total + rescaled(x[i].astype("int32"))
        return saturate(multiply_by_quantized_multiplier(total, *output_multiplier), op.output)

    return TeKernel(inputs=tuple(inputs), output=te.compute((op.output.size,), output, name="output"))
