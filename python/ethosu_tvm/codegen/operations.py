"""NPU primitives → Vela API operations, with weights and scale/bias streams encoded into the constant pool.

Feature maps are NHWC, one tile. The NPU works on 3-D feature maps (height, width, depth), so the batch of 1 is
dropped. Block configs come from Vela's list of valid ones (see :func:`choose_block_config`).
"""
from __future__ import annotations

import dataclasses

import numpy as np
from ethosu.vela import api as vapi

from ..legalize.ops import (
    BinaryElementwise,
    Clamp,
    Conv2D,
    DepthwiseConv2D,
    Identity,
    Operand,
    Padding,
    Pooling,
    Requantize,
)
from .memory import CONSTANTS_REGION, ConstantPool, Placement

# DMA destination "region" meaning SHRAM (internal memory flag 0x100 + region 3), as the hardware defines it.
LUT_REGION = 0x100 | 3
from .vela_calls import CodegenError, vela_call

_DTYPES = {"int8": vapi.NpuDataType.INT8, "uint8": vapi.NpuDataType.UINT8, "int16": vapi.NpuDataType.INT16,
           "int32": vapi.NpuDataType.INT32}
_ROUNDING = {"TFL": vapi.NpuRoundingMode.TFL, "NATURAL": vapi.NpuRoundingMode.NATURAL,
             "TRUNCATE": vapi.NpuRoundingMode.TRUNCATE}
_ELEMENTWISE = {"ADD": vapi.NpuElementWiseOp.ADD, "SUB": vapi.NpuElementWiseOp.SUB,
                "MUL": vapi.NpuElementWiseOp.MUL, "MIN": vapi.NpuElementWiseOp.MIN,
                "MAX": vapi.NpuElementWiseOp.MAX}


def _feature_map(operand: Operand, placement: Placement) -> vapi.NpuFeatureMap:
    _, height, width, depth = operand.tensor.shape
    fm = vapi.NpuFeatureMap()
    fm.data_type = _DTYPES[operand.tensor.dtype]
    fm.region = placement.region
    fm.shape = vapi.NpuShape3D(height=height, width=width, depth=depth)
    fm.tiles = vapi.NpuTileBox(height_0=height, height_1=height, width_0=width,
                               addresses=[placement.offset, 0, 0, 0])
    fm.quantization = vapi.NpuQuantization(scale_f32=operand.scale, zero_point=operand.zero_point)
    fm.layout = vapi.NpuLayout.NHWC
    fm.name = operand.tensor.name
    return fm


def _strides(strides: tuple[int, int], ofm: Operand) -> tuple[int, int]:
    """(y, x) strides with those of single-element output axes set to 1: they never move the window, and the
    hardware only takes strides up to 3 (partitioning admits larger ones on such axes)."""
    _, height, width, _ = ofm.tensor.shape
    return (strides[0] if height > 1 else 1, strides[1] if width > 1 else 1)


def _activation(clamp: Clamp, ofm: Operand) -> vapi.NpuActivation:
    """Vela takes the clamp in real values and quantizes it with the OFM's quantization; invert that exactly."""
    activation = vapi.NpuActivation(vapi.NpuActivationOp.NONE_OR_RELU)
    activation.min = float(np.float32((clamp.min - ofm.zero_point) * np.float32(ofm.scale)))
    activation.max = float(np.float32((clamp.max - ofm.zero_point) * np.float32(ofm.scale)))
    return activation


def _find_block_configs(op: vapi.NpuBlockOperation, accelerator) -> list:
    try:
        return vapi.npu_find_block_configs(op, accelerator)
    except AssertionError:  # Vela asserts when no block's IFM/OFM buffers fit in SHRAM
        return []


