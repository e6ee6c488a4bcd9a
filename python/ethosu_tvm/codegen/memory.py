"""Where each NPU subgraph's data lives: numbered memory regions and byte offsets in them.

Region numbering (the base-address table the driver is given, one pointer per region):

* 0 — constants: one read-only blob (flash) with every weight stream, scale/bias stream and table, each 16-byte
  aligned;
* 1 — scratch: intermediate feature maps and convolutions' weight buffers (RAM), 16-byte aligned, reused once a
  tensor is dead;
* 2 — fast scratch, under Dedicated_Sram only (`System.cache_region`): the SRAM beside the DRAM, with the weight
  buffers and the cascader's rolling buffers, or every intermediate (Vela's arena cache), planned as the scratch is;
* 3, 4, ... — one region per subgraph input, then one per output, in the NpuGraph's order.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..arch import ALIGNMENT, round_up
from ..arch.system import FAST_SCRATCH_REGION, SCRATCH_REGION
from ..legalize.ops import NpuGraph, Softmax, Tensor
from . import softmax
from ..memory import BufferInfo, PoolInfo, plan_memory
from .in_place import Alias
from .tir_to_npu import Stripe

FIRST_IO_REGION = 3
MAX_REGIONS = 8


@dataclass(frozen=True)
class Placement:
    """A tensor's home: region number and byte offset."""

    region: int
    offset: int


class ConstantPool:
    """The read-only blob of region 0, built by appending 16-byte aligned chunks, each distinct chunk once (an
    unrolled LSTM's steps share their weights; softmax sequences repeat their tables)."""

    def __init__(self):
        self._data = bytearray()
        self._chunks: dict[bytes, tuple[int, int]] = {}

    def add(self, data: bytes) -> tuple[int, int]:
        """The (offset, length) of the chunk, the length padded to 16 bytes; appended unless already there."""
        data = bytes(data)
        if data not in self._chunks:
            length = round_up(len(data))
            self._chunks[data] = (len(self._data), length)
            self._data += data + bytes(length - len(data))
        return self._chunks[data]

    def data(self) -> bytes:
        return bytes(self._data)


def nbytes(tensor: Tensor) -> int:
    return math.prod(tensor.shape) * np.dtype(tensor.dtype).itemsize


def softmax_scratch(stripe: Stripe) -> str:
    """The name of the scratch buffer a softmax stripe works in (it lives for that stripe only)."""
    return f"{stripe.ofm.tensor}#softmax{tuple(interval.start for interval in stripe.ofm.box)}"


def weight_buffer(stripe: Stripe) -> str:
    """The name of the SRAM buffer a convolution stripe's weight and scale/bias streams are DMAed into (it lives for
    that stripe and the one before, whose operations the DMA overlaps)."""
    return f"{stripe.ofm.tensor}#weights{tuple(interval.start for interval in stripe.ofm.box)}"


def plan(graph: NpuGraph, stripes: Sequence[Stripe], io_in_scratch: frozenset[str] = frozenset(),
         weight_buffers: dict[str, int] | None = None, aliases: dict[str, Alias] | None = None, verify: bool = True,
         leads: dict[str, int] | None = None, cache_region: int = SCRATCH_REGION, cache_feature_maps: bool = False
         ) -> tuple[dict[str, Placement], int, int]:
    """Place I/O in their regions and intermediates in scratch, planned by the memory planner over live ranges counted
    in NPU operations (a tensor lives from its first write to its last read), each buffer as large as the TIR
    allocates it (a rolling buffer holds only its ring). Inputs and outputs named in `io_in_scratch` go to scratch
    too, inputs live from the start and outputs to the end, so that the scratch shares their memory with the
    intermediates (as a model's I/O does in the workspace). `weight_buffers` are the sizes of the stripes' weight
    buffers by `weight_buffer` name, each live during its stripe and the one before: no operation of that stripe
    touches it, so the stream's waits let the DMA into it run during that stripe (`sim.cycles.Timeline`); one in
    `leads`, whose DMA is issued that many stripes ahead (`prefetch`), is live from as many stripes before. A tensor
    in `aliases` (see `in_place`) has no buffer of its own: it lives inside its root's, which lives from the first
    write of either. With `cache_region` the fast scratch, the weight buffers and rolling buffers are planned there
    instead, and with `cache_feature_maps` every buffer but the I/O in `io_in_scratch`. Returns (placements by
    tensor name, scratch size, fast scratch size); `verify=False` for a trial that only wants the sizes
    (`plan_memory`)."""
    placements: dict[str, Placement] = {}
    io = [t for t in graph.inputs if t.name not in io_in_scratch]
    io += [t for t in graph.outputs if t.name not in {i.name for i in graph.inputs} | io_in_scratch]
    if FIRST_IO_REGION + len(io) > MAX_REGIONS:
        raise ValueError(f"{graph.name} has {len(io)} inputs and outputs; at most {MAX_REGIONS - FIRST_IO_REGION}"
                         " fit in the NPU's base-address table")
    for index, tensor in enumerate(io):
        placements[tensor.name] = Placement(FIRST_IO_REGION + index, 0)
    buffers = _scratch_buffers(graph, stripes, io_in_scratch, set(placements), weight_buffers, aliases or {},
                               leads or {})
    cached = (_cached(buffers, stripes, weight_buffers, io_in_scratch, cache_feature_maps)
              if cache_region == FAST_SCRATCH_REGION else set())
    sizes = {}
    # The same planner as the model's workspace: the NPU's intermediates are buffers like any other.
    for region, members in ((SCRATCH_REGION, [b for b in buffers if b.name not in cached]),
                            (FAST_SCRATCH_REGION, [b for b in buffers if b.name in cached])):
        if not members:
            sizes[region] = 0
            continue
        region_plan = plan_memory(members, [PoolInfo("scratch")], verify=verify)
        for allocation in region_plan.allocations:
            placements[allocation.buffer.name] = Placement(region, allocation.offset)
        sizes[region] = region_plan.pool_sizes["scratch"]
    for tensor, alias in (aliases or {}).items():
        root = placements[alias.root]
        placements[tensor] = Placement(root.region, root.offset + alias.offset)
    return placements, sizes[SCRATCH_REGION], sizes[FAST_SCRATCH_REGION]


