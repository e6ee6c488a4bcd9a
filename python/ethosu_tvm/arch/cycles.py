"""The cost model of one NPU operation: cycles from Vela's legacy performance model (`ethosu.vela.npu_performance`)
for the compute, and the bytes the hardware moves for the memory, on plain values.

One estimate serves the simulator's statistics (operations decoded from registers, `ethosu_tvm.sim.cycles`) and
code generation's block choice and the cascader's stripe costs (Vela API operations,
`ethosu_tvm.codegen.operation_cost`), so that the cycles the compiler plans with are the cycles the simulator
reports.

* Block operations (`block_cost`): max(compute, memory). Compute (`compute_cycles`) is `measure_cycle_cost` for the
  operation type, shapes, kernel, OFM block, the IFM block derived from it, accumulator width and weight order.
  Memory is the traffic (`block_traffic`) each memory carries at its bandwidth; the two AXI ports (SRAM, and the
  flash under Shared_Sram) transfer concurrently, so the slower one counts.
* Traffic counts what the hardware moves, as Vela's element-access model counts it: the U55 works through the OFM
  block by block, and every OFM block reads its IFM window again (over the whole IFM depth, for a convolution in
  every OFM depth slice, and once per sub-kernel of at most 8 x 8 taps) and the weight and scale streams of its
  depth slice again. So a convolution reads its whole
  weight and scale streams once per OFM block in height x width: small blocks on a large OFM multiply the flash
  traffic.
* DMA (`dma_cycles`): the bytes at the slower side's bandwidth, plus the source's read latency.
* What an operation touches once (`touched_traffic`), re-reads aside, is what a simulation run measures at the
  memory interface: the statistics and the cost of an operation report it beside the cycles.

Bandwidths and latencies come from the system (`arch.system`): region 0 (constants) is on AXI1 (flash or DRAM)
under Shared_Sram and Dedicated_Sram, SRAM under Sram_Only; feature maps are in SRAM, but under Dedicated_Sram on
AXI1 except the fast scratch; SHRAM is SRAM. Vela is imported on first use.
"""
from __future__ import annotations

import contextlib
import functools
import io
import math
from collections import Counter
from dataclasses import dataclass

from . import Accelerator, round_up
from .operation import CONV, DEPTHWISE, ELEMENTWISE, Kernel
from .system import CONSTANTS_REGION, SHRAM, System
_SUB_KERNEL_TAPS = 8  # the U55 splits kernels into sub-kernels of at most 8 x 8 taps, each reading the IFM again
_BRICK_DEPTH = 16  # NHCWB16 stores depth in bricks of 16

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

    @property
    def stored_depth(self) -> int:
        """Depth as stored: NHCWB16 pads it to whole bricks."""
        return round_up(self.shape[2], _BRICK_DEPTH) if self.brick else self.shape[2]


@dataclass(frozen=True)
class Traffic:
    """Bytes one operation moves per region (or SHRAM), re-reads included."""

    read: dict
    written: dict


@dataclass(frozen=True)
class BlockCost:
    """The estimate of one block operation: compute cycles, memory cycles and the traffic behind them."""

    compute_cycles: int
    memory_cycles: float
    traffic: Traffic

    @property
    def cycles(self) -> int:
        return int(math.ceil(max(self.compute_cycles, self.memory_cycles)))


@functools.cache
def vela_arch(accelerator: Accelerator):
    """Vela's default architecture for the accelerator; importing and creating it is slow, so both happen on first
    use."""
    with contextlib.redirect_stdout(io.StringIO()):  # Vela announces its default configuration
        from ethosu.vela.architecture_features import Accelerator as VelaAccelerator
        from ethosu.vela.architecture_features import create_default_arch

        return create_default_arch(VelaAccelerator(accelerator.name))


def _area(region):
    """The memory area Vela's compute estimate is told of (it adds a memory latency per block): region 0 is flash,
    the other regions and SHRAM are SRAM. Feature maps, the only areas that term reads, are SRAM in every system."""
    from ethosu.vela.tensor import MemArea

    return MemArea.OffChipFlash if region == 0 else MemArea.Sram


