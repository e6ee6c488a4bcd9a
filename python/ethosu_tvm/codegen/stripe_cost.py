"""The cost of one stripe of an NPU primitive, as the cascader ranks its plans by: the operation code generation
would build for the stripe, with the block config it would choose (`block_config`) and its weights encoded as it
encodes them (`weight_stream`), estimated by the cost model (`operation_cost`).

`codegen.cascade` hands these costs to the cascader's graph (`cascader.ethosu.cascader_graph`), so the cascader
itself never reads an NPU operation.
"""
from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np
from ethosu.vela import api as vapi
from ethosu.vela.register_command_stream_util import get_dma_memory_accesses, get_op_memory_accesses

from ..arch import from_vela, round_up
from ..arch.cycles import dma_cycles, vela_arch
from ..arch.system import CONSTANTS_REGION, DEFAULT_SYSTEM, SCRATCH_REGION, System
from ..legalize.ops import (
    BinaryElementwise,
    Concatenate,
    Conv2D,
    DepthwiseConv2D,
    Identity,
    NpuOp,
    Operand,
    Pad,
    Pooling,
    Slice,
    Softmax,
    Transpose,
    TransposeConv2D,
    Upscale,
    average_as_depthwise,
)
from .block_config import buffered_block_config, choose_block_config
from .operation_cost import BufferingCost, OperationCost, buffering_cost, estimate_cycles
from .npu_operands import POOLING_OPS, scalar_value
from .softmax import SoftmaxSequence
from .weight_stream import convolution_traversal, encoded_stream_bytes


def _feature_map(operand: Operand, shape: tuple[int, int, int],
                 region: int = SCRATCH_REGION) -> vapi.NpuFeatureMap:
    fm = vapi.NpuFeatureMap()
    fm.data_type = vapi.NpuDataType[operand.tensor.dtype.upper()]
    fm.region = region
    fm.shape = vapi.NpuShape3D(*shape)
    fm.quantization = vapi.NpuQuantization(scale_f32=operand.scale, zero_point=operand.zero_point)
    fm.layout = vapi.NpuLayout.NHWC
    return fm


def _window(op, ofm: tuple[int, int, int], ifm: tuple[int, int, int], kernel: tuple[int, int],
            dilation: tuple[int, int]) -> tuple[vapi.NpuKernel, vapi.NpuPadding]:
    """Kernel and padding of a windowed stripe. Strides of single-element OFM axes are 1, as code generation
    programs them. The padding is the rows/columns the window needs beyond the IFM stripe: before it up to the
    primitive's top/left padding, the rest after. Which side is approximate; the estimate depends on the total."""
    strides = tuple(stride if size > 1 else 1 for stride, size in zip(op.strides, ofm[:2]))
    pads = []
    for axis, before in ((0, op.padding.top), (1, op.padding.left)):
        needed = (ofm[axis] - 1) * strides[axis] + (kernel[axis] - 1) * dilation[axis] + 1
        missing = max(needed - ifm[axis], 0)
        pads.append((min(before, missing), missing - min(before, missing)))
    (top, bottom), (left, right) = pads
    return (vapi.NpuKernel(kernel[1], kernel[0], strides[1], strides[0], dilation[1], dilation[0]),
            vapi.NpuPadding(top=top, left=left, bottom=bottom, right=right))


