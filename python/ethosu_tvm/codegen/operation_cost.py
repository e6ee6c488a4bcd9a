"""The estimated cost of one Vela API block operation: the cost model (`ethosu_tvm.arch.cycles`) asked in the terms
of the operation code generation builds.

The estimate is max(compute, memory): compute from Vela's legacy performance model, memory the bytes the hardware
moves (the weight and scale streams and the IFM window again for every OFM block) at the bandwidths of the target's
system (`arch.system`; by default Ethos_U55_High_End_Embedded with Shared_Sram: region 0, the constants, is
off-chip flash, every other region and SHRAM is SRAM). Because re-reads depend on the block, the block config
decides the memory cycles as well as the compute cycles. For an operation code generation builds, `estimate_cycles`
equals the simulator's estimate for the command Vela's API generates from it (the simulator asks the same model in
the terms of the decoded registers, `sim.cycles`).
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from ethosu.vela import api as vapi

from ..arch import LUT_BYTES, Accelerator, from_vela, round_up
from ..arch.cycles import (CostedFeatureMap, Traffic, block_cost, block_traffic, dma_cycles, dpu_terms,
                           least_block_compute_cycles, memory_cycles, touched_traffic)
from ..arch.operation import CONV, DEPTHWISE, ELEMENTWISE, POOL, Kernel
from ..arch.system import CONSTANTS_REGION, DEFAULT_SYSTEM, System
from .weight_stream import SCALE_BIAS_BYTES


@dataclass(frozen=True)
class OperationCost:
    """Estimated cost of one NPU operation. `bytes_read`/`bytes_written` count what it touches once
    (`arch.cycles.touched_traffic`: the feature maps, the weight and scale/bias streams, the table entries a LUT
    activation reads from SHRAM), as the simulator's statistics do; `weight_bytes_fetched` counts the
    weight and scale/bias bytes the hardware fetches, once per OFM block in height x width."""

    cycles: int  # max(compute, memory), rounded up
    compute_cycles: int
    memory_cycles: float
    bytes_read: int
    bytes_written: int
    weight_bytes: int  # the weight and scale/bias streams, once
    weight_bytes_fetched: int
    constants_cycles: int = 0  # on the constants' memory's port, which a weight DMA cannot use meanwhile

    @property
    def overlap(self) -> int:
        """The cycles of this operation that a weight DMA issued after it can run in (see `BufferingCost`)."""
        return self.cycles - self.constants_cycles


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


def _streams(npu_op: vapi.NpuBlockOperation, kind: str, ifm_depth: int) -> list[tuple[int, int]]:
    """(region, bytes) of a convolution's weight and scale/bias streams: their lengths once encoded, before that
    the uncompressed size Vela's element counts assume (one byte per weight, 10 per output channel), padded as the
    constant pool stores them."""
    encoded = [(r.region, r.length) for r in list(npu_op.weights) + list(npu_op.biases) if r.length]
    if encoded:
        return encoded
    k, ofm_depth = npu_op.kernel, npu_op.ofm.shape.depth
    weights = k.height * k.width * (ifm_depth if kind == CONV else 1) * ofm_depth
    region = npu_op.weights[0].region if npu_op.weights else CONSTANTS_REGION  # where placeholders put them
    return [(region, round_up(weights)), (region, round_up(SCALE_BIAS_BYTES * ofm_depth))]


def _lut_bytes(ofm: vapi.NpuFeatureMap) -> int:
    """SHRAM bytes a table lookup reads: 256 OFM-sized entries, or the whole LUT area for 16-bit OFMs (a 32-bit OFM
    is clipped to 8 bits, so 256 entries)."""
    bits = ofm.data_type.size_in_bits()
    return LUT_BYTES if bits == 16 else 256 * bits // 8


@dataclass(frozen=True)
class Costing:
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

    def traffic(self, block: vapi.NpuShape3D) -> Traffic:
        """The bytes the operation moves computed in OFM blocks of `block`, re-reads included."""
        return block_traffic(self.kind, self.ifm, None if self.ifm2_scalar else self.ifm2, self.ofm, self.kernel,
                             (block.height, block.width, block.depth), self.streams, self.lut_bytes)

    def least_cycles(self, block: vapi.NpuShape3D, traffic: Traffic) -> int:
        """A lower bound of `cost(block).cycles` from the block's `traffic`: the memory cycles, and a lower bound
        of the compute cycles (`arch.cycles.least_compute_cycles`), without Vela's compute estimate (the slow
        part)."""
        terms = self._dpu_terms
        compute = 0 if terms is None else least_block_compute_cycles(terms, self.ofm.shape,
                                                                     (block.height, block.width, block.depth))
        return max(math.ceil(memory_cycles(self.system, traffic)), compute)

    @functools.cached_property
    def _dpu_terms(self) -> tuple | None:
        """The block-independent terms of `least_cycles`' compute bound (None: the bound is 0, see
        `arch.cycles.least_compute_cycles`)."""
        if self.kind not in (CONV, DEPTHWISE) or self.ofm.shape[0] == 1:
            return None
        return dpu_terms(self.accelerator, self.kind, self.fused, self.ifm.bits, self.ifm.shape[2], self.kernel,
                         self.acc_bits)

    @functools.cached_property
    def _touched(self) -> tuple[int, int, int]:
        """Bytes read and written once, and the weight and scale/bias streams' bytes: the same for every block."""
        touched = touched_traffic(self.ifm, None if self.ifm2_scalar else self.ifm2, self.ofm, self.streams,
                                  self.lut_bytes)
        return sum(touched.read.values()), sum(touched.written.values()), sum(length for _, length in self.streams)

    def cost(self, block: vapi.NpuShape3D, traffic: Traffic | None = None) -> OperationCost:
        """The estimate in OFM blocks of `block`; `traffic` is the block's `traffic` when the caller has it."""
        estimate = block_cost(self.system, self.accelerator, self.kind, self.mode, self.fused, self.ifm, self.ifm2,
                              self.ifm2_scalar, self.ofm, self.kernel, (block.height, block.width, block.depth),
                              self.acc_bits, self.streams, self.lut_bytes, traffic)
        read, written, weight_bytes = self._touched
        blocks_hw = -(-self.ofm.shape[0] // block.height) * -(-self.ofm.shape[1] // block.width)
        return OperationCost(estimate.cycles, estimate.compute_cycles, estimate.memory_cycles, read, written,
                             weight_bytes, weight_bytes * blocks_hw if self.kind in (CONV, DEPTHWISE) else 0,
                             estimate.constants_cycles)


def costing(npu_op: vapi.NpuBlockOperation, accelerator: vapi.NpuAccelerator, system: System) -> Costing:
    """What the estimate reads of `npu_op` in `system`, apart from the block: the block-config choice costs every
    block of one operation from it."""
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
    return Costing(
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
    return costing(npu_op, accelerator, system).cost(block if block is not None else npu_op.block_config)


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
    nbytes = sum(length for _, length in costing(copy, accelerator, system).streams)
    transfer = math.ceil(dma_cycles(system, CONSTANTS_REGION, system.cache_region, nbytes))
    return BufferingCost(from_flash.cycles, from_flash.overlap, transfer,
                         estimate_cycles(copy, accelerator, system=system).cycles, nbytes)


