"""The block config of one Vela API block operation: among Vela's valid ones (`npu_find_block_configs`), the one the
cost model (`operation_cost`) estimates fastest.

Vela keeps this choice apart from the cost of an operation too (its architecture allocator against its performance
model); code generation asks it for every operation it builds, and the stripe costs the cascader ranks with ask it
for the operation code generation would build, so that both rank alternatives alike.
"""
from __future__ import annotations

import contextlib
import copy
import functools
import io
import itertools

from ethosu.vela import api as vapi

from ..arch import from_vela
from ..arch.cycles import vela_arch
from ..arch.system import CONSTANTS_REGION, DEFAULT_SYSTEM, System
from ..legalize.ops import Conv2D
from .operation_cost import Costing, costing, estimate_cycles
from .weight_stream import encoded_stream_bytes, encoded_weights_at


def find_block_configs(npu_op: vapi.NpuBlockOperation, accelerator: vapi.NpuAccelerator) -> list[vapi.NpuShape3D]:
    """Vela's valid block configs for the operation; empty when no block's buffers fit in SHRAM (Vela asserts
    then)."""
    return list(_find_block_configs(_BlockSearch(npu_op), accelerator))


@functools.lru_cache(maxsize=1 << 12)
def _find_block_configs(search: "_BlockSearch", accelerator: vapi.NpuAccelerator) -> tuple[vapi.NpuShape3D, ...]:
    """find_block_configs, once per search key (a convolution is searched streaming and buffered, and networks
    repeat layer shapes with other weights and quantization).

    Whether a block fits in SHRAM does not depend on the OFM's shape, except a height of one row (Vela's Conv1D
    case, apart in the key): the OFM only bounds the blocks tried. Heights and widths go in steps of the micro
    block's, but at least 2 (Vela's API means 2 for an upscaled IFM, but its test compares two different enums:
    always 2), up to the first one reaching the OFM's; depths in micro-block steps that are multiples of 16 (Vela's
    OFMSplitDepth) below the OFM's, then the first one reaching it. So an OFM no larger than one already searched
    with the same family (a cascade's stripes after the whole tensor, a later layer of fewer channels), of the
    same depth or of a multiple of 16 (whose tried depths are all tried for the deeper one), takes the configs of
    that search that are that small, in Vela's order, instead of a search of its own."""
    height, width, depth = search.extent
    family = (search.family, accelerator)
    for most_height, most_width, most_depth, configs in _SEARCHES.get(family, ()):
        if most_height >= height and most_width >= width and (most_depth == depth or
                                                               most_depth > depth and depth % 16 == 0):
            ublock = vela_arch(from_vela(accelerator)).ofm_ublock
            steps = max(ublock.height, 2), max(ublock.width, 2)
            return tuple(block for block in configs if block.height - steps[0] < height and
                         block.width - steps[1] < width and (most_depth == depth or block.depth <= depth))
    with contextlib.redirect_stdout(io.StringIO()):  # Vela's first call announces its default configuration
        try:
            configs = _vela_search(search.npu_op, accelerator)
        except AssertionError:  # as Vela's own search, a failed assertion in its tries means no block
            configs = ()
    _SEARCHES.setdefault(family, []).append((height, width, depth, configs))
    return configs