def _cached(buffers: list[BufferInfo], stripes: Sequence[Stripe], weight_buffers: dict[str, int] | None,
            io_in_scratch: frozenset[str], feature_maps: bool) -> set[str]:
    """The buffers the fast scratch holds: every one but the model I/O held in scratch (which the workspace shares)
    with `feature_maps`, else the weight buffers and the rolling buffers the cascader's stripes wrap around (small,
    and read back soon: Vela keeps cascaded stripes there too)."""
    if feature_maps:
        return {b.name for b in buffers} - io_in_scratch
    rolling = {region.tensor for stripe in stripes for region in (*stripe.ifms, stripe.ofm) if any(region.rings)}
    return rolling | set(weight_buffers or ())


def live_bytes(graph: NpuGraph, stripes: Sequence[Stripe], io_in_scratch: frozenset[str] = frozenset(),
               aliases: dict[str, Alias] | None = None, cache_region: int = SCRATCH_REGION,
               cache_feature_maps: bool = False) -> tuple[int, ...]:
    """The bytes of the buffers `plan` places (weight buffers aside) in `cache_region`, where the weight buffers
    go, live during each stripe: a lower bound of that region's size (the planner may leave gaps)."""
    outside = {t.name for t in graph.inputs + graph.outputs if t.name not in io_in_scratch}
    buffers = _scratch_buffers(graph, stripes, io_in_scratch, outside, None, aliases or {}, {})
    if cache_region == FAST_SCRATCH_REGION:
        cached = _cached(buffers, stripes, None, io_in_scratch, cache_feature_maps)
        buffers = [b for b in buffers if b.name in cached]
    return tuple(sum(b.size for b in buffers if b.first_use <= index <= b.last_use) for index in range(len(stripes)))


def _scratch_buffers(graph: NpuGraph, stripes: Sequence[Stripe], io_in_scratch: frozenset[str], outside: set[str],
                     weight_buffers: dict[str, int] | None, aliases: dict[str, Alias],
                     leads: dict[str, int]) -> list[BufferInfo]:
    """`plan`'s scratch buffers with their live ranges in stripes (the tensors in `outside` have regions of their
    own)."""
    def home(tensor: str) -> str:
        return aliases[tensor].root if tensor in aliases else tensor

    last_use = {}
    for index, stripe in enumerate(stripes):
        for region in [*stripe.ifms, stripe.ofm]:  # a striped tensor is also written by later stripes
            last_use[home(region.tensor)] = index
    for tensor in graph.outputs:
        if tensor.name in io_in_scratch:
            last_use[tensor.name] = len(stripes)
    buffers = [BufferInfo(t.name, round_up(nbytes(t)), 0, last_use.get(t.name, 0), ALIGNMENT)
               for t in graph.inputs if t.name in io_in_scratch]
    planned = {b.name for b in buffers}
    # A buffer is as large as the layout its writers write (a view writes its own layout at its offset).
    sizes: dict[str, int] = {}
    first_write: dict[str, int] = {}
    for index, stripe in enumerate(stripes):
        region, name = stripe.ofm, home(stripe.ofm.tensor)
        if name in outside or name in planned:
            continue
        alias = aliases.get(region.tensor)
        extent = (alias.offset if alias is not None and alias.view else 0) + \
            math.prod(region.layout) * np.dtype(region.dtype).itemsize
        sizes[name] = max(sizes.get(name, 0), extent)
        first_write.setdefault(name, index)
    for name, index in first_write.items():
        buffers.append(BufferInfo(name, round_up(sizes[name]), index, max(index, last_use.get(name, index)),
                                  ALIGNMENT))
    for index, stripe in enumerate(stripes):
        if isinstance(graph.ops[stripe.op], Softmax):
            _, height, width, depth = stripe.ofm.shape
            element = np.dtype(graph.ops[stripe.op].ifm.tensor.dtype).itemsize
            buffers.append(BufferInfo(softmax_scratch(stripe), softmax.scratch_bytes(height * width, depth, element),
                                      index, index, ALIGNMENT))
        if weight_buffers and weight_buffer(stripe) in weight_buffers:
            name = weight_buffer(stripe)
            buffers.append(BufferInfo(name, weight_buffers[name], max(index - leads.get(name, 1), 0), index,
                                      ALIGNMENT))
    return buffers