def _stripe_operation(op: NpuOp, ofm: tuple, ifms: tuple) -> vapi.NpuBlockOperation:
    """A shape-only Vela operation for one stripe, of the kind code generation builds for the primitive."""
    ifm = (op.inputs[0], ifms[0])
    if isinstance(op, DepthwiseConv2D):
        npu_op = vapi.NpuConvDepthWiseOperation()
        npu_op.kernel, npu_op.padding = _window(op, ofm, ifms[0], op.kernel, op.dilation)
    elif isinstance(op, TransposeConv2D):  # the window moves over the IFM upscaled by 2
        npu_op = vapi.NpuConv2DOperation()
        npu_op.block_traversal = convolution_traversal(op)
        height, width, depth = ifms[0]
        npu_op.kernel, npu_op.padding = _window(op, ofm, (2 * height, 2 * width, depth), op.kernel, op.dilation)
        npu_op.ifm_upscale = vapi.NpuResamplingMode.TRANSPOSE
    elif isinstance(op, Conv2D):
        npu_op = vapi.NpuConv2DOperation()
        npu_op.block_traversal = convolution_traversal(op)
        npu_op.kernel, npu_op.padding = _window(op, ofm, ifms[0], op.kernel, op.dilation)
    elif isinstance(op, Pooling) and op.upscale:  # the window moves over the IFM upscaled by 2
        npu_op = vapi.NpuPoolingOperation(POOLING_OPS[op.pooling_type])
        height, width, depth = ifms[0]
        npu_op.kernel, npu_op.padding = _window(op, ofm, (2 * height, 2 * width, depth), op.pool_shape, (1, 1))
        npu_op.ifm_upscale = vapi.NpuResamplingMode.NEAREST
    elif isinstance(op, Pooling):
        npu_op = vapi.NpuPoolingOperation(POOLING_OPS[op.pooling_type])
        npu_op.kernel, npu_op.padding = _window(op, ofm, ifms[0], op.pool_shape, (1, 1))
    elif isinstance(op, BinaryElementwise):
        npu_op = vapi.NpuElementWiseOperation(vapi.NpuElementWiseOp[op.operator])
        if op.ifm2_scalar is not None:
            npu_op.ifm2, npu_op.ifm2_scalar = _feature_map(op.ifm2, (1, 1, 1)), scalar_value(op)
            npu_op.reversed_operands = op.reversed_operands
        elif op.ifm2_constant is not None:
            shape = tuple(1 if size == 1 else extent for size, extent in zip(op.ifm2_constant.shape[1:], ofm[-3:]))
            second = (op.ifm2, shape, CONSTANTS_REGION)
            npu_op.reversed_operands = op.reversed_operands
            if ifms[0] != ofm:  # the feature map broadcasts: the constant is the IFM
                ifm, second = second, ifm
                npu_op.reversed_operands = not op.reversed_operands
            npu_op.ifm2 = _feature_map(*second)
        else:
            second = (op.ifm2, ifms[1])
            if ifms[0] != ofm:  # the NPU broadcasts only IFM2
                ifm, second = second, ifm
                npu_op.reversed_operands = True
            npu_op.ifm2 = _feature_map(*second)
    elif isinstance(op, (Identity, Concatenate, Pad, Slice, Transpose, Upscale)):
        # A 1x1 max pool reading the IFM's bytes in the OFM's shape (so a reshape's IFM shape does not matter); a
        # concatenation's or pad's copies are costed as one copy of the whole OFM.
        npu_op = vapi.NpuPoolingOperation(vapi.NpuPoolingOp.MAX)
        npu_op.kernel = vapi.NpuKernel(1, 1)
        npu_op.padding = vapi.NpuPadding(top=0, left=0, bottom=0, right=0)
        ifm = (op.inputs[0], ofm)
        if isinstance(op, Slice):  # a strided slice reads rows and columns apart
            stride_y, stride_x = (stride if size > 1 else 1 for stride, size in zip(op.strides, ofm[:2]))
            npu_op.kernel = vapi.NpuKernel(1, 1, stride_x, stride_y)
            ifm = (op.ifm, ifms[0])
        if isinstance(op, Identity) and op.lut is not None:
            npu_op.activation = vapi.NpuActivation(vapi.NpuActivationOp.TABLE_LOOKUP)
            npu_op.activation.lookup_table_index = 0
    else:
        raise TypeError(f"no NPU operation for {type(op).__name__}")
    npu_op.ifm = _feature_map(*ifm)
    npu_op.ofm = _feature_map(op.ofm, ofm)
    return npu_op


