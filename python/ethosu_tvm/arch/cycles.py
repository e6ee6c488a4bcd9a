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
* Feature maps in DRAM (Dedicated_Sram's arena and I/O) cost what Vela's model says: each access counts its DRAM
  bursts (a contiguous run shorter than the 128-byte burst costs a whole one, `_burst_factor`), and Vela's compute
  estimate is told they are DRAM, adding the system's DRAM latency and transfer per block; their bursts hold the
  DRAM's port, which a weight DMA from the constants then waits for (`constants_cycles`). Feature maps in SRAM
  count their bytes, so the other memory modes cost as before.
* DMA (`dma_cycles`): the bytes at the slower side's bandwidth, plus the source's read latency.
* What an operation touches once (`touched_traffic`), re-reads aside, is what a simulation run measures at the
  memory interface: the statistics and the cost of an operation report it beside the cycles.

Bandwidths and latencies come from the system (`arch.system`): region 0 (constants) is on AXI1 (flash or DRAM)
under Shared_Sram and Dedicated_Sram, SRAM under Sram_Only; feature maps are in SRAM, but under Dedicated_Sram on
AXI1 except the fast scratch; SHRAM is SRAM. Vela is imported on first use.
"""
from __future__ import annotations

import contextlib
import copy
import functools
import io
import math
from collections import Counter
from dataclasses import dataclass

from . import Accelerator, round_up
from .operation import CONV, DEPTHWISE, ELEMENTWISE, Kernel
from .system import CONSTANTS_REGION, SHRAM, Memory, System
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
    constants_cycles: int = 0  # on the constants' memory's port (`constants_cycles`)

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


@functools.cache
def _dram_arch(accelerator: Accelerator, bytes_per_cycle: float, dram: Memory):
    """`vela_arch` with the system's DRAM (bandwidth, burst, latencies), for the compute estimate of an operation
    whose feature maps are in DRAM: Vela adds each block's DRAM latency and transfer time to its command cycles."""
    from ethosu.vela.tensor import MemArea

    arch = copy.copy(vela_arch(accelerator))
    for name in ("memory_bandwidths_per_cycle", "memory_burst_length", "memory_latency"):
        setattr(arch, name, copy.deepcopy(getattr(arch, name)))
    arch.memory_bandwidths_per_cycle[MemArea.Dram] = bytes_per_cycle
    arch.memory_burst_length[MemArea.Dram] = dram.burst_bytes
    arch.memory_latency[MemArea.Dram] = [dram.read_latency, dram.write_latency]
    return arch


def _area(region, dram_regions: frozenset = frozenset()):
    """The memory area Vela's compute estimate is told of (it adds a memory latency per block): region 0 is flash,
    feature-map regions in `dram_regions` are DRAM, the others and SHRAM are SRAM."""
    from ethosu.vela.tensor import MemArea

    if region == 0:
        return MemArea.OffChipFlash
    return MemArea.Dram if region in dram_regions else MemArea.Sram


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
                  lut_bytes: int = 0, burst=None) -> Traffic:
    """The bytes a block operation moves, computed in OFM blocks of `block` (height, width, depth).

    `ifm2` is a second operand the operation reads (None for a scalar or none); `streams` are the (region, bytes)
    of a convolution's weight and scale streams; `lut_bytes` the table entries a lookup reads from SHRAM.
    Elementwise operands are read once per OFM element (a broadcast operand too). `burst`, if given, maps a
    feature map and whether it is read to the factor its bytes count with (`_burst_factor`).
    """
    def scaled(fm, is_read, count):
        return count * burst(fm, is_read) if burst is not None else count

    read: dict = {}
    oh, ow, od = ofm.shape
    ofm_elements = oh * ow * ofm.stored_depth
    if kind == ELEMENTWISE:
        for fm in (ifm, ifm2):
            if fm is not None:
                depth = round_up(od, _BRICK_DEPTH) if fm.brick else od
                read[fm.region] = read.get(fm.region, 0) + scaled(fm, True, oh * ow * depth * fm.bits // 8)
    else:
        block_h, block_w, block_d = block
        rows = _window_sum(oh, ifm.shape[0], block_h, kernel.stride_y, kernel.extent_h)
        columns = _window_sum(ow, ifm.shape[1], block_w, kernel.stride_x, kernel.extent_w)
        sub_kernels = -(-kernel.height // _SUB_KERNEL_TAPS) * -(-kernel.width // _SUB_KERNEL_TAPS)
        depth_slices = _block_count(od, block_d) if kind == CONV else 1  # each slice reads the whole IFM depth
        read[ifm.region] = scaled(ifm, True,
                                  rows * columns * ifm.stored_depth * sub_kernels * depth_slices * ifm.bits // 8)
        blocks_hw = _block_count(oh, block_h) * _block_count(ow, block_w)
        for region, length in streams:
            read[region] = read.get(region, 0) + length * blocks_hw
    if lut_bytes:
        read[SHRAM] = read.get(SHRAM, 0) + lut_bytes
    return Traffic(read, {ofm.region: scaled(ofm, False, ofm_elements * ofm.bits // 8)})


def _ifm_block(kind: str, ifm: CostedFeatureMap, kernel: Kernel, block: tuple[int, int, int]) -> tuple[int, int, int]:
    """The IFM block (height, width, depth) Vela's estimate pairs with the OFM block `block`."""
    if kind == CONV:
        depth = min(ifm.shape[2], 16 if kernel.part_kernel or ifm.bits == 16 else 32)
    else:
        depth = block[2]
    return (block[0] - 1) * kernel.stride_y + kernel.extent_h, (block[1] - 1) * kernel.stride_x + kernel.extent_w, depth


def _fetched_ifm_block(accelerator: Accelerator, kind: str, ifm: CostedFeatureMap, kernel: Kernel,
                       block: tuple[int, int, int]) -> tuple[int, int, int]:
    """The IFM block (height, width, depth) the NPU fetches for the OFM block `block`, as Vela's block config
    sizes it: its window for one sub-kernel, in whole micro blocks; a convolution's depth is its IFM depth block,
    rounded up to the IFM micro block (to 4 at 16 bits)."""
    ublock = vela_arch(accelerator).config.ofm_ublock
    height = round_up((block[0] - 1) * kernel.stride_y + min(kernel.extent_h, _SUB_KERNEL_TAPS), ublock.height)
    width = round_up((block[1] - 1) * kernel.stride_x + min(kernel.extent_w, _SUB_KERNEL_TAPS), ublock.width)
    if kind != CONV:
        return height, width, block[2]
    if ifm.bits == 16:
        return height, width, round_up(min(ifm.shape[2], 16), 4)
    return height, width, round_up(min(ifm.shape[2], 16 if kernel.part_kernel else 32), accelerator.ifm_ublock_depth)


def _burst_factor(burst_bytes: int, cores: int, fm: CostedFeatureMap, is_read: bool,
                  block: tuple[int, int, int]) -> float:
    """How much dearer a feature map's access is than its bytes, in a memory of `burst_bytes` bursts, accessed in
    blocks of `block` (height, width, depth): Vela's transfer-efficiency estimate. The NPU fetches each block's
    contiguous runs; a run shorter than a burst still costs a whole burst."""
    _, width, depth = block
    if fm.brick:  # a brick row is contiguous over the block's width; whole bricks are contiguous over the depth
        whole_bricks = depth == fm.bits * _BRICK_DEPTH * fm.shape[1] / 8
        run = fm.bits * depth * width if whole_bricks else fm.bits * _BRICK_DEPTH * width * (1 if is_read else cores)
    elif depth * 8 == fm.bits:  # one byte deep: the block's row is contiguous
        run = fm.bits * depth * width
    elif is_read:
        run = fm.bits * depth
    else:
        run = min(64 * 8, _BRICK_DEPTH * fm.bits * cores, depth * fm.bits)
    return burst_bytes / min(burst_bytes, run // 8)


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
    """Cycles an operation spends on the port of the constants' memory (region 0), which a DMA from that memory
    shares (`sim.cycles.Timeline`): its region-0 bytes and, where that memory is the DRAM, its feature-map bytes in
    the DRAM too (Dedicated_Sram's arena and I/O, `traffic` counted in DRAM bursts), as Vela's estimate adds a
    layer's weight transfers to its DRAM feature-map accesses."""
    memory = system.memory(CONSTANTS_REGION)
    regions = sorted(set(traffic.read) | set(traffic.written), key=str)
    cycles = sum((traffic.read.get(region, 0) + traffic.written.get(region, 0)) / system.bytes_per_cycle(region)
                 for region in regions
                 if region == CONSTANTS_REGION or (memory.name == "Dram" and system.memory(region) is memory))
    return int(math.ceil(cycles))


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
    operand2 = None if ifm2_scalar else ifm2
    dram_regions = frozenset(fm.region for fm in (ifm, operand2, ofm)
                             if fm is not None and system.memory(fm.region).name == "Dram")
    dram = None
    if dram_regions:
        region = min(dram_regions)
        dram = dram_regions, system.bytes_per_cycle(region), system.memory(region)
    compute = compute_cycles(accelerator, kind, mode, fused, ifm, ifm2, ofm, kernel, block, acc_bits,
                             streams[0][0] if streams else None, dram)
    if traffic is None:
        traffic = block_traffic(kind, ifm, operand2, ofm, kernel, block, streams, lut_bytes)
    moved = traffic
    if dram_regions:
        moved = block_traffic(kind, ifm, operand2, ofm, kernel, block, streams, lut_bytes,
                              functools.partial(_dram_burst_factor, system, accelerator.cores,
                                                _fetched_ifm_block(accelerator, kind, ifm, kernel, block), block))
    return BlockCost(compute, memory_cycles(system, moved), traffic, constants_cycles(system, moved))


def _dram_burst_factor(system: System, cores: int, ifm_block: tuple[int, int, int], ofm_block: tuple[int, int, int],
                       fm: CostedFeatureMap, is_read: bool) -> float:
    """`_burst_factor` of a feature map in DRAM (read in IFM blocks, written in OFM blocks); 1 elsewhere (feature
    maps in SRAM are costed at their bytes)."""
    memory = system.memory(fm.region)
    if memory.name != "Dram":
        return 1.0
    return _burst_factor(memory.burst_bytes, cores, fm, is_read, ifm_block if is_read else ofm_block)


def compute_cycles(accelerator: Accelerator, kind: str, mode: str, fused: str | None, ifm: CostedFeatureMap,
                   ifm2: CostedFeatureMap | None, ofm: CostedFeatureMap, kernel: Kernel, block: tuple[int, int, int],
                   acc_bits: int, weights_region: int | None, dram: tuple | None = None) -> int:
    """Vela's compute-cycle estimate of one block operation.

    `kind` is one of `arch.operation`'s kinds and `mode` the pooling or elementwise mode ("" for convolutions);
    `fused` is "TANH", "SIGMOID", "LUT" or None; `block` is the OFM block (height, width, depth); `weights_region`
    is where a convolution's weight and scale streams are (None without them); `dram` is None when the feature
    maps are in SRAM, else (the DRAM regions among them, DRAM's bytes per cycle, DRAM's `Memory`).

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
    return _compute_cycles(accelerator, kind, mode, fused, ifm, ifm2, ofm, kernel, block, acc_bits, weights_region,
                           dram)


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
    return least_block_compute_cycles(dpu_terms(accelerator, kind, fused, ifm.bits, ifm.shape[2], kernel, acc_bits),
                                      ofm.shape, block)


def least_block_compute_cycles(terms: tuple, shape: tuple[int, int, int], block: tuple[int, int, int]) -> int:
    """`least_compute_cycles` of an OFM of `shape` in blocks of `block`, from the operation's `dpu_terms`: a
    block-config ranking asks them once per operation, not once per block."""
    (ublock_h, ublock_w, ublock_d), wide_step, micro_step, steps, depth_blocks, per_element, cores = terms
    (height, width, depth), (block_h, block_w, block_d) = shape, block
    block_h, block_w, block_d = min(block_h, height), min(block_w, width), min(block_d, depth)
    micro_blocks = -(-block_h // ublock_h) * -(-block_w // ublock_w)
    dpu = max(wide_step, micro_blocks * micro_step) * steps
    dpu *= -(-block_d // ublock_d) * depth_blocks
    output = math.ceil(per_element * block_h * block_w * block_d)
    blocks = -(-height // block_h) * -(-width // block_w) * -(-depth // block_d)
    return max(dpu * blocks // cores, output * blocks)


@functools.lru_cache(maxsize=1 << 10)
def dpu_terms(accelerator: Accelerator, kind: str, fused: str | None, ifm_bits: int, ifm_depth: int,
              kernel: Kernel, acc_bits: int) -> tuple:
    """What `least_compute_cycles` reads of Vela's estimate apart from the block: the micro block (height, width,
    depth), the cycles of a kernel step on few micro blocks and per micro block, the kernel steps over all
    sub-kernels, the IFM depth blocks, the output cycles per element and the cores."""
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
    micro_step = 8 if kind == DEPTHWISE and ifm_bits == 16 else 4
    return ((ublock.height, ublock.width, ublock.depth), 32 * ublock.depth // 8, micro_step, steps, depth_blocks,
            per_element, arch.ncores)


def _sub_kernel_sizes(taps: int) -> list[int]:
    """The taps of each sub-kernel along one kernel axis."""
    return [min(taps - start, _SUB_KERNEL_TAPS) for start in range(0, taps, _SUB_KERNEL_TAPS)]


@functools.lru_cache(maxsize=1 << 16)
def _compute_cycles(accelerator: Accelerator, kind: str, mode: str, fused: str | None, ifm: CostedFeatureMap,
                    ifm2: CostedFeatureMap | None, ofm: CostedFeatureMap, kernel: Kernel, block: tuple[int, int, int],
                    acc_bits: int, weights_region: int | None, dram: tuple | None = None) -> int:
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
    dram_regions = dram[0] if dram else frozenset()
    query.ifm_memory_area = _area(ifm.region, dram_regions)
    if ifm2 is not None:
        query.ifm2_shape = Shape4D(1, *ifm2.shape)
        query.ifm2_format, query.ifm2_bits = fm_format(ifm2), ifm2.bits
        query.ifm2_memory_area = _area(ifm2.region, dram_regions)
    query.ofm_shape = Shape4D(1, *ofm.shape)
    query.ofm_format, query.ofm_bits = fm_format(ofm), ofm.bits
    query.ofm_memory_area = _area(ofm.region, dram_regions)
    if weights_region is not None:
        query.const_shape = Shape4D(1, 1, 1, ofm.shape[2])
        query.const_memory_area = _area(weights_region)
    query.kernel = VelaKernel(kernel.width, kernel.height, kernel.stride_x, kernel.stride_y,
                              kernel.dilation_x, kernel.dilation_y)
    config = ArchitectureBlockConfig()
    config.ofm_block = Shape4D(1, *block)
    config.ifm_block = Shape4D(1, *_ifm_block(kind, ifm, kernel, block))
    config.acc_type = SHRAMElements.Acc40 if acc_bits == 40 else SHRAMElements.Acc32
    config.is_partkernel = kernel.part_kernel
    query.config = config
    fused_op = getattr(Op, _FUSED_OPS[fused]) if fused is not None else None
    arch = _dram_arch(accelerator, *dram[1:]) if dram else vela_arch(accelerator)
    return measure_cycle_cost(arch, op_type, fused_op, query).op_cycles
