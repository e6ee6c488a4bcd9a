"""ADD and MUL as calls of CMSIS-NN's arm_elementwise_{add,mul}_{s8,s16}, where they are TFLite's arithmetic.

Both kernels walk two equal-sized vectors, so a broadcast stays on our kernel (TFLite Micro's CMSIS-NN ADD/MUL fall
back to the reference kernel there too). With the multipliers and shifts TFLite's Prepare derives (ADD: each
operand shifted left by 20 bits, 15 for int16, and rescaled to 2·max(s1, s2), the sum rescaled to the output; MUL:
the product rescaled by s1·s2/s_out in float32), every step is TFLite's: arm_nn_requantize's doubling high multiply
rounds as SaturatingRoundingDoublingHighMul does (VQRDMULH on MVE) and its divide by 2^n rounds half away from zero
as RoundingDivideByPOT; the offsets and clamps are TFLite's. The s16 kernels ignore the zero points, so they take
only zero ones. A left shift that could overflow int32 (MUL's multiplier above 1) is left to our kernel, whose C
matches LiteRT's there.
"""
from __future__ import annotations

import numpy as np

from ...quantization import (ELEMENTWISE_INPUT_SHIFT, add_multipliers, add_output_refusal, mul_multiplier,
                             quantize_multiplier, undefined_left_shift)
from ...target import CmsisNnTarget
from ..kernel import HostKernel, KernelParam
from ..spec import Binary, QuantTensor
from .calls import SUFFIXES, Call


def _reals(op: Binary) -> tuple[float, ...]:
    """The real multipliers of each operand then of the output (ADD), or of the output alone (MUL)."""
    if op.kind == "add":
        return add_multipliers(op.lhs.scale, op.rhs.scale, op.output.scale, ELEMENTWISE_INPUT_SHIFT[op.output.dtype])
    return (mul_multiplier(op.lhs.scale, op.rhs.scale, op.output.scale),)


def _largest_offset_value(tensor: QuantTensor) -> int:
    low, high = tensor.limits
    return max(high - tensor.zero_point, tensor.zero_point - low)


def _arithmetic_refusal(op: Binary) -> str:
    """Why TFLite's own kernel refuses the scales, or why CMSIS-NN's int32 left shift could overflow."""
    real = _reals(op)[-1]
    if op.kind == "add":
        return add_output_refusal(real)
    problem = undefined_left_shift(real)
    if problem:
        return problem
    shift = quantize_multiplier(real)[1]
    if shift > 0 and _largest_offset_value(op.lhs) * _largest_offset_value(op.rhs) << shift >= 1 << 31:
        return f"a product shifted left by {shift} bits could overflow int32"
    return ""


def _malformed(op: Binary) -> bool:
    """Operands that do not broadcast to the output, or constants and shared operands our kernel refuses too."""
    try:
        broadcast = np.broadcast_shapes(op.lhs.shape, op.rhs.shape)
    except ValueError:
        return True
    constants = [(values, tensor) for values, tensor in ((op.lhs_values, op.lhs), (op.rhs_values, op.rhs))
                 if values is not None]
    return (broadcast != op.output.shape or len(constants) > 1 or op.one_input and (op.lhs != op.rhs or constants)
            or any(values.shape != tensor.shape or str(values.dtype) != tensor.dtype for values, tensor in constants))


def refusal(op: Binary) -> str:
    """'' when CMSIS-NN's elementwise kernel computes `op` exactly as TFLite does, else why not."""
    if op.kind not in ("add", "mul"):
        return "CMSIS-NN has no kernel used for this op"
    dtypes = {op.lhs.dtype, op.rhs.dtype, op.output.dtype}
    if len(dtypes) != 1 or op.output.dtype not in SUFFIXES:
        return f"{'/'.join(sorted(dtypes))} operands and output (CMSIS-NN's take int8 or int16 alike)"
    if _malformed(op):
        return "operands that make no elementwise op of its output"
    if not op.lhs.size == op.rhs.size == op.output.size:
        return "a broadcast (CMSIS-NN's elementwise kernels take operands of equal size)"
    if op.output.dtype == "int16" and any(t.zero_point for t in (op.lhs, op.rhs, op.output)):
        return "int16 zero points other than 0 (CMSIS-NN's s16 kernels take none)"
    return _arithmetic_refusal(op)


def build_call(op: Binary, name: str, cpu: CmsisNnTarget, target) -> HostKernel:
    """The HostKernel `name` calling arm_elementwise_<kind>_<s8|s16> on `op`, which `refusal` accepted: its
    operands' pointers are the kernel's inputs, then a constant operand's values (the runner's order)."""
    operands = (("lhs", op.lhs, op.lhs_values), ("rhs", op.rhs, op.rhs_values))[:1 if op.one_input else 2]
    call = Call(op, name, cpu, [KernelParam(label, tensor.dtype, tensor.shape, "input")
                                 for label, tensor, values in operands if values is None])
    for label, _, values in operands:
        if values is not None:
            call.constant(label, np.ascontiguousarray(values).reshape(-1))
    lhs, rhs = operands[0][0], operands[-1][0]
    low, high = op.clamp or op.output.limits
    multipliers = ["{}, {}".format(*quantize_multiplier(real)) for real in _reals(op)]
    output = [f"{op.output.zero_point}", multipliers[-1], f"{low}, {high}", f"{op.output.size}"]
    if op.kind == "add":
        arguments = [lhs, rhs, f"{-op.lhs.zero_point}", multipliers[0], f"{-op.rhs.zero_point}", multipliers[1],
                     f"{ELEMENTWISE_INPUT_SHIFT[op.output.dtype]}", "output", *output]
    else:
        arguments = [lhs, rhs, f"{-op.lhs.zero_point}", f"{-op.rhs.zero_point}", "output", *output]
    function = f"arm_elementwise_{op.kind}_{SUFFIXES[op.output.dtype]}"
    return call.kernel(target, function, ", ".join(arguments))