def _vela_search(npu_op: vapi.NpuBlockOperation, accelerator: vapi.NpuAccelerator) -> tuple[vapi.NpuShape3D, ...]:
    """What Vela's `npu_find_block_configs` answers (the same blocks tried with its `try_block_config`, in its
    order: widths, then heights, then depths), without trying the blocks that cannot fit. A block's IFM and
    accumulator banks in SHRAM grow with each of its dimensions, and so do its IFM block's, so once a block does
    not fit no deeper one of its height and width does; when the shallowest does not, no higher one of its width;
    when the lowest and shallowest does not, no wider one."""
    from ethosu.vela.architecture_allocator import try_block_config
    from ethosu.vela.architecture_features import ArchitectureFeatures, Block
    from ethosu.vela.operation import NpuBlockType
    from ethosu.vela.register_command_stream_generator import resampling_mode_map
    from ethosu.vela.register_command_stream_util import to_kernel

    if isinstance(npu_op, vapi.NpuConv2DOperation):
        block_type = NpuBlockType.ConvolutionMxN
    elif isinstance(npu_op, vapi.NpuConvDepthWiseOperation):
        block_type = NpuBlockType.ConvolutionDepthWise
    elif isinstance(npu_op, vapi.NpuPoolingOperation):
        reduce_sum = npu_op.sub_op_type == vapi.NpuPoolingOp.REDUCE_SUM
        block_type = NpuBlockType.ReduceSum if reduce_sum else NpuBlockType.Pooling
    else:
        block_type = NpuBlockType.ElementWise
    part_kernel = (isinstance(npu_op, vapi.NpuConv2DOperation)
                   and npu_op.block_traversal == vapi.NpuBlockTraversal.PART_KERNEL_FIRST)
    ifm, ifm2, ofm = npu_op.ifm.shape, npu_op.ifm2.shape if npu_op.ifm2 is not None else None, npu_op.ofm.shape
    lut = npu_op.activation is not None and npu_op.activation.op_type == vapi.NpuActivationOp.TABLE_LOOKUP
    arguments = (block_type, Block(ofm.width, ofm.height, ofm.depth), Block(ifm.width, ifm.height, ifm.depth),
                 None if ifm2 is None else Block(ifm2.width, ifm2.height, ifm2.depth), npu_op.ifm2_scalar is not None,
                 npu_op.ifm.data_type.size_in_bits(), part_kernel, to_kernel(npu_op.kernel), 2 if lut else 0,
                 all(fm is None or fm.quantization is not None for fm in (npu_op.ifm, npu_op.ifm2, npu_op.ofm)),
                 resampling_mode_map[npu_op.ifm_upscale])
    arch = vela_arch(from_vela(accelerator))
    most, ublock = arch.ofm_block_max, arch.ofm_ublock
    step_w, step_h = max(ublock.width, 2), max(ublock.height, 2)  # 2 always: see `_find_block_configs`
    most_w, most_h, most_d = min(most.width, ofm.width), min(most.height, ofm.height), min(most.depth, ofm.depth)
    depths = [c for c in range(ublock.depth, most_d + ublock.depth, ublock.depth)
              if c >= most_d or c % ArchitectureFeatures.OFMSplitDepth == 0]
    configs = []
    for w in range(step_w, most_w + step_w, step_w):
        for h in range(step_h, most_h + step_h, step_h):
            fitting = list(itertools.takewhile(
                lambda c: try_block_config(Block(w, h, c), arch, *arguments) is not None, depths))
            configs += [vapi.NpuShape3D(h, w, c) for c in fitting]
            if not fitting:
                break
        if h == step_h and not fitting:
            break
    return tuple(configs)


# (search family, accelerator) → the OFM height, width and depth (up to SEARCH_EXTENT) of each search of the family
# so far, and its configs
_SEARCHES: dict[tuple, list[tuple[int, int, int, tuple[vapi.NpuShape3D, ...]]]] = {}

# At least Vela's largest OFM block (ofm_block_max) on every accelerator, as (height, width, depth).
SEARCH_EXTENT = (32, 64, 128)


def _search_shapes(npu_op: vapi.NpuBlockOperation) -> tuple:
    """What Vela's block-config search reads of the feature maps' shapes: the OFM's, each axis only up to the
    largest block (the blocks tried stop there), and whether it is one row high (its Conv1D case); and the depth of
    the IFM, or of IFM2 when IFM2 has more elements (Vela's elementwise correction), only up to 32: Vela reads it
    only through the IFM block depth of a convolution, at most 32 channels (`_ifm_blockdepth`)."""
    ofm, ifm, ifm2 = npu_op.ofm.shape, npu_op.ifm.shape, npu_op.ifm2.shape if npu_op.ifm2 is not None else None
    if ifm2 is not None and ifm2.height * ifm2.width * ifm2.depth > ifm.height * ifm.width * ifm.depth:
        ifm = ifm2
    extent = tuple(min(size, most) for size, most in zip((ofm.height, ofm.width, ofm.depth), SEARCH_EXTENT))
    return extent, ofm.height == 1, min(ifm.depth, 32)


class _BlockSearch:
    """A block operation, compared by what Vela's block-config search reads of it: the block type and traversal,
    the feature maps' shapes as far as the search reads them (`_search_shapes`), the IFM's element size and
    upscaling, the kernel, whether a LUT takes SHRAM, whether every feature map is quantized and whether IFM2 is a
    scalar. Not weights, addresses, scales or names: the stripes of one primitive at many heights are one search.
    Its `family` is all of that but the OFM's extent."""

    def __init__(self, npu_op: vapi.NpuBlockOperation):
        self.npu_op = npu_op
        kernel = npu_op.kernel
        fms = (npu_op.ifm, npu_op.ifm2, npu_op.ofm)
        self.extent, *shapes = _search_shapes(npu_op)
        self.family = (
            type(npu_op).__name__, getattr(npu_op, "sub_op_type", None), getattr(npu_op, "block_traversal", None),
            *shapes, npu_op.ifm2 is not None,
            npu_op.ifm.data_type.size_in_bits(), npu_op.ifm_upscale,
            None if kernel is None else (kernel.width, kernel.height, kernel.stride_x, kernel.stride_y,
                                         kernel.dilation_x, kernel.dilation_y),
            npu_op.activation is not None and npu_op.activation.op_type == vapi.NpuActivationOp.TABLE_LOOKUP,
            all(fm is None or fm.quantization is not None for fm in fms), npu_op.ifm2_scalar is not None,
        )
        self.key = self.family, self.extent

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
    return _choose_block_config(_BlockSearch(npu_op), costing(npu_op, accelerator, system), accelerator, depth)


