"""The C of one CMSIS-NN call: a function that fills the parameter structs from the spec (zero points, strides,
padding, dilation, the activation's clamp; per-channel multipliers and shifts as constants), hands the kernel its
planned context buffer, and calls it: the s8 kernel for int8 specs, the s16 one (int64 bias) for 16x8 ones. The
spec has passed `exactness.refusal`, so the call's status is success."""
from __future__ import annotations

import numpy as np

from ...target import MVE, CmsisNnTarget
from ..kernel import HostKernel, KernelParam, ScratchBuffer
from ..ops.weighted import bias, channel_multipliers
from ..spec import Conv2D, FullyConnected, Pool2D, op_name
from .scratch import ConvGeometry, avgpool_buffer_size, conv_buffer_size, depthwise_buffer_size, kernel_sums_size
from .scratch_s16 import conv_s16_buffer_size, depthwise_s16_buffer_size

HEADER = "arm_nnfunctions.h"
LIBRARY = "cmsis-nn"  # HostKernel.library of its calls
CONTEXT = "context"  # the name of the planned context buffer
_C_TYPES = {"int8": "int8_t", "int16": "int16_t", "int32": "int32_t", "int64": "int64_t"}
SUFFIXES = {"int8": "s8", "int16": "s16"}  # CMSIS-NN's kernel name suffix per activation dtype
# (activation dtype, depthwise) -> the conv wrapper's context buffer size
_CONV_BUFFERS = {("int8", False): conv_buffer_size, ("int8", True): depthwise_buffer_size,
                 ("int16", False): conv_s16_buffer_size, ("int16", True): depthwise_s16_buffer_size}


def _tile(pair) -> str:
    """A cmsis_nn_tile from an (h, w) pair: the struct holds w first."""
    return f"{{{pair[1]}, {pair[0]}}}"


def _dims(shape) -> str:
    return "{" + ", ".join(str(int(d)) for d in shape) + "}"


def _activation(op) -> str:
    low, high = op.clamp or op.output.limits
    return f"{{{low}, {high}}}"


class Call:
    """Collects one kernel's params and struct definitions, then writes its C function."""

    def __init__(self, op, name: str, cpu: CmsisNnTarget, inputs: list[KernelParam] | None = None):
        """`inputs`: the kernel's input params, by default the op's one `input`."""
        self.op, self.name, self.cpu = op, name, cpu
        self.params = [KernelParam("input", op.input.dtype, op.input.shape, "input")] if inputs is None else inputs
        self.lines: list[str] = []
        self.scratch: tuple[ScratchBuffer, ...] = ()

    def constant(self, name: str, value: np.ndarray) -> str:
        self.params.append(KernelParam(name, value.dtype.name, value.shape, "constant", value))
        return name

    def context(self, nbytes: int, constant: str = "") -> None:
        """The cmsis_nn_context: a planned buffer of `nbytes` (none when 0), or the read-only `constant`."""
        if constant:
            buffer = f"(void*){constant}"
        elif nbytes:
            self.scratch = (ScratchBuffer(CONTEXT, nbytes),)
            buffer = CONTEXT
        else:
            buffer = "0"
        self.lines.append(f"  const cmsis_nn_context ctx = {{{buffer}, {nbytes}}};")

    def declare(self, struct: str, name: str, value: str, per_call: bool = False) -> None:
        """A struct of the call; static unless its value reads the function's params (`per_call`), so that
        nothing is stored at each call around CMSIS-NN's."""
        self.lines.append(f"  {'' if per_call else 'static '}const {struct} {name} = {value};")

    def kernel(self, target, function: str, arguments: str) -> HostKernel:
        self.params.append(KernelParam("output", self.op.output.dtype, self.op.output.shape, "output"))
        signature = [f"{'' if p.role == 'output' else 'const '}{_C_TYPES[p.dtype]}* {p.name}" for p in self.params]
        signature += [f"uint8_t* {s.name}" for s in self.scratch]
        banner = (f"/* {self.name}: {op_name(self.op)} as a call of CMSIS-NN's {function} (ethosu_tvm), target "
                  f"cmsis-nn -mcpu={self.cpu.mcpu} ({self.cpu.extension}) */")
        source = "\n".join([banner, f"#include \"{HEADER}\"", f"void {self.name}({', '.join(signature)}) {{",
                            *self.lines, f"  (void){function}({arguments});", "}", ""])
        return HostKernel(self.name, op_name(self.op), source, tuple(self.params), self.scratch, target, LIBRARY)


def _weighted_constants(call: Call, op, channels: int, float32_product: bool = False) -> None:
    call.constant("weights", np.ascontiguousarray(op.weights))
    call.constant("bias", bias(op, channels).value)
    for constant in channel_multipliers(op, channels, float32_product):
        call.constant(constant.tensor.op.name, constant.value)