def choose_block_config(op: vapi.NpuBlockOperation, accelerator, what: str) -> vapi.NpuShape3D | None:
    """Among Vela's valid block configs, the one needing the fewest blocks for the OFM; ties go to the smallest
    block volume (less work wasted on partial blocks at the edges). None when no block fits in SHRAM."""
    configs = vela_call(what, _find_block_configs, op, accelerator)
    if not configs:
        return None
    shape = op.ofm.shape

    def cost(block):
        blocks = -(-shape.height // block.height) * -(-shape.width // block.width) * -(-shape.depth // block.depth)
        return blocks, block.height * block.width * block.depth

    return min(configs, key=cost)


def average_as_depthwise(op: Pooling) -> DepthwiseConv2D:
    """An unpadded average pool as a depthwise convolution with unit weights and the pooling's global scale.

    Used when the pool's IFM block does not fit in SHRAM (large kernels on small configurations): the depthwise
    datapath splits kernels into sub-kernels. Both compute the window sum, then requantize it once by
    (scale, shift) = ((2^(31+k) + 2^k) // n, 31 + k), k = bit length of n − 1, with TFL rounding.
    """
    kernel_h, kernel_w = op.pool_shape
    taps = kernel_h * kernel_w
    k = (taps - 1).bit_length()
    channels = op.ofm.tensor.shape[3]
    scale = ((1 << (31 + k)) + (1 << k)) // taps
    return DepthwiseConv2D(
        ifm=op.ifm, ofm=op.ofm, weights=np.ones((channels, kernel_h, kernel_w, 1), dtype=np.int8),
        weight_zero_point=0, bias=np.zeros(channels, dtype=np.int64),
        requant=Requantize(np.array([scale], dtype=np.int64), np.array([31 + k], dtype=np.int64), "TFL"),
        strides=op.strides, clamp=op.clamp, source=op.source,
    )


def _lut_address(accelerator) -> int:
    """SHRAM byte address of LUT slot 0 (the last 2 KiB of SHRAM), from Vela's architecture description."""
    from ethosu.vela.architecture_features import Accelerator, create_default_arch

    arch = create_default_arch(Accelerator.from_npu_accelerator(accelerator))
    return int(arch.shram_lut_address)


class OperationBuilder:
    """Builds the Vela operations of one NpuGraph, appending its constants to a shared pool."""

    def __init__(self, accelerator, placements: dict[str, Placement], pool: ConstantPool):
        self.accelerator = accelerator
        self.placements = placements
        self.pool = pool

    def fm(self, operand: Operand) -> vapi.NpuFeatureMap:
        return _feature_map(operand, self.placements[operand.tensor.name])

    def constant(self, data: bytes) -> vapi.NpuAddressRange:
        offset, length = self.pool.add(data)
        return vapi.NpuAddressRange(region=CONSTANTS_REGION, address=offset, length=length)

    def build(self, op) -> list[vapi.NpuOperation]:
        """The Vela operations of one primitive (the last one produces its OFM)."""
        what = f"{op.op_name} ({op.source})" if op.source else op.op_name
        if isinstance(op, Conv2D):
            return [self.convolution(op, what)]
        if isinstance(op, Pooling):
            return [self.pooling(op, what)]
        if isinstance(op, BinaryElementwise):
            return [self.elementwise(op, what)]
        if isinstance(op, Identity) and op.lut is not None:
            return self.table_lookup(op, what)
        if isinstance(op, Identity):
            return [self.copy(op, what)]
        raise CodegenError(f"{what}: no NPU code generation for {type(op).__name__}")

    def _block_op(self, npu_op: vapi.NpuBlockOperation, op, what: str) -> vapi.NpuBlockOperation:
        npu_op.ifm = self.fm(op.ifm)
        npu_op.ofm = self.fm(op.ofm)
        npu_op.activation = _activation(op.clamp, op.ofm)
        return self._with_block_config(npu_op, what)

    def _with_block_config(self, npu_op: vapi.NpuBlockOperation, what: str) -> vapi.NpuBlockOperation:
        npu_op.block_config = choose_block_config(npu_op, self.accelerator, what)
        if npu_op.block_config is None:
            raise CodegenError(f"{what}: no block configuration fits in this accelerator's SHRAM")
        return npu_op

    def convolution(self, op: Conv2D, what: str) -> vapi.NpuOperation:
        return self._convolution(op, isinstance(op, DepthwiseConv2D), what)

    def _convolution(self, op: Conv2D, depthwise: bool, what: str) -> vapi.NpuOperation:
        npu_op = vapi.NpuConvDepthWiseOperation() if depthwise else vapi.NpuConv2DOperation()
        kernel_h, kernel_w = op.kernel
        stride_y, stride_x = _strides(op.strides, op.ofm)
        npu_op.kernel = vapi.NpuKernel(kernel_w, kernel_h, stride_x, stride_y, op.dilation[1], op.dilation[0])
        npu_op.padding = vapi.NpuPadding(top=op.padding.top, left=op.padding.left, bottom=op.padding.bottom,
                                         right=op.padding.right)
        npu_op.rounding_mode = _ROUNDING[op.requant.rounding]
        traversal = vapi.NpuBlockTraversal.DEPTH_FIRST
        if not depthwise:
            npu_op.block_traversal = traversal
        # Weights and biases are encoded after the block config: the weight stream depends on its depth.
        npu_op.weights = [vapi.NpuAddressRange(CONSTANTS_REGION, 0, 0)]
        npu_op.biases = [vapi.NpuAddressRange(CONSTANTS_REGION, 0, 0)]
        self._block_op(npu_op, op, what)
        npu_op.biases = [self.constant(self._scale_bias(op, what))]
        centred = op.weights.astype(np.int16) - np.int16(op.weight_zero_point)
        encoded = vela_call(what, vapi.npu_encode_weights, self.accelerator, centred,
                            (op.dilation[1], op.dilation[0]), 8, npu_op.block_config.depth, depthwise, traversal)
        npu_op.weights = [self.constant(bytes(encoded))]
        return npu_op

    @staticmethod
    def _scale_bias(op: Conv2D, what: str) -> bytes:
        channels = op.weights.shape[0]
        scale = np.broadcast_to(op.requant.scale, (channels,))
        shift = np.broadcast_to(op.requant.shift, (channels,))
        return b"".join(
            bytes(vela_call(what, vapi.npu_encode_bias, np.int64(op.bias[c]), int(scale[c]), int(shift[c])))
            for c in range(channels)
        )

    def pooling(self, op: Pooling, what: str) -> vapi.NpuOperation:
        kind = vapi.NpuPoolingOp.MAX if op.pooling_type == "MAX" else vapi.NpuPoolingOp.AVERAGE
        npu_op = vapi.NpuPoolingOperation(kind)
        kernel_h, kernel_w = op.pool_shape
        stride_y, stride_x = _strides(op.strides, op.ofm)
        npu_op.kernel = vapi.NpuKernel(kernel_w, kernel_h, stride_x, stride_y)
        npu_op.padding = vapi.NpuPadding(top=op.padding.top, left=op.padding.left, bottom=op.padding.bottom,
                                         right=op.padding.right)
        npu_op.rounding_mode = vapi.NpuRoundingMode.TFL
        npu_op.ifm, npu_op.ofm = self.fm(op.ifm), self.fm(op.ofm)
        npu_op.activation = _activation(op.clamp, op.ofm)
        npu_op.block_config = choose_block_config(npu_op, self.accelerator, what)
        if npu_op.block_config is None and kind == vapi.NpuPoolingOp.AVERAGE and op.padding == Padding():
            return self._convolution(average_as_depthwise(op), True, what)
        return self._with_block_config(npu_op, what)

    def elementwise(self, op: BinaryElementwise, what: str) -> vapi.NpuOperation:
        """The NPU broadcasts only IFM2: when the first operand is the broadcast one, swap and say so."""
        npu_op = vapi.NpuElementWiseOperation(_ELEMENTWISE[op.operator])
        first, second = op.ifm, op.ifm2
        if first.tensor.shape != op.ofm.tensor.shape:
            first, second = second, first
            npu_op.reversed_operands = True
        npu_op.rounding_mode = vapi.NpuRoundingMode.TFL
        if op.operator == "MUL":
            npu_op.rescale = (int(op.requant.scale[0]), int(op.requant.shift[0]))
        npu_op.ifm = self.fm(first)
        npu_op.ifm2 = self.fm(second)
        npu_op.ofm = self.fm(op.ofm)
        npu_op.activation = _activation(op.clamp, op.ofm)
        npu_op.block_config = choose_block_config(npu_op, self.accelerator, what)
        return npu_op

    def table_lookup(self, op: Identity, what: str) -> list[vapi.NpuOperation]:
        """DMA the 256-byte table into LUT slot 0 of SHRAM, then a copy whose activation is the lookup: with zero
        points 0 and no scaling, the table index is the raw input value + 128."""
        table = self.constant(op.lut.astype(np.int8).tobytes())
        shram = vela_call(what, _lut_address, self.accelerator)
        load = vapi.NpuDmaOperation(table, vapi.NpuAddressRange(LUT_REGION, shram, table.length))
        activation = vapi.NpuActivation(vapi.NpuActivationOp.TABLE_LOOKUP)
        activation.lookup_table_index = 0
        return [load, self.copy(op, what, activation)]

    def copy(self, op: Identity, what: str, activation: vapi.NpuActivation | None = None) -> vapi.NpuOperation:
        """A 1x1 max pool from the IFM's bytes, viewed in the OFM's shape, to the OFM: a reshape in NHWC order is
        the same bytes, and a pool has no alignment rule on the size (a DMA would need multiples of 16)."""
        npu_op = vapi.NpuPoolingOperation(vapi.NpuPoolingOp.MAX)
        npu_op.kernel = vapi.NpuKernel(1, 1)
        npu_op.padding = vapi.NpuPadding(top=0, left=0, bottom=0, right=0)
        npu_op.rounding_mode = vapi.NpuRoundingMode.TFL
        npu_op.ifm = _feature_map(dataclasses.replace(op.ifm, tensor=op.ofm.tensor),
                                  self.placements[op.ifm.tensor.name])
        npu_op.ofm = self.fm(op.ofm)
        npu_op.activation = activation
        return self._with_block_config(npu_op, what)
