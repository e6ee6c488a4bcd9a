"""Cycle estimates from Vela's legacy performance model (`ethosu.vela.npu_performance`).

Per operation:
* block operations: max(compute, memory). Compute is `measure_cycle_cost` for the operation type, shapes, kernel,
  OFM block, IFM block derived from it, accumulator width and weight order. Memory is the bytes the operation moves
  in each region divided by that memory's bandwidth per cycle.
* DMA: `measure_mem2mem_cycles` for the bytes moved.
Whole stream (`Timeline`): the DMA engine and the compute pipeline run concurrently, each in stream order, and only
NPU_OP_DMA_WAIT / NPU_OP_KERNEL_WAIT make one wait for the other; the elapsed time is when the last one finishes.
BLOCKDEP chaining between kernels is not credited. Memory areas follow Vela's Shared_Sram memory mode on the
Ethos_U55_High_End_Embedded system (500 MHz): region 0 (read-only data) is off-chip flash, all other regions and
SHRAM are SRAM.

`compute_cycles` and `memory_cycles` take plain values, so that the simulator (decoded registers, `CycleModel`) and
the cascader's performance model (Vela API operations, `ethosu_tvm.cascader.ethosu.performance`) share one
estimate.
"""
from __future__ import annotations

import contextlib
import functools
import io
import math
from dataclasses import dataclass

from . import activation
from ..arch import Accelerator
from .operation import CONV, DEPTHWISE, ELEMENTWISE, BlockOperation, Kernel
from .ops.dma import DmaTransfer

_ELEMENTWISE_OPS = {"MUL": "Mul", "ADD": "Add", "SUB": "Sub", "MIN": "Minimum", "MAX": "Maximum",
                    "LRELU": "LeakyRelu", "ABS": "Abs", "CLZ": "CLZ", "SHR": "SHR", "SHL": "SHL"}
_POOL_OPS = {"MAX": "MaxPool", "AVERAGE": "AvgPool", "REDUCE_SUM": "ReduceSum"}
_FUSED_OPS = {"TANH": "Tanh", "SIGMOID": "Sigmoid", "LUT": "LUT"}


@dataclass(frozen=True)
class CostedFeatureMap:
    """What the cost model needs of a feature map: its (height, width, depth), element bits, region and layout."""

    shape: tuple[int, int, int]
    bits: int
    region: int
    brick: bool = False  # NHCWB16


@functools.cache
def vela_arch(accelerator: str):
    """Vela's default architecture for an accelerator named as in Vela ("Ethos_U55_128"); importing and creating
    it is slow, so both happen on first use."""
    with contextlib.redirect_stdout(io.StringIO()):  # Vela announces its default configuration
        from ethosu.vela.architecture_features import Accelerator as VelaAccelerator
        from ethosu.vela.architecture_features import create_default_arch

        return create_default_arch(VelaAccelerator[accelerator])


def _area(region):
    """Region 0 is flash; the other regions and SHRAM are SRAM."""
    from ethosu.vela.tensor import MemArea

    return MemArea.OffChipFlash if region == 0 else MemArea.Sram


def memory_cycles(accelerator: str, bytes_read: dict, bytes_written: dict) -> float:
    """Cycles to move the given bytes per region (or SHRAM) at each memory's bandwidth."""
    bandwidths = vela_arch(accelerator).memory_bandwidths_per_cycle
    return float(sum(count / bandwidths[_area(region)]
                     for counter in (bytes_read, bytes_written) for region, count in counter.items()))


