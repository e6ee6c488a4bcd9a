"""Performance model of one Ethos-U55 operation: estimated cycles and traffic, block config and weight order.

One model serves both the cascader, which costs hypothetical stripes during its search, and code generation, which
picks each operation's block config and weight traversal, so that both rank alternatives alike. The estimate is the
shared cycle model's (`ethosu_tvm.arch.cycles`), which the simulator reports too: max(compute, memory), compute
from Vela's legacy performance model, memory the bytes the hardware moves (the weight and scale streams and the IFM
window again for every OFM block) at the bandwidths of the target's system (`arch.system`; by default
Ethos_U55_High_End_Embedded with Shared_Sram: region 0, the constants, is off-chip flash, every other region and
SHRAM is SRAM). Because re-reads depend on the block, the block config decides the memory cycles as well as the
compute cycles. For an operation the code generator builds, `estimate_cycles` equals the simulator's estimate for
the command Vela's API generates from it.
"""
from __future__ import annotations

import contextlib
import copy
import dataclasses
import functools
import io
import math
from dataclasses import dataclass

import numpy as np
from ethosu.vela import api as vapi

from ...arch import LUT_BYTES, Accelerator, from_vela, round_up
from ...arch.cycles import (CostedFeatureMap, block_cost, block_traffic, constants_cycles, dma_cycles, memory_cycles,
                           vela_arch)
