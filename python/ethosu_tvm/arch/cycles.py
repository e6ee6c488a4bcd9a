"""Cycle estimates from Vela's legacy performance model (`ethosu.vela.npu_performance`), on plain values.

One estimate serves the simulator's statistics (operations decoded from registers, `ethosu_tvm.sim.cycles`) and
the cascader's cost model (Vela API operations, `ethosu_tvm.cascader.ethosu.performance`), so that the cycles the
compiler plans with are the cycles the simulator reports.

* Block operations: max(compute, memory). Compute (`compute_cycles`) is `measure_cycle_cost` for the operation
  type, shapes, kernel, OFM block, the IFM block derived from it, accumulator width and weight order. Memory
  (`memory_cycles`) is the bytes the operation moves in each region divided by that memory's bandwidth per cycle.
* DMA (`dma_cycles`): `measure_mem2mem_cycles` for the bytes moved.

Memory areas follow Vela's Shared_Sram memory mode on the Ethos_U55_High_End_Embedded system (500 MHz): region 0
(read-only data) is off-chip flash, all other regions and SHRAM are SRAM. Vela is imported on first use.
"""
from __future__ import annotations

import contextlib
import functools
import io
from dataclasses import dataclass

from . import Accelerator
from .operation import CONV, DEPTHWISE, ELEMENTWISE, Kernel

SHRAM = "shram"  # the NPU's internal memory, as a key of the per-region traffic counters

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
def vela_arch(accelerator: Accelerator):
    """Vela's default architecture for the accelerator; importing and creating it is slow, so both happen on first
    use."""
    with contextlib.redirect_stdout(io.StringIO()):  # Vela announces its default configuration
        from ethosu.vela.architecture_features import Accelerator as VelaAccelerator
        from ethosu.vela.architecture_features import create_default_arch

        return create_default_arch(VelaAccelerator(accelerator.name))


def _area(region):
    """Region 0 is flash; the other regions and SHRAM are SRAM."""
    from ethosu.vela.tensor import MemArea

    return MemArea.OffChipFlash if region == 0 else MemArea.Sram


def memory_cycles(accelerator: Accelerator, bytes_read: dict, bytes_written: dict) -> float:
    """Cycles to move the given bytes per region (or SHRAM) at each memory's bandwidth."""
    bandwidths = vela_arch(accelerator).memory_bandwidths_per_cycle
    return float(sum(count / bandwidths[_area(region)]
                     for counter in (bytes_read, bytes_written) for region, count in counter.items()))


def dma_cycles(accelerator: Accelerator, source_region, destination_region, nbytes: int) -> float:
    """Cycles of a DMA transfer of `nbytes` between two regions (or into SHRAM)."""
    from ethosu.vela.npu_performance import measure_mem2mem_cycles

    return measure_mem2mem_cycles(vela_arch(accelerator), _area(source_region), _area(destination_region), nbytes)


@functools.lru_cache(maxsize=1 << 16)
def compute_cycles(accelerator: Accelerator, kind: str, mode: str, fused: str | None, ifm: CostedFeatureMap,
                   ifm2: CostedFeatureMap | None, ofm: CostedFeatureMap, kernel: Kernel, block: tuple[int, int, int],
                   acc_bits: int, weights_region: int | None) -> int:
    """Vela's compute-cycle estimate of one block operation.

    `kind` is one of `arch.operation`'s kinds and `mode` the pooling or elementwise mode ("" for convolutions);
    `fused` is "TANH", "SIGMOID", "LUT" or None; `block` is the OFM block (height, width, depth); `weights_region`
    is where a convolution's weight and scale streams are (None without them). Memoised: the cascader asks about
    the same stripes many times.
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