def _block_count(size: int, block: int) -> int:
    """How many blocks of `block` elements cover `size` elements."""
    return -(-size // block)


def _window_sum(ofm_size: int, ifm_size: int, block: int, stride: int, extent: int) -> int:
    """IFM rows (or columns) read over all OFM blocks along one axis: each block's window, within the IFM. All
    blocks but the last are whole; the last has the remaining rows."""
    whole, rest = divmod(ofm_size, block)
    window = min((block - 1) * stride + extent, ifm_size) * whole
    return window + (min((rest - 1) * stride + extent, ifm_size) if rest else 0)


def block_traffic(kind: str, ifm: CostedFeatureMap, ifm2: CostedFeatureMap | None, ofm: CostedFeatureMap,
                  kernel: Kernel, block: tuple[int, int, int], streams: tuple[tuple[int, int], ...] = (),
                  lut_bytes: int = 0) -> Traffic:
    """The bytes a block operation moves, computed in OFM blocks of `block` (height, width, depth).

    `ifm2` is a second operand the operation reads (None for a scalar or none); `streams` are the (region, bytes)
    of a convolution's weight and scale streams; `lut_bytes` the table entries a lookup reads from SHRAM.
    Elementwise operands are read once per OFM element (a broadcast operand too).
    """
    read: dict = {}
    oh, ow, od = ofm.shape
    ofm_elements = oh * ow * ofm.stored_depth
    if kind == ELEMENTWISE:
        for fm in (ifm, ifm2):
            if fm is not None:
                depth = round_up(od, _BRICK_DEPTH) if fm.brick else od
                read[fm.region] = read.get(fm.region, 0) + oh * ow * depth * fm.bits // 8
    else:
        block_h, block_w, block_d = block
        rows = _window_sum(oh, ifm.shape[0], block_h, kernel.stride_y, kernel.extent_h)
        columns = _window_sum(ow, ifm.shape[1], block_w, kernel.stride_x, kernel.extent_w)
        sub_kernels = -(-kernel.height // _SUB_KERNEL_TAPS) * -(-kernel.width // _SUB_KERNEL_TAPS)
        depth_slices = _block_count(od, block_d) if kind == CONV else 1  # each slice reads the whole IFM depth
        read[ifm.region] = rows * columns * ifm.stored_depth * sub_kernels * depth_slices * ifm.bits // 8
        blocks_hw = _block_count(oh, block_h) * _block_count(ow, block_w)
        for region, length in streams:
            read[region] = read.get(region, 0) + length * blocks_hw
    if lut_bytes:
        read[SHRAM] = read.get(SHRAM, 0) + lut_bytes
    return Traffic(read, {ofm.region: ofm_elements * ofm.bits // 8})


def touched_traffic(ifm: CostedFeatureMap, ifm2: CostedFeatureMap | None, ofm: CostedFeatureMap,
                    streams: tuple[tuple[int, int], ...] = (), lut_bytes: int = 0) -> Traffic:
    """The bytes a block operation touches once, per region: its IFM (and `ifm2`, None for a scalar or none), its
    weight and scale `streams` (region, bytes), the `lut_bytes` a table lookup reads from SHRAM, and the OFM."""
    read, written = Counter(), Counter()
    for fm in (ifm, ifm2):
        if fm is not None:
            read[fm.region] += math.prod(fm.shape) * fm.bits // 8
    for region, length in streams:
        read[region] += length
    if lut_bytes:
        read[SHRAM] += lut_bytes
    written[ofm.region] += math.prod(ofm.shape) * ofm.bits // 8
    return Traffic(dict(read), dict(written))


def memory_cycles(system: System, traffic: Traffic) -> float:
    """Cycles to move the traffic: per memory its bytes at its bandwidth; the memories transfer concurrently
    (SRAM and flash sit on separate AXI ports), so the busiest one counts."""
    per_memory = {}
    for counter in (traffic.read, traffic.written):
        for region, count in counter.items():
            name, bytes_per_cycle = system.port(region)
            per_memory[name] = per_memory.get(name, 0) + count / bytes_per_cycle
    return float(max(per_memory.values(), default=0.0))


def constants_cycles(system: System, traffic: Traffic) -> int:
    """Cycles an operation spends reading the constants' memory (region 0), whose one port a DMA from that memory
    shares (`sim.cycles.Timeline`)."""
    return int(math.ceil(traffic.read.get(CONSTANTS_REGION, 0) / system.bytes_per_cycle(CONSTANTS_REGION)))


def dma_cycles(system: System, source_region, destination_region, nbytes: int) -> float:
    """Cycles of a DMA transfer of `nbytes` between two regions (or into SHRAM): the slower side's transfer time,
    the source's read latency on top."""
    return max(nbytes / system.bytes_per_cycle(source_region) + system.memory(source_region).read_latency,
               nbytes / system.bytes_per_cycle(destination_region))


def block_cost(system: System, accelerator: Accelerator, kind: str, mode: str, fused: str | None,
               ifm: CostedFeatureMap, ifm2: CostedFeatureMap | None, ifm2_scalar: bool, ofm: CostedFeatureMap,
               kernel: Kernel, block: tuple[int, int, int], acc_bits: int,
               streams: tuple[tuple[int, int], ...] = (), lut_bytes: int = 0,
               traffic: Traffic | None = None) -> BlockCost:
    """The estimate of one block operation computed in OFM blocks of `block` (see `compute_cycles` and
    `block_traffic` for the arguments; `ifm2_scalar`: IFM2 is a scalar, not read from memory; `traffic`: its
    `block_traffic` when the caller has it already)."""
    compute = compute_cycles(accelerator, kind, mode, fused, ifm, ifm2, ofm, kernel, block, acc_bits,
                             streams[0][0] if streams else None)
    if traffic is None:
        traffic = block_traffic(kind, ifm, None if ifm2_scalar else ifm2, ofm, kernel, block, streams, lut_bytes)
    return BlockCost(compute, memory_cycles(system, traffic), traffic)


def compute_cycles(accelerator: Accelerator, kind: str, mode: str, fused: str | None, ifm: CostedFeatureMap,
                   ifm2: CostedFeatureMap | None, ofm: CostedFeatureMap, kernel: Kernel, block: tuple[int, int, int],
                   acc_bits: int, weights_region: int | None) -> int:
    """Vela's compute-cycle estimate of one block operation.

    `kind` is one of `arch.operation`'s kinds and `mode` the pooling or elementwise mode ("" for convolutions);
    `fused` is "TANH", "SIGMOID", "LUT" or None; `block` is the OFM block (height, width, depth); `weights_region`
    is where a convolution's weight and scale streams are (None without them).

    Memoised by what the estimate reads: the cascader asks about one primitive's stripes at many heights. Vela's
    estimate of a windowed operation reads the OFM's height only through the block height it clamps (the blocks
    are no higher than the OFM), how many blocks cover it and whether it is one row (its Conv1D case), and the
    IFM's height only through the IFM block height it clamps (its strides do not involve the height); so both
    heights are asked as the highest OFM with as many blocks of that height and the IFM block's height. An
    elementwise estimate reads the whole OFM.
    """
    if kind != ELEMENTWISE:
        block_h = min(block[0], ofm.shape[0])
        ofm_h = -(-ofm.shape[0] // block_h) * block_h
        ifm_h = min(ifm.shape[0], (block[0] - 1) * kernel.stride_y + kernel.extent_h)
        ofm = CostedFeatureMap((ofm_h, *ofm.shape[1:]), ofm.bits, ofm.region, ofm.brick)
        ifm = CostedFeatureMap((ifm_h, *ifm.shape[1:]), ifm.bits, ifm.region, ifm.brick)
    return _compute_cycles(accelerator, kind, mode, fused, ifm, ifm2, ofm, kernel, block, acc_bits, weights_region)


def least_compute_cycles(accelerator: Accelerator, kind: str, fused: str | None, ifm: CostedFeatureMap,
                         ofm: CostedFeatureMap, kernel: Kernel, block: tuple[int, int, int], acc_bits: int) -> int:
    """A lower bound of `compute_cycles` of a convolution or depthwise convolution, in a few integer steps: Vela
    estimates at least the larger of its DPU cycles per OFM block (for each sub-kernel, its kernel steps over the
    block's micro blocks, before the delays and command overhead it may add, and for a convolution once per IFM
    depth block) and its output cycles per block, times the number of blocks. 0 for the other kinds and for an OFM
    one row high (Vela may change the micro block then). Ranking block configs, it spares Vela's estimate of the
    configs it shows to be slower."""
    if kind not in (CONV, DEPTHWISE) or ofm.shape[0] == 1:
        return 0
    (ublock_h, ublock_w, ublock_d), wide_step, steps, depth_blocks, per_element, cores = _dpu_terms(
        accelerator, kind, fused, ifm.bits, ifm.shape[2], kernel, acc_bits)
    (height, width, depth), (block_h, block_w, block_d) = ofm.shape, block
    block_h, block_w, block_d = min(block_h, height), min(block_w, width), min(block_d, depth)
    micro_blocks = -(-block_h // ublock_h) * -(-block_w // ublock_w)
    dpu = max(wide_step, micro_blocks * (8 if kind == DEPTHWISE and ifm.bits == 16 else 4)) * steps
    dpu *= -(-block_d // ublock_d) * depth_blocks
    output = math.ceil(per_element * block_h * block_w * block_d)
    blocks = -(-height // block_h) * -(-width // block_w) * -(-depth // block_d)
    return max(dpu * blocks // cores, output * blocks)


@functools.lru_cache(maxsize=1 << 10)
def _dpu_terms(accelerator: Accelerator, kind: str, fused: str | None, ifm_bits: int, ifm_depth: int,
               kernel: Kernel, acc_bits: int) -> tuple:
    """What `least_compute_cycles` reads of Vela's estimate apart from the block: the micro block (height, width,
    depth), the cycles of a kernel step on few micro blocks, the kernel steps over all sub-kernels, the IFM depth
    blocks, the output cycles per element and the cores."""
    arch = vela_arch(accelerator)
    ublock = arch.config.ofm_ublock
    ifm_block_depth = min(ifm_depth, 16 if kernel.part_kernel or ifm_bits == 16 else 32)
    steps = 0
    for rows in _sub_kernel_sizes(kernel.height):
        for columns in _sub_kernel_sizes(kernel.width):
            taps = rows * columns
            if kind == DEPTHWISE:
                steps += -(-taps // 4)
            elif kernel.part_kernel:
                steps += -(-taps // (2 if ifm_bits == 16 else 4)) * -(-ifm_block_depth // 8)
            else:
                steps += taps
    # Vela's output and activation tables: 40-bit accumulation or not; a table lookup or none
    per_element = max(arch.output_cycles_per_elem[3 if acc_bits == 40 else 7],
                      arch.activation_cycles_per_elem[2 if fused is None else 0])
    depth_blocks = -(-ifm_depth // ifm_block_depth) if kind == CONV else 1
    return ((ublock.height, ublock.width, ublock.depth), 32 * ublock.depth // 8, steps, depth_blocks, per_element,
            arch.ncores)


def _sub_kernel_sizes(taps: int) -> list[int]:
    """The taps of each sub-kernel along one kernel axis."""
    return [min(taps - start, _SUB_KERNEL_TAPS) for start in range(0, taps, _SUB_KERNEL_TAPS)]


@functools.lru_cache(maxsize=1 << 16)
def _compute_cycles(accelerator: Accelerator, kind: str, mode: str, fused: str | None, ifm: CostedFeatureMap,
                    ifm2: CostedFeatureMap | None, ofm: CostedFeatureMap, kernel: Kernel, block: tuple[int, int, int],
                    acc_bits: int, weights_region: int | None) -> int:
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