@functools.lru_cache(maxsize=1 << 16)
def compute_cycles(accelerator: str, kind: str, mode: str, fused: str | None, ifm: CostedFeatureMap,
                   ifm2: CostedFeatureMap | None, ofm: CostedFeatureMap, kernel: Kernel, block: tuple[int, int, int],
                   acc_bits: int, weights_region: int | None) -> int:
    """Vela's compute-cycle estimate of one block operation.

    `kind` and `mode` are as in `operation.BlockOperation`; `fused` is "TANH", "SIGMOID", "LUT" or None; `block` is
    the OFM block (height, width, depth); `weights_region` is where a convolution's weight and scale streams are
    (None without them). Memoised: the cascader asks about the same stripes many times.
    """
    from ethosu.vela.architecture_allocator import ArchitectureBlockConfig
    from ethosu.vela.architecture_features import SHRAMElements
    from ethosu.vela.npu_performance import PerformanceQuery, measure_cycle_cost
    from ethosu.vela.operation import Kernel as VelaKernel
    from ethosu.vela.operation import NpuBlockType, Op
    from ethosu.vela.shape4d import Shape4D
    from ethosu.vela.tensor import TensorFormat

    if kind == CONV:
        block_type, op_type = NpuBlockType.ConvolutionMxN, Op.Conv2DBias
    elif kind == DEPTHWISE:
        block_type, op_type = NpuBlockType.ConvolutionDepthWise, Op.DepthwiseConv2DBias
    elif kind == ELEMENTWISE:
        block_type, op_type = NpuBlockType.ElementWise, getattr(Op, _ELEMENTWISE_OPS[mode])
    else:
        block_type = NpuBlockType.ReduceSum if mode == "REDUCE_SUM" else NpuBlockType.Pooling
        op_type = getattr(Op, _POOL_OPS[mode])

    def fm_format(fm):
        return TensorFormat.NHCWB16 if fm.brick else TensorFormat.NHWC

    query = PerformanceQuery(block_type)
    query.ifm_shape = Shape4D(1, *ifm.shape)
    query.ifm_format, query.ifm_bits = fm_format(ifm), ifm.bits
    query.ifm_memory_area = _area(ifm.region)
    if ifm2 is not None:
        query.ifm2_shape = Shape4D(1, *ifm2.shape)
        query.ifm2_format, query.ifm2_bits = fm_format(ifm2), ifm2.bits
        query.ifm2_memory_area = _area(ifm2.region)
    query.ofm_shape = Shape4D(1, *ofm.shape)
    query.ofm_format, query.ofm_bits = fm_format(ofm), ofm.bits
    query.ofm_memory_area = _area(ofm.region)
    if weights_region is not None:
        query.const_shape = Shape4D(1, 1, 1, ofm.shape[2])
        query.const_memory_area = _area(weights_region)
    query.kernel = VelaKernel(kernel.width, kernel.height, kernel.stride_x, kernel.stride_y,
                              kernel.dilation_x, kernel.dilation_y)
    block_h, block_w, block_d = block
    if kind == CONV:
        ifm_block_depth = min(ifm.shape[2], 16 if kernel.part_kernel or ifm.bits == 16 else 32)
    else:
        ifm_block_depth = block_d
    config = ArchitectureBlockConfig()
    config.ofm_block = Shape4D(1, block_h, block_w, block_d)
    config.ifm_block = Shape4D(1, (block_h - 1) * kernel.stride_y + kernel.extent_h,
                               (block_w - 1) * kernel.stride_x + kernel.extent_w, ifm_block_depth)
    config.acc_type = SHRAMElements.Acc40 if acc_bits == 40 else SHRAMElements.Acc32
    config.is_partkernel = kernel.part_kernel
    query.config = config
    fused_op = getattr(Op, _FUSED_OPS[fused]) if fused is not None else None
    return measure_cycle_cost(vela_arch(accelerator), op_type, fused_op, query).op_cycles


def _costed(fm) -> CostedFeatureMap:
    return CostedFeatureMap(fm.shape, fm.bits, fm.region, fm.brick)


class CycleModel:
    """The cycle estimates of one accelerator's operations, as decoded from its registers."""

    def __init__(self, accelerator: Accelerator):
        self._accelerator = accelerator.vela_accelerator.name

    def block(self, op: BlockOperation, bytes_read: dict, bytes_written: dict) -> int:
        """Estimated cycles of a CONV/DEPTHWISE/POOL/ELEMENTWISE operation."""
        function = op.output.function
        fused = "LUT" if activation.is_lut(function) else {activation.TANH: "TANH",
                                                           activation.SIGMOID: "SIGMOID"}.get(function)
        compute = compute_cycles(self._accelerator, op.kind, op.mode, fused, _costed(op.ifm),
                                 _costed(op.ifm2) if op.ifm2 is not None else None, _costed(op.ofm), op.kernel,
                                 op.block, op.acc_bits, op.weights.region if op.weights is not None else None)
        return int(math.ceil(max(compute, memory_cycles(self._accelerator, bytes_read, bytes_written))))

    def dma(self, transfer: DmaTransfer) -> int:
        """Estimated cycles of a DMA transfer."""
        from ethosu.vela.npu_performance import measure_mem2mem_cycles

        source, destination = _area(transfer.src_region), _area(transfer.dst_region)
        return int(math.ceil(measure_mem2mem_cycles(vela_arch(self._accelerator), source, destination,
                                                    transfer.nbytes)))


class Timeline:
    """Concurrent DMA and compute queues, synchronised only by the stream's wait commands."""

    def __init__(self) -> None:
        self._dma_ends: list[int] = []
        self._kernel_ends: list[int] = []
        self._dma_ready = self._kernel_ready = 0  # earliest start allowed by the waits so far

    @staticmethod
    def _all_but_last(ends: list[int], outstanding: int) -> int:
        done = ends[: max(len(ends) - outstanding, 0)]
        return max(done, default=0)

    def dma(self, cycles: int) -> None:
        start = max(self._dma_ready, self._dma_ends[-1] if self._dma_ends else 0)
        self._dma_ends.append(start + cycles)

    def kernel(self, cycles: int) -> None:
        start = max(self._kernel_ready, self._kernel_ends[-1] if self._kernel_ends else 0)
        self._kernel_ends.append(start + cycles)

    def dma_wait(self, outstanding: int) -> None:
        """Kernels wait until at most `outstanding` DMA transfers are still running."""
        self._kernel_ready = max(self._kernel_ready, self._all_but_last(self._dma_ends, outstanding))

    def kernel_wait(self, outstanding: int) -> None:
        """DMA waits until at most `outstanding` kernels are still running."""
        self._dma_ready = max(self._dma_ready, self._all_but_last(self._kernel_ends, outstanding))

    @property
    def elapsed(self) -> int:
        return max(self._dma_ends + self._kernel_ends, default=0)