def _hwc(shape) -> tuple[int, int, int]:
    return tuple(int(size) for size in shape[-3:])


def stripe_cost(op: NpuOp, ofm_shape, ifm_shapes, accelerator: vapi.NpuAccelerator,
                system: System = DEFAULT_SYSTEM) -> OperationCost:
    """The estimated cost of one NPU operation computing a stripe of primitive `op`: OFM stripe `ofm_shape` from IFM
    stripes `ifm_shapes` (one per input, in `op.inputs` order), each NHWC or HWC, with the block config code
    generation would choose (without a preferred depth). Convolution weights count at their encoded size; the
    padding is approximated (see `_window`). An average pool whose IFM block fits nowhere is costed as the depthwise
    convolution code generation falls back to. Costed in `system`. Memoised on (op identity, shapes, accelerator,
    system): the result for equal arguments is the same object. Raises ValueError when no block config fits."""
    return _stripe_cost(op, _hwc(ofm_shape), tuple(_hwc(shape) for shape in ifm_shapes), accelerator, system)


def _softmax_cost(op: Softmax, ofm: tuple, accelerator: vapi.NpuAccelerator, system: System) -> OperationCost:
    """A softmax stripe costed as the sequence of block operations code generation emits for it, plus what its LUT
    DMA outlasts the block operation before it (the stream issues the DMA after that operation, and the next one
    waits for the table: see `sim.cycles.Timeline`)."""
    def placed(operand: Operand) -> vapi.NpuFeatureMap:
        fm = _feature_map(operand, ofm)
        element = np.dtype(operand.tensor.dtype).itemsize
        fm.strides = vapi.NpuShape3D(height=ofm[1] * ofm[2] * element, width=ofm[2] * element, depth=element)
        fm.tiles = vapi.NpuTileBox(height_0=ofm[0], height_1=ofm[0], width_0=ofm[1], addresses=[0, 0, 0, 0])
        return fm

    def constant(data: bytes) -> vapi.NpuAddressRange:
        return vapi.NpuAddressRange(CONSTANTS_REGION, 0, round_up(len(data)))

    sequence = SoftmaxSequence(op, placed(op.ifm), placed(op.ofm), (SCRATCH_REGION, 0), constant,
                               from_vela(accelerator).lut_base, op.op_name)
    costs, stalls, previous = [], 0, None
    for npu_op in sequence.operations():
        if isinstance(npu_op, vapi.NpuDmaOperation):
            transfer = math.ceil(dma_cycles(system, npu_op.src.region, npu_op.dest.region, npu_op.src.length))
            overlap = costs[-1].overlap if costs and not _conflict(previous, npu_op, accelerator) else 0
            stalls += max(transfer - overlap, 0)
        else:
            npu_op.block_config = choose_block_config(npu_op, accelerator, system=system)
            if npu_op.block_config is None:
                raise ValueError(f"{op.op_name}: no block config fits a stripe of {ofm} in {accelerator.name}'s SHRAM")
            costs.append(estimate_cycles(npu_op, accelerator, system=system))
            previous = npu_op
    total = OperationCost(*(sum(getattr(cost, name) for cost in costs) for name in OperationCost.__dataclass_fields__))
    return dataclasses.replace(total, cycles=total.cycles + stalls)


def _conflict(npu_op: vapi.NpuBlockOperation, dma: vapi.NpuDmaOperation, accelerator: vapi.NpuAccelerator) -> bool:
    """Whether Vela's stream generator makes the DMA wait for the operation before it (the memory it writes is
    memory the operation touches: on the smaller SHRAMs a table's LUT slot lies in the banks every operation
    may write)."""
    arch = vela_arch(from_vela(accelerator))
    return get_op_memory_accesses(npu_op, arch).conflicts(get_dma_memory_accesses(dma))