from ...arch.system import DEFAULT_SYSTEM, System
from ...arch.operation import CONV, DEPTHWISE, ELEMENTWISE, POOL, Kernel
from ...legalize.ops import (
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

# Regions as code generation places data: constants (weights, scales, tables) in 0 = flash, feature maps in SRAM.
_CONSTANTS_REGION = 0
_FEATURE_MAP_REGION = 1
_SCALE_BIAS_BYTES = 10  # per output channel
POOLING_OPS = {"MAX": vapi.NpuPoolingOp.MAX, "AVG": vapi.NpuPoolingOp.AVERAGE,
               "REDUCE_SUM": vapi.NpuPoolingOp.REDUCE_SUM}


@dataclass(frozen=True)
class OperationCost:
    """Estimated cost of one NPU operation. `bytes_read`/`bytes_written` count what it touches once: the weight
    and scale/bias streams, the table entries a LUT activation reads from SHRAM; `weight_bytes_fetched` counts the
    weight and scale/bias bytes the hardware fetches, once per OFM block in height x width."""

    cycles: int  # max(compute, memory), rounded up
    compute_cycles: int
    memory_cycles: float
    bytes_read: int
    bytes_written: int
    weight_bytes: int  # the weight and scale/bias streams, once
    weight_bytes_fetched: int
    constants_cycles: int = 0  # reading the constants' memory, which a weight DMA cannot use meanwhile

    @property
    def overlap(self) -> int:
        """The cycles of this operation that a weight DMA issued after it can run in (see `BufferingCost`)."""
        return self.cycles - self.constants_cycles


def block_traversal(kernel: tuple[int, int], ifm_depth: int, ifm_bits: int = 8) -> vapi.NpuBlockTraversal:
    """The weight order of a (non-depthwise) convolution with this kernel (height, width) and IFM, chosen as Vela's
    weight encoder chooses it: part-kernel-first for IFMs of depth 8 or less, and whenever it keeps at least as
    many multipliers busy as depth-first. Depth-first consumes the IFM depth in steps of 32 channels (16 for 16-bit
    IFMs); part-kernel-first consumes 8 channels times 4 kernel taps (2 for 16-bit IFMs)."""
    if ifm_depth <= 8:
        return vapi.NpuBlockTraversal.PART_KERNEL_FIRST
    taps = kernel[0] * kernel[1]
    depth_first = ifm_depth / round_up(ifm_depth, 32 if ifm_bits == 8 else 16)
    part_kernel = (ifm_depth / round_up(ifm_depth, 8)) * (taps / round_up(taps, 4 if ifm_bits == 8 else 2))
    if part_kernel >= depth_first:
        return vapi.NpuBlockTraversal.PART_KERNEL_FIRST
    return vapi.NpuBlockTraversal.DEPTH_FIRST


def convolution_traversal(op: Conv2D) -> vapi.NpuBlockTraversal:
    """The weight order of a convolution primitive: fixed per primitive (it depends on the kernel and the whole IFM
    depth, which every stripe reads), so all its stripes can share one weight stream. Depthwise weights are only
    ever depth-first."""
    if isinstance(op, DepthwiseConv2D):
        return vapi.NpuBlockTraversal.DEPTH_FIRST
    return block_traversal(op.kernel, op.ifm.tensor.shape[3], _dtype_bits(op.ifm.tensor.dtype))


def _dtype_bits(dtype: str) -> int:
    return vapi.NpuDataType[dtype.upper()].size_in_bits()


def _kind(npu_op: vapi.NpuBlockOperation) -> tuple[str, str]:
    """(kind, mode) in the NPU's terms (`arch.operation`)."""
    if isinstance(npu_op, vapi.NpuConv2DOperation):
        return CONV, ""
    if isinstance(npu_op, vapi.NpuConvDepthWiseOperation):
        return DEPTHWISE, ""
    if isinstance(npu_op, vapi.NpuPoolingOperation):
        return POOL, npu_op.sub_op_type.name
    return ELEMENTWISE, npu_op.sub_op_type.name


def _kernel(npu_op: vapi.NpuBlockOperation, kind: str) -> Kernel:
    if kind == ELEMENTWISE:
        return Kernel(1, 1, 1, 1, 1, 1, False)
    k = npu_op.kernel
    part_kernel = kind == CONV and npu_op.block_traversal == vapi.NpuBlockTraversal.PART_KERNEL_FIRST
    return Kernel(k.height, k.width, k.stride_y, k.stride_x, k.dilation_y, k.dilation_x, part_kernel)


def _ifm_shape(npu_op: vapi.NpuBlockOperation, kind: str, kernel: Kernel) -> tuple[int, int, int]:
    """The IFM extent the hardware reads (it derives it from the OFM, kernel and padding; an IFM box may reach
    further). IFM upscaling is not modelled."""
    ofm, depth = npu_op.ofm.shape, npu_op.ifm.shape.depth
    if kind == ELEMENTWISE:
        return (ofm.height, ofm.width, depth)
    pad = npu_op.padding
    return ((ofm.height - 1) * kernel.stride_y + kernel.extent_h - pad.top - pad.bottom,
            (ofm.width - 1) * kernel.stride_x + kernel.extent_w - pad.left - pad.right, depth)


def _accumulator_bits(npu_op: vapi.NpuBlockOperation, kind: str, mode: str, ifm_bits: int) -> int:
    """40 or 32, as Vela's command stream generator programs ACC_FORMAT."""
    if npu_op.accumulator_type != vapi.NpuAccumulatorType.Default:
        return 40 if npu_op.accumulator_type == vapi.NpuAccumulatorType.Int40 else 32
    scaled = all(fm.quantization is not None and fm.quantization.scale_f32 is not None
                 for fm in (npu_op.ifm, npu_op.ifm2, npu_op.ofm) if fm is not None)
    pooling = kind == POOL and mode != "REDUCE_SUM"
    return 40 if ifm_bits == 16 and not pooling and scaled else 32


def _fused(npu_op: vapi.NpuBlockOperation) -> str | None:
    if npu_op.activation is None:
        return None
    return {vapi.NpuActivationOp.TANH: "TANH", vapi.NpuActivationOp.SIGMOID: "SIGMOID",
            vapi.NpuActivationOp.TABLE_LOOKUP: "LUT"}.get(npu_op.activation.op_type)


def _volume(shape) -> int:
    return math.prod(shape)


def _streams(npu_op: vapi.NpuBlockOperation, kind: str, ifm_depth: int) -> list[tuple[int, int]]:
    """(region, bytes) of a convolution's weight and scale/bias streams: their lengths once encoded, before that
    the uncompressed size Vela's element counts assume (one byte per weight, 10 per output channel), padded as the
    constant pool stores them."""
    encoded = [(r.region, r.length) for r in list(npu_op.weights) + list(npu_op.biases) if r.length]
    if encoded:
        return encoded
    k, ofm_depth = npu_op.kernel, npu_op.ofm.shape.depth
    weights = k.height * k.width * (ifm_depth if kind == CONV else 1) * ofm_depth
    region = npu_op.weights[0].region if npu_op.weights else _CONSTANTS_REGION  # where placeholders put them
    return [(region, round_up(weights)), (region, round_up(_SCALE_BIAS_BYTES * ofm_depth))]


def _lut_bytes(ofm: vapi.NpuFeatureMap) -> int:
    """SHRAM bytes a table lookup reads: 256 OFM-sized entries, or the whole LUT area for 16-bit OFMs (a 32-bit OFM
    is clipped to 8 bits, so 256 entries)."""
    bits = ofm.data_type.size_in_bits()
    return LUT_BYTES if bits == 16 else 256 * bits // 8


@dataclass(frozen=True)
class _Costing:
    """The block-independent part of an operation's estimate, computed once per operation."""

    system: System
    accelerator: Accelerator
    kind: str
    mode: str
    fused: str | None
    ifm: CostedFeatureMap
    ifm2: CostedFeatureMap | None
    ifm2_scalar: bool
    ofm: CostedFeatureMap
    kernel: Kernel
    acc_bits: int
    streams: tuple[tuple[int, int], ...]
    lut_bytes: int

    def least_cycles(self, block: vapi.NpuShape3D) -> int:
        """A lower bound of `cost(block).cycles`: the memory cycles alone, without Vela's compute estimate (the
        slow part)."""
        traffic = block_traffic(self.kind, self.ifm, None if self.ifm2_scalar else self.ifm2, self.ofm, self.kernel,
                                (block.height, block.width, block.depth), self.streams, self.lut_bytes)
        return math.ceil(memory_cycles(self.system, traffic))

    def cost(self, block: vapi.NpuShape3D) -> OperationCost:
        estimate = block_cost(self.system, self.accelerator, self.kind, self.mode, self.fused, self.ifm, self.ifm2,
                              self.ifm2_scalar, self.ofm, self.kernel, (block.height, block.width, block.depth),
                              self.acc_bits, self.streams, self.lut_bytes)
        fm_read = _volume(self.ifm.shape) * self.ifm.bits // 8
        if self.ifm2 is not None and not self.ifm2_scalar:
            fm_read += _volume(self.ifm2.shape) * self.ifm2.bits // 8
        weight_bytes = sum(length for _, length in self.streams)
        blocks_hw = -(-self.ofm.shape[0] // block.height) * -(-self.ofm.shape[1] // block.width)
        return OperationCost(estimate.cycles, estimate.compute_cycles, estimate.memory_cycles,
                             fm_read + weight_bytes + self.lut_bytes, _volume(self.ofm.shape) * self.ofm.bits // 8,
                             weight_bytes, weight_bytes * blocks_hw if self.kind in (CONV, DEPTHWISE) else 0,
                             constants_cycles(self.system, estimate.traffic))


def _costing(npu_op: vapi.NpuBlockOperation, accelerator: vapi.NpuAccelerator, system: System) -> _Costing:
    kind, mode = _kind(npu_op)
    kernel = _kernel(npu_op, kind)
    ifm_bits = npu_op.ifm.data_type.size_in_bits()
    ifm_shape = _ifm_shape(npu_op, kind, kernel)
    ifm2 = None
    if npu_op.ifm2 is not None:
        ifm2 = CostedFeatureMap(tuple(npu_op.ifm2.shape), npu_op.ifm2.data_type.size_in_bits(), npu_op.ifm2.region,
                                npu_op.ifm2.layout == vapi.NpuLayout.NHCWB16)
    streams = tuple(_streams(npu_op, kind, ifm_shape[2])) if kind in (CONV, DEPTHWISE) else ()
    fused = _fused(npu_op)
    return _Costing(
        system=system, accelerator=from_vela(accelerator), kind=kind, mode=mode, fused=fused,
        ifm=CostedFeatureMap(ifm_shape, ifm_bits, npu_op.ifm.region, npu_op.ifm.layout == vapi.NpuLayout.NHCWB16),
        ifm2=ifm2, ifm2_scalar=npu_op.ifm2_scalar is not None,
        ofm=CostedFeatureMap(tuple(npu_op.ofm.shape), npu_op.ofm.data_type.size_in_bits(), npu_op.ofm.region,
                             npu_op.ofm.layout == vapi.NpuLayout.NHCWB16),
        kernel=kernel, acc_bits=_accumulator_bits(npu_op, kind, mode, ifm_bits), streams=streams,
        lut_bytes=_lut_bytes(npu_op.ofm) if fused == "LUT" else 0,
    )


def estimate_cycles(npu_op: vapi.NpuBlockOperation, accelerator: vapi.NpuAccelerator,
                    block: vapi.NpuShape3D | None = None, system: System = DEFAULT_SYSTEM) -> OperationCost:
    """The estimated cost of a Vela API block operation computed in OFM blocks of `block` (default: its
    block_config) in `system`. A convolution's weights and biases count at their encoded lengths when set
    (non-zero), else at their uncompressed size."""
    return _costing(npu_op, accelerator, system).cost(block if block is not None else npu_op.block_config)


@dataclass(frozen=True)
class BufferingCost:
    """A convolution's cycles streaming its weight and scale/bias streams from flash (with `overlap` of them free
    for a transfer issued after it), against DMAing them (`nbytes`, in `dma` cycles) into an SRAM buffer first and
    reading the copy once per OFM block (`buffered` cycles, with the block config that suits weights in SRAM: it
    may differ, and so may the stream, encoded for its block depth).

    The transfer runs while the previous operation computes: its buffer is planned live during that operation
    too, so the stream's waits let the DMA start with it, once that operation's own reads of the constants' memory
    are done (`sim.cycles.Timeline`); only what the transfer outlasts that by delays the convolution. Which
    operations buffer is decided jointly (`cascader.buffering.choose_buffering`)."""

    streamed: int
    overlap: int
    dma: int
    buffered: int
    nbytes: int


def buffering_cost(streamed: vapi.NpuBlockOperation, copy: vapi.NpuBlockOperation,
                   accelerator: vapi.NpuAccelerator, system: System = DEFAULT_SYSTEM) -> BufferingCost:
    """The cost of a convolution streaming its weights (`streamed`, its streams in flash) and reading a copy of
    them (`copy`: the same convolution with its block config and encoded streams for weights in SRAM)."""
    from_flash = estimate_cycles(streamed, accelerator, system=system)
    nbytes = sum(length for _, length in _costing(copy, accelerator, system).streams)
    transfer = math.ceil(dma_cycles(system, _CONSTANTS_REGION, _FEATURE_MAP_REGION, nbytes))
    return BufferingCost(from_flash.cycles, from_flash.overlap, transfer,
                         estimate_cycles(copy, accelerator, system=system).cycles, nbytes)


def find_block_configs(npu_op: vapi.NpuBlockOperation, accelerator: vapi.NpuAccelerator) -> list[vapi.NpuShape3D]:
    """Vela's valid block configs for the operation; empty when no block's buffers fit in SHRAM (Vela asserts
    then)."""
    return list(_find_block_configs(_BlockSearch(npu_op), accelerator))


@functools.lru_cache(maxsize=1 << 12)
def _find_block_configs(search: "_BlockSearch", accelerator: vapi.NpuAccelerator) -> tuple[vapi.NpuShape3D, ...]:
    """find_block_configs, once per search key (a convolution is searched streaming and buffered, and networks
    repeat layer shapes with other weights and quantization)."""
    with contextlib.redirect_stdout(io.StringIO()):  # Vela's first call announces its default configuration
        try:
            return tuple(vapi.npu_find_block_configs(search.npu_op, accelerator))
        except AssertionError:
            return ()


class _BlockSearch:
    """A block operation, compared by what Vela's block-config search reads of it: the block type and traversal,
    the feature maps' shapes, the IFM's element size and upscaling, the kernel, whether a LUT takes SHRAM, whether
    every feature map is quantized and whether IFM2 is a scalar. Not weights, addresses, scales or names."""

    def __init__(self, npu_op: vapi.NpuBlockOperation):
        self.npu_op = npu_op
        kernel = npu_op.kernel
        fms = (npu_op.ifm, npu_op.ifm2, npu_op.ofm)
        self.key = (
            type(npu_op).__name__, getattr(npu_op, "sub_op_type", None), getattr(npu_op, "block_traversal", None),
            tuple(tuple(fm.shape) if fm is not None else None for fm in fms),
            npu_op.ifm.data_type.size_in_bits(), npu_op.ifm_upscale,
            None if kernel is None else (kernel.width, kernel.height, kernel.stride_x, kernel.stride_y,
                                         kernel.dilation_x, kernel.dilation_y),
            npu_op.activation is not None and npu_op.activation.op_type == vapi.NpuActivationOp.TABLE_LOOKUP,
            all(fm is None or fm.quantization is not None for fm in fms), npu_op.ifm2_scalar is not None,
        )

    def __hash__(self) -> int:
        return hash(self.key)

    def __eq__(self, other) -> bool:
        return isinstance(other, _BlockSearch) and self.key == other.key


def choose_block_config(npu_op: vapi.NpuBlockOperation, accelerator: vapi.NpuAccelerator,
                        depth: int | None = None, system: System = DEFAULT_SYSTEM) -> vapi.NpuShape3D | None:
    """Among Vela's valid block configs, the one with the fewest estimated cycles in `system`; None when no block
    fits in SHRAM. Since every OFM block in height x width fetches the weights again, a weight-bound convolution
    gets the config with the fewest such blocks that SHRAM allows.

    Configs of block depth `depth` come first when there are any: the stripes of one convolution share one weight
    stream, which is encoded for one block depth. Ties (memory-bound operations cost the same for many blocks) go
    to the fewest compute cycles, then the fewest weight bytes fetched, the fewest OFM blocks, the smallest block
    volume and the shape, so the choice is deterministic.
    """
    return _choose_block_config(_BlockSearch(npu_op), _costing(npu_op, accelerator, system), accelerator, depth)


@functools.lru_cache(maxsize=1 << 12)
def _choose_block_config(search: _BlockSearch, costing: _Costing, accelerator: vapi.NpuAccelerator,
                         depth: int | None) -> vapi.NpuShape3D | None:
    """choose_block_config, once per what it reads: Vela's search (`_BlockSearch`) and the cost model's
    block-independent inputs (`_Costing`), so operations that differ only in addresses, names, scales or clamps
    (networks repeat layer shapes; code generation builds a convolution again with its weight buffer placed) are
    ranked once. Vela's search and this ranking dominate code generation's time."""
    configs = find_block_configs(search.npu_op, accelerator)
    if not configs:
        return None
    configs = [c for c in configs if c.depth == depth] or configs
    height, width, ofm_depth = costing.ofm.shape

    def rank(block: vapi.NpuShape3D):
        cost = costing.cost(block)
        blocks = -(-height // block.height) * -(-width // block.width) * -(-ofm_depth // block.depth)
        return (cost.cycles, cost.compute_cycles, cost.weight_bytes_fetched, blocks,
                block.height * block.width * block.depth, tuple(block))

    # Ranked in order of their memory cycles, a lower bound of their cycles: once that bound exceeds the best
    # cycles found, no later config can win, and Vela's compute estimate is not asked for it.
    best, best_rank = None, None
    for bound, block in sorted(((costing.least_cycles(block), block) for block in configs), key=lambda c: c[0]):
        if best_rank is not None and bound > best_rank[0]:
            break
        block_rank = rank(block)
        if best_rank is None or block_rank < best_rank:
            best, best_rank = block, block_rank
    return best


def buffered_block_config(npu_op: vapi.NpuBlockOperation, op: Conv2D, start: int, stop: int,
                          accelerator: vapi.NpuAccelerator, depth: int | None = None,
                          system: System = DEFAULT_SYSTEM) -> vapi.NpuShape3D | None:
    """The block config of `op`'s convolution `npu_op` (output channels start..stop−1) reading its weights from an
    SRAM buffer. `choose_block_config` ranks with the streams' uncompressed sizes, while each block depth has its
    own encoded stream; so of the configs it ranks best with the weights in SRAM and in flash, the one with fewer
    cycles reading the encoded streams from SRAM (None when no block fits)."""
    candidates = []
    for region in (_FEATURE_MAP_REGION, _CONSTANTS_REGION):
        trial = copy.copy(npu_op)
        trial.weights, trial.biases = [vapi.NpuAddressRange(region, 0, 0)], [vapi.NpuAddressRange(region, 0, 0)]
        block = choose_block_config(trial, accelerator, depth, system)
        if block is not None and block not in candidates:
            candidates.append(block)

    def cycles(block: vapi.NpuShape3D) -> int:
        trial = copy.copy(npu_op)
        weights, biases = encoded_stream_bytes(op, start, stop, block.depth, accelerator)
        trial.block_config = block
        trial.weights = [vapi.NpuAddressRange(_FEATURE_MAP_REGION, 0, weights)]
        trial.biases = [vapi.NpuAddressRange(_FEATURE_MAP_REGION, 0, biases)]
        return estimate_cycles(trial, accelerator, system=system).cycles

    return min(candidates, key=cycles, default=None)


def scalar_value(op: BinaryElementwise) -> float:
    """Vela takes an IFM2 scalar as a real value and quantizes it with IFM2's quantization (in float32): the real
    value of the raw integer, which quantizes back to it exactly (|q − zp| < 2^17 needs far less than float32's
    precision)."""
    return float(np.float32(op.ifm2_scalar - op.ifm2.zero_point) * np.float32(op.ifm2.scale))


def _feature_map(operand: Operand, shape: tuple[int, int, int],
                 region: int = _FEATURE_MAP_REGION) -> vapi.NpuFeatureMap:
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
            second = (op.ifm2, shape, _CONSTANTS_REGION)
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
    from ...codegen.softmax import SoftmaxSequence  # code generation imports this module: import at call time

    def placed(operand: Operand) -> vapi.NpuFeatureMap:
        fm = _feature_map(operand, ofm)
        element = np.dtype(operand.tensor.dtype).itemsize
        fm.strides = vapi.NpuShape3D(height=ofm[1] * ofm[2] * element, width=ofm[2] * element, depth=element)
        fm.tiles = vapi.NpuTileBox(height_0=ofm[0], height_1=ofm[0], width_0=ofm[1], addresses=[0, 0, 0, 0])
        return fm

    def constant(data: bytes) -> vapi.NpuAddressRange:
        return vapi.NpuAddressRange(_CONSTANTS_REGION, 0, round_up(len(data)))

    sequence = SoftmaxSequence(op, placed(op.ifm), placed(op.ofm), (_FEATURE_MAP_REGION, 0), constant,
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
    from ethosu.vela.register_command_stream_util import get_dma_memory_accesses, get_op_memory_accesses

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
    return estimate_cycles(_costed_stripe_operation(op, ofm, ifms, accelerator, system), accelerator, system=system)


def _costed_stripe_operation(op: NpuOp, ofm: tuple, ifms: tuple, accelerator: vapi.NpuAccelerator,
                             system: System, region: int = _CONSTANTS_REGION) -> vapi.NpuBlockOperation:
    """The stripe's operation with the block config code generation would choose and, for a convolution, its
    encoded streams in `region` (the constants, or a weight buffer in SRAM). Raises ValueError when no block
    config fits."""
    npu_op = _stripe_operation(op, ofm, ifms)
    if isinstance(op, Conv2D) and region != _CONSTANTS_REGION:
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
    return buffering_cost(_costed_stripe_operation(op, ofm, ifms, accelerator, system),
                          _costed_stripe_operation(op, ofm, ifms, accelerator, system, _FEATURE_MAP_REGION),
                          accelerator, system)


def encode_weights(op: Conv2D, channels: slice, depth: int, accelerator: vapi.NpuAccelerator) -> bytes:
    """The weight stream of `op`'s output `channels`, encoded for OFM blocks of `depth` channels in the primitive's
    traversal: what code generation stores in flash, and what the cost model counts."""
    centred = op.weights[channels].astype(np.int16) - np.int16(op.weight_zero_point)
    with contextlib.redirect_stdout(io.StringIO()):  # Vela's first call announces its default configuration
        return bytes(vapi.npu_encode_weights(accelerator, centred, (op.dilation[1], op.dilation[0]),
                                             _dtype_bits(op.ifm.tensor.dtype), depth,
                                             isinstance(op, DepthwiseConv2D), convolution_traversal(op)))


@functools.lru_cache(maxsize=64)
def encoded_weights(op: Conv2D, start: int, stop: int, depth: int, accelerator: vapi.NpuAccelerator) -> bytes:
    """`encode_weights` of output channels start..stop−1, remembered for the latest streams: code generation costs a
    convolution's stream (`encoded_stream_bytes`) just before it stores it."""
    return encode_weights(op, slice(start, stop), depth, accelerator)


@functools.lru_cache(maxsize=1 << 12)
def encoded_stream_bytes(op: Conv2D, start: int, stop: int, depth: int,
                         accelerator: vapi.NpuAccelerator) -> tuple[int, int]:
    """The bytes of `op`'s weight stream (for blocks of `depth` channels) and scale/bias stream of output channels
    start..stop−1, as the constant pool stores them. Compression matters: flash traffic bounds many layers, and
    every stripe of a cascade reads the stream again."""
    return (round_up(len(encoded_weights(op, start, stop, depth, accelerator))),
            round_up(_SCALE_BIAS_BYTES * (stop - start)))