def _conv(op: Conv2D, name: str, cpu: CmsisNnTarget, target) -> HostKernel:
    call = Call(op, name, cpu)
    batches, height, width, depth = op.input.shape
    channels, kernel = op.output.shape[3], op.weights.shape[1:3]
    _weighted_constants(call, op, channels)
    geometry = ConvGeometry(op.input.shape, op.output.shape, kernel, depth, op.stride, op.padding[:2], op.dilation)
    call.context(_CONV_BUFFERS[op.input.dtype, op.depthwise](geometry, cpu.extension))
    suffix, bias_argument = SUFFIXES[op.input.dtype], "bias"
    if op.depthwise:
        struct, function = "cmsis_nn_dw_conv_params", f"arm_depthwise_conv_wrapper_{suffix}"
        multiplier = f"{channels // depth}, "
        filter_dims = (1, *kernel, channels)
    else:
        struct, function, multiplier = "cmsis_nn_conv_params", f"arm_convolve_wrapper_{suffix}", ""
        filter_dims = (channels, *kernel, depth)
        if suffix == "s16":  # its bias comes with a flag: int64
            call.declare("cmsis_nn_bias_data", "bias_data", "{bias, false}", per_call=True)
            bias_argument = "&bias_data"
    call.declare(struct, "params", f"{{{-op.input.zero_point}, {op.output.zero_point}, {multiplier}"
                 f"{_tile(op.stride)}, {_tile(op.padding[:2])}, {_tile(op.dilation)}, {_activation(op)}}}")
    call.declare("cmsis_nn_per_channel_quant_params", "quant", "{(int32_t*)multiplier, (int32_t*)shift}",
                 per_call=True)
    for dims, shape in (("input_dims", op.input.shape), ("filter_dims", filter_dims),
                        ("bias_dims", (1, 1, 1, channels)), ("output_dims", op.output.shape)):
        call.declare("cmsis_nn_dims", dims, _dims(shape))
    return call.kernel(target, function, "&ctx, &params, &quant, &input_dims, input, &filter_dims, weights, "
                                         f"&bias_dims, {bias_argument}, &output_dims, output")


def kernel_sums(op: FullyConnected) -> np.ndarray:
    """What arm_vector_sum_s8 computes for the MVE path at each inference, here once: bias + input offset · the sum
    of each unit's weights (int32, wrapping as the C does)."""
    sums = bias(op, op.weights.shape[0]).value.astype(np.int64)
    sums += -op.input.zero_point * op.weights.astype(np.int64).sum(axis=1)
    return ((sums + (1 << 31)) % (1 << 32) - (1 << 31)).astype(np.int32)


def _fully_connected(op: FullyConnected, name: str, cpu: CmsisNnTarget, target) -> HostKernel:
    call = Call(op, name, cpu)
    units, depth = op.weights.shape
    _weighted_constants(call, op, units, float32_product=True)
    if op.input.dtype == "int16":
        call.context(0)  # arm_fully_connected_s16 takes no buffer on any level
    else:
        sums = kernel_sums_size(units, cpu.extension)
        call.context(sums, call.constant("kernel_sums", kernel_sums(op)) if cpu.extension == MVE else "")
    call.declare("cmsis_nn_fc_params", "params",
                 f"{{{-op.input.zero_point}, 0, {op.output.zero_point}, {_activation(op)}}}")
    call.declare("cmsis_nn_per_tensor_quant_params", "quant", "{multiplier[0], shift[0]}", per_call=True)
    rows = op.input.size // depth
    for dims, shape in (("input_dims", (rows, 1, 1, depth)), ("filter_dims", (depth, 1, 1, units)),
                        ("bias_dims", (1, 1, 1, units)), ("output_dims", (rows, 1, 1, units))):
        call.declare("cmsis_nn_dims", dims, _dims(shape))
    return call.kernel(target, f"arm_fully_connected_{SUFFIXES[op.input.dtype]}", "&ctx, &params, &quant, "
                       "&input_dims, input, &filter_dims, weights, &bias_dims, bias, &output_dims, output")


def _pool(op: Pool2D, name: str, cpu: CmsisNnTarget, target) -> HostKernel:
    call = Call(op, name, cpu)
    call.context(avgpool_buffer_size(op.input.shape[3], cpu.extension) if op.kind == "avg" else 0)
    call.declare("cmsis_nn_pool_params", "params", f"{{{_tile(op.stride)}, {_tile(op.padding[:2])}, "
                                                   f"{_activation(op)}}}")
    for dims, shape in (("input_dims", op.input.shape), ("filter_dims", (1, *op.pool, 1)),
                        ("output_dims", op.output.shape)):
        call.declare("cmsis_nn_dims", dims, _dims(shape))
    function = f"arm_{'avgpool' if op.kind == 'avg' else 'max_pool'}_{SUFFIXES[op.input.dtype]}"
    return call.kernel(target, function, "&ctx, &params, &input_dims, input, &filter_dims, &output_dims, output")


_BUILDERS = {Conv2D: _conv, FullyConnected: _fully_connected, Pool2D: _pool}


def build_call(op, name: str, cpu: CmsisNnTarget, target) -> HostKernel:
    """The HostKernel `name` calling CMSIS-NN's kernel of `op` (which exactness.refusal accepted) on `cpu`."""
    return _BUILDERS[type(op)](op, name, cpu, target)