@functools.lru_cache(maxsize=1 << 12)
def _choose_block_config(search: _BlockSearch, costed: Costing, accelerator: vapi.NpuAccelerator,
                         depth: int | None) -> vapi.NpuShape3D | None:
    """choose_block_config, once per what it reads: Vela's search (`_BlockSearch`) and the cost model's
    block-independent inputs (`Costing`), so operations that differ only in addresses, names, scales or clamps
    (networks repeat layer shapes; code generation builds a convolution again with its weight buffer placed) are
    ranked once. Vela's search and this ranking dominate code generation's time."""
    configs = find_block_configs(search.npu_op, accelerator)
    if not configs:
        return None
    configs = [c for c in configs if c.depth == depth] or configs
    height, width, ofm_depth = costed.ofm.shape

    def rank(block: vapi.NpuShape3D, traffic):
        cost = costed.cost(block, traffic)
        blocks = -(-height // block.height) * -(-width // block.width) * -(-ofm_depth // block.depth)
        return (cost.cycles, cost.compute_cycles, cost.weight_bytes_fetched, blocks,
                block.height * block.width * block.depth, tuple(block))

    # Ranked in order of a lower bound of their cycles (`Costing.least_cycles`): once that bound exceeds the best
    # cycles found, no later config can win, and Vela's compute estimate is not asked for it.
    best, best_rank = None, None
    bounded = []
    for block in configs:
        traffic = costed.traffic(block)
        bounded.append((costed.least_cycles(block, traffic), block, traffic))
    for bound, block, traffic in sorted(bounded, key=lambda c: c[0]):
        if best_rank is not None and bound > best_rank[0]:
            break
        block_rank = rank(block, traffic)
        if best_rank is None or block_rank < best_rank:
            best, best_rank = block, block_rank
    return best


def buffered_block_config(npu_op: vapi.NpuBlockOperation, op: Conv2D, start: int, stop: int,
                          accelerator: vapi.NpuAccelerator, depth: int | None = None,
                          system: System = DEFAULT_SYSTEM) -> vapi.NpuShape3D | None:
    """The block config of `op`'s convolution `npu_op` (output channels start..stop−1) reading its weights from an
    SRAM buffer. `choose_block_config` ranks with the streams' uncompressed sizes, while each block depth has its
    own encoded stream; so of the configs it ranks best with the weights in SRAM and in flash, the one with fewer
    cycles reading the encoded streams from SRAM (None when no block fits). Both candidates' streams are encoded
    together, on two cores when they are large (`weight_encoder`)."""
    candidates = []
    for region in (system.cache_region, CONSTANTS_REGION):
        trial = copy.copy(npu_op)
        trial.weights, trial.biases = [vapi.NpuAddressRange(region, 0, 0)], [vapi.NpuAddressRange(region, 0, 0)]
        block = choose_block_config(trial, accelerator, depth, system)
        if block is not None and block not in candidates:
            candidates.append(block)

    def cycles(block: vapi.NpuShape3D) -> int:
        trial = copy.copy(npu_op)
        weights, biases = encoded_stream_bytes(op, start, stop, block.depth, accelerator)
        trial.block_config = block
        trial.weights = [vapi.NpuAddressRange(system.cache_region, 0, weights)]
        trial.biases = [vapi.NpuAddressRange(system.cache_region, 0, biases)]
        return estimate_cycles(trial, accelerator, system=system).cycles

    encoded_weights_at(op, start, stop, [block.depth for block in candidates], accelerator)
    return min(candidates, key=cycles, default=None)


def frugal_block_config(npu_op: vapi.NpuBlockOperation, accelerator: vapi.NpuAccelerator,
                        depth: int | None = None, system: System = DEFAULT_SYSTEM) -> vapi.NpuShape3D | None:
    """Of Vela's valid block configs (of block depth `depth` when there are any), one of those with the fewest OFM
    blocks in height x width, the fewest estimated cycles among them: a convolution streaming its weights with it
    fetches them from flash fewest times, which leaves the flash port most free for a weight DMA issued under it
    (`cascader.buffering`). None when no block fits in SHRAM."""
    configs = find_block_configs(npu_op, accelerator)
    configs = [c for c in configs if c.depth == depth] or configs
    costed = costing(npu_op, accelerator, system)
    height, width, _ = costed.ofm.shape

    def blocks_hw(block: vapi.NpuShape3D) -> int:
        return -(-height // block.height) * -(-width // block.width)

    fewest = min(map(blocks_hw, configs), default=None)
    return min((c for c in configs if blocks_hw(c) == fewest),
               key=lambda block: (costed.cost(block).cycles, block.height * block.width * block.depth, tuple(block)),
               default=None)