@functools.lru_cache(maxsize=1 << 16)
def _stripe_cost(op: NpuOp, ofm: tuple, ifms: tuple, accelerator: vapi.NpuAccelerator,
                 system: System) -> OperationCost:
    if isinstance(op, Softmax):
        return _softmax_cost(op, ofm, accelerator, system)
    if isinstance(op, Pooling) and op.pooling_type != "MAX":
        npu_op = _stripe_operation(op, ofm, ifms)
        unpadded = npu_op.padding == vapi.NpuPadding(top=0, left=0, bottom=0, right=0)
        if unpadded and choose_block_config(npu_op, accelerator, system=system) is None:  # what code generation does
            return _stripe_cost(average_as_depthwise(op), ofm, ifms, accelerator, system)
    return estimate_cycles(_streamed(op, ofm, ifms, accelerator, system), accelerator, system=system)


@functools.lru_cache(maxsize=1 << 16)
def _streamed(op: NpuOp, ofm: tuple, ifms: tuple, accelerator: vapi.NpuAccelerator,
              system: System) -> vapi.NpuBlockOperation:
    """`_costed_stripe_operation` with its streams in the constants, built once: a convolution stripe's cost and
    its buffering option (`stripe_buffering`) both read it. Nothing changes it once built."""
    return _costed_stripe_operation(op, ofm, ifms, accelerator, system)


def _costed_stripe_operation(op: NpuOp, ofm: tuple, ifms: tuple, accelerator: vapi.NpuAccelerator,
                             system: System, region: int = CONSTANTS_REGION) -> vapi.NpuBlockOperation:
    """The stripe's operation with the block config code generation would choose and, for a convolution, its
    encoded streams in `region` (the constants, or a weight buffer in SRAM), its feature maps where code generation
    keeps a launch's intermediates (`System.cache_region`). Raises ValueError when no block config fits."""
    npu_op = _stripe_operation(op, ofm, ifms)
    for fm in (npu_op.ifm, npu_op.ifm2, npu_op.ofm):
        if fm is not None:
            fm.region = system.cache_region
    if isinstance(op, Conv2D) and region != CONSTANTS_REGION:
        npu_op.block_config = buffered_block_config(npu_op, op, 0, op.weights.shape[0], accelerator, system=system)
    else:
        npu_op.block_config = choose_block_config(npu_op, accelerator, system=system)
    if npu_op.block_config is None:
        raise ValueError(f"{op.op_name}: no block config fits a stripe of {ofm} in {accelerator.name}'s SHRAM")
    if isinstance(op, Conv2D):  # every stripe reads the primitive's whole (compressed) weight stream
        weights, biases = encoded_stream_bytes(op, 0, op.weights.shape[0], npu_op.block_config.depth, accelerator)
        npu_op.weights = [vapi.NpuAddressRange(region, 0, weights)]
        npu_op.biases = [vapi.NpuAddressRange(region, 0, biases)]
    return npu_op


def stripe_buffering(op: NpuOp, ofm_shape, ifm_shapes, accelerator: vapi.NpuAccelerator,
                     system: System = DEFAULT_SYSTEM) -> BufferingCost | None:
    """The options of one stripe of a convolution primitive as code generation weighs them: streaming (see
    `stripe_cost`) and reading a copy in SRAM (`buffered_block_config`), with no previous operation to overlap
    (the cascader's plans add that, `cascader.buffering`); None for every other primitive, which code generation
    never buffers."""
    if not isinstance(op, Conv2D):
        return None
    return _stripe_buffering(op, _hwc(ofm_shape), tuple(_hwc(shape) for shape in ifm_shapes), accelerator, system)


@functools.lru_cache(maxsize=1 << 16)
def _stripe_buffering(op: Conv2D, ofm: tuple, ifms: tuple, accelerator: vapi.NpuAccelerator,
                      system: System) -> BufferingCost:
    return buffering_cost(_streamed(op, ofm, ifms, accelerator, system),
                          _costed_stripe_operation(op, ofm, ifms, accelerator, system, system.cache_region),
                          accelerator, system)
