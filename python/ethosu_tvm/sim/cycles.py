"""Cycle estimates from Vela's legacy performance model (`ethosu.vela.npu_performance`), driven by decoded registers.

Per operation:
* block operations: max(compute, memory). Compute is `measure_cycle_cost` for the operation type, shapes, kernel,
  OFM block (OFM_BLK_*), IFM block derived from it, accumulator width and weight order. Memory is the bytes the
  operation moves in each region divided by that memory's bandwidth per cycle.
* DMA: `measure_mem2mem_cycles` for the bytes moved.
Whole stream (`Timeline`): the DMA engine and the compute pipeline run concurrently, each in stream order, and only
NPU_OP_DMA_WAIT / NPU_OP_KERNEL_WAIT make one wait for the other; the elapsed time is when the last one finishes.
BLOCKDEP chaining between kernels is not credited. Memory areas follow Vela's Shared_Sram memory mode on the
Ethos_U55_High_End_Embedded system (500 MHz): region 0 (read-only data) is off-chip flash, all other regions and
SHRAM are SRAM.
"""
from __future__ import annotations

import contextlib
import io
import math

from . import activation
from .accelerators import Accelerator
from .operation import CONV, DEPTHWISE, ELEMENTWISE, BlockOperation
from .ops.dma import DmaTransfer

_ACCELERATOR_NAMES = {
    "ethos-u55-32": "Ethos_U55_32",
    "ethos-u55-64": "Ethos_U55_64",
    "ethos-u55-128": "Ethos_U55_128",
    "ethos-u55-256": "Ethos_U55_256",
}
_ELEMENTWISE_OPS = {"MUL": "Mul", "ADD": "Add", "SUB": "Sub", "MIN": "Minimum", "MAX": "Maximum",
                    "LRELU": "LeakyRelu", "ABS": "Abs", "CLZ": "CLZ", "SHR": "SHR", "SHL": "SHL"}
_POOL_OPS = {"MAX": "MaxPool", "AVERAGE": "AvgPool", "REDUCE_SUM": "ReduceSum"}


class CycleModel:
    """Vela's architecture description for one accelerator, created on first use (importing Vela is slow)."""

    def __init__(self, accelerator: Accelerator):
        self._accelerator = accelerator
        self._arch = None

    def _vela(self):
        if self._arch is None:
            with contextlib.redirect_stdout(io.StringIO()):  # Vela announces its default configuration
                from ethosu.vela.architecture_features import Accelerator as VelaAccelerator
                from ethosu.vela.architecture_features import create_default_arch

                self._arch = create_default_arch(VelaAccelerator[_ACCELERATOR_NAMES[self._accelerator.name]])
        return self._arch

    def _area(self, region):
        """Region 0 is flash; the other regions and SHRAM are SRAM."""
        from ethosu.vela.tensor import MemArea

        return MemArea.OffChipFlash if region == 0 else MemArea.Sram

    def _memory_cycles(self, bytes_read: dict, bytes_written: dict) -> float:
        arch = self._vela()
        total = 0.0
        for counter in (bytes_read, bytes_written):
            for region, count in counter.items():
                total += count / arch.memory_bandwidths_per_cycle[self._area(region)]
        return total

    def block(self, op: BlockOperation, bytes_read: dict, bytes_written: dict) -> int:
        """Estimated cycles of a CONV/DEPTHWISE/POOL/ELEMENTWISE operation."""
        from ethosu.vela.architecture_allocator import ArchitectureBlockConfig
        from ethosu.vela.architecture_features import SHRAMElements
        from ethosu.vela.npu_performance import PerformanceQuery, measure_cycle_cost
        from ethosu.vela.operation import Kernel, NpuBlockType, Op
        from ethosu.vela.shape4d import Shape4D
        from ethosu.vela.tensor import TensorFormat

        arch = self._vela()
        if op.kind == CONV:
            block_type, op_type = NpuBlockType.ConvolutionMxN, Op.Conv2DBias
        elif op.kind == DEPTHWISE:
            block_type, op_type = NpuBlockType.ConvolutionDepthWise, Op.DepthwiseConv2DBias
        elif op.kind == ELEMENTWISE:
            block_type, op_type = NpuBlockType.ElementWise, getattr(Op, _ELEMENTWISE_OPS[op.mode])
        else:
            block_type = NpuBlockType.ReduceSum if op.mode == "REDUCE_SUM" else NpuBlockType.Pooling
            op_type = getattr(Op, _POOL_OPS[op.mode])
        function = op.output.function
        fused = {activation.TANH: Op.Tanh, activation.SIGMOID: Op.Sigmoid}.get(function)
        if activation.is_lut(function):
            fused = Op.LUT

        def fm_format(fm):
            return TensorFormat.NHCWB16 if fm.brick else TensorFormat.NHWC

        query = PerformanceQuery(block_type)
        query.ifm_shape = Shape4D(1, *op.ifm.shape)
        query.ifm_format, query.ifm_bits = fm_format(op.ifm), op.ifm.bits
        query.ifm_memory_area = self._area(op.ifm.region)
        if op.ifm2 is not None:
            query.ifm2_shape = Shape4D(1, *op.ifm2.shape)
            query.ifm2_format, query.ifm2_bits = fm_format(op.ifm2), op.ifm2.bits
            query.ifm2_memory_area = self._area(op.ifm2.region)
        query.ofm_shape = Shape4D(1, *op.ofm.shape)
        query.ofm_format, query.ofm_bits = fm_format(op.ofm), op.ofm.bits
        query.ofm_memory_area = self._area(op.ofm.region)
        if op.weights is not None:
            query.const_shape = Shape4D(1, 1, 1, op.ofm.depth)
            query.const_memory_area = self._area(op.weights.region)
        kernel = op.kernel
        query.kernel = Kernel(kernel.width, kernel.height, kernel.stride_x, kernel.stride_y,
                              kernel.dilation_x, kernel.dilation_y)
        block_h, block_w, block_d = op.block
        if op.kind == CONV:
            ifm_block_depth = min(op.ifm.depth, 16 if kernel.part_kernel or op.ifm.bits == 16 else 32)
        else:
            ifm_block_depth = block_d
        config = ArchitectureBlockConfig()
        config.ofm_block = Shape4D(1, block_h, block_w, block_d)
        config.ifm_block = Shape4D(1, (block_h - 1) * kernel.stride_y + kernel.extent_h,
                                   (block_w - 1) * kernel.stride_x + kernel.extent_w, ifm_block_depth)
        config.acc_type = SHRAMElements.Acc40 if op.acc_bits == 40 else SHRAMElements.Acc32
        config.is_partkernel = kernel.part_kernel
        query.config = config
        compute = measure_cycle_cost(arch, op_type, fused, query).op_cycles
        return int(math.ceil(max(compute, self._memory_cycles(bytes_read, bytes_written))))

    def dma(self, transfer: DmaTransfer) -> int:
        """Estimated cycles of a DMA transfer."""
        from ethosu.vela.npu_performance import measure_mem2mem_cycles

        source, destination = self._area(transfer.src_region), self._area(transfer.dst_region)
        return int(math.ceil(measure_mem2mem_cycles(self._vela(), source, destination, transfer.nbytes)))


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
