"""The simulator's cycle estimates: per decoded operation (`CycleModel`) and for the whole stream (`Timeline`).

Per operation the estimate is the shared cycle model's (`ethosu_tvm.arch.cycles`), asked in terms of the decoded
registers: the traffic it counts (re-reads per OFM block included) follows from the operation's shapes, block and
streams, not from the bytes a run touched. Whole stream: the DMA engine and the compute pipeline run
concurrently, each in stream order, and only NPU_OP_DMA_WAIT / NPU_OP_KERNEL_WAIT make one wait for the other; the
elapsed time is when the last one finishes. Commands are issued in stream order with at most two kernels in
flight (Vela's `max_outstanding_kernels`), so a DMA starts no earlier than the end of the kernel before the last
one issued: it can overlap the operation just before it, not ones further back. BLOCKDEP chaining between kernels
is not credited.

The constants' memory (region 0: the flash or DRAM, on AXI1) has one port, which a DMA from it and an operation
reading its weights, scales or constant operands from it share (under Dedicated_Sram, also an operation's feature
maps in that DRAM): its transfers are served one after the other, in the order they begin. An operation uses the
port from its start for `constants` cycles (`arch.cycles.constants_cycles`: its region-0 bytes, re-reads included,
and its DRAM feature-map bytes, at the port's rate); a DMA from region 0
that it overlaps gets the port once those reads are done, and an operation that starts while such a DMA is still
running gets it once the DMA is done (it then finishes no earlier than that plus its `constants` cycles). Either
way the span in which the two overlap takes the sum of their bytes over the port's rate (the DMA's read latency
included), and neither is slowed further: the other memories and the compute go on meanwhile.
"""
from __future__ import annotations

import math

from ..arch import Accelerator
from ..arch.cycles import BlockCost, CostedFeatureMap, Traffic, block_cost, dma_cycles, touched_traffic
from ..arch.system import DEFAULT_SYSTEM, System
from . import activation
from .operation import BlockOperation
from .ops.dma import DmaTransfer


def _costed(fm) -> CostedFeatureMap:
    return CostedFeatureMap(fm.shape, fm.bits, fm.region, fm.brick)


def _function_and_streams(op: BlockOperation) -> tuple[str | None, tuple[tuple[int, int], ...], int]:
    """The cost model's terms for what an operation reads besides feature maps: its fused function ("TANH",
    "SIGMOID", "LUT" or None), its weight and scale streams (region, bytes) and the bytes its table lookup reads."""
    function = op.output.function
    lut = activation.is_lut(function)
    fused = "LUT" if lut else {activation.TANH: "TANH", activation.SIGMOID: "SIGMOID"}.get(function)
    streams = tuple((stream.region, stream.length) for stream in op.weights + op.scales)
    return fused, streams, activation.table_bytes(op.output) if lut else 0


def touched(op: BlockOperation) -> Traffic:
    """The bytes a decoded operation touches once, per region (`arch.cycles.touched_traffic`)."""
    _, streams, lut_bytes = _function_and_streams(op)
    return touched_traffic(_costed(op.ifm), _costed(op.ifm2) if op.reads_ifm2 else None, _costed(op.ofm), streams,
                           lut_bytes)


class CycleModel:
    """The cycle estimates of one accelerator's operations, as decoded from its registers, in one system."""

    def __init__(self, accelerator: Accelerator, system: System = DEFAULT_SYSTEM):
        self._accelerator = accelerator
        self._system = system.for_accelerator(accelerator)

    def block(self, op: BlockOperation) -> BlockCost:
        """The estimate of a CONV/DEPTHWISE/POOL/ELEMENTWISE operation: compute and memory cycles (they overlap)."""
        fused, streams, lut_bytes = _function_and_streams(op)
        return block_cost(self._system, self._accelerator, op.kind, op.mode, fused, _costed(op.ifm),
                          _costed(op.ifm2) if op.ifm2 is not None else None, not op.reads_ifm2, _costed(op.ofm),
                          op.kernel, op.block, op.acc_bits, streams, lut_bytes)

    def dma(self, transfer: DmaTransfer) -> int:
        """Estimated cycles of a DMA transfer."""
        return int(math.ceil(dma_cycles(self._system, transfer.src_region, transfer.dst_region, transfer.nbytes)))

    def constants(self, op: BlockOperation) -> int:
        """Cycles the operation spends on the constants' memory's port."""
        return self.block(op).constants_cycles


class Timeline:
    """Concurrent DMA and compute queues, synchronised only by the stream's wait commands, sharing the constants'
    memory's port."""

    def __init__(self) -> None:
        self._dma_ends: list[int] = []
        self._kernel_ends: list[int] = []
        self._port_free = 0  # when the constants' port has served every transfer from it queued so far
        self._dma_ready = self._kernel_ready = 0  # earliest start allowed by the waits so far

    def copy(self) -> Timeline:
        """A timeline in this one's state that goes on independently (to time what may follow it several ways)."""
        other = Timeline()
        other._dma_ends, other._kernel_ends = list(self._dma_ends), list(self._kernel_ends)
        other._port_free, other._dma_ready, other._kernel_ready = self._port_free, self._dma_ready, self._kernel_ready
        return other

    def no_sooner_than(self, other: Timeline, outstanding: int = 0) -> bool:
        """Whether every time this timeline goes on from is at least `other`'s, for commands that wait with at most
        `outstanding` others running: the same commands then end no sooner on this one (each time they take is a
        maximum of sums of these; ends come in order, so those before the last few are never waited for)."""
        return (self._port_free >= other._port_free and self._dma_ready >= other._dma_ready
                and self._kernel_ready >= other._kernel_ready
                and _no_sooner(self._dma_ends, other._dma_ends, outstanding + 1)
                and _no_sooner(self._kernel_ends, other._kernel_ends, max(outstanding + 1, 2)))  # `dma` reads two

    @staticmethod
    def _all_but_last(ends: list[int], outstanding: int) -> int:
        done = ends[: max(len(ends) - outstanding, 0)]
        return max(done, default=0)

    def dma(self, cycles: int, from_constants: bool = False) -> int:
        """Queue a DMA transfer (`from_constants`: reading the constants' memory); returns when it ends."""
        issued = self._kernel_ends[-2] if len(self._kernel_ends) > 1 else 0
        start = max(self._dma_ready, self._dma_ends[-1] if self._dma_ends else 0, issued)
        if from_constants:
            start = max(start, self._port_free)
            self._port_free = start + cycles
        self._dma_ends.append(start + cycles)
        return self._dma_ends[-1]

    def kernel(self, cycles: int, constants: int = 0) -> int:
        """Queue a block operation that reads the constants' memory for `constants` of its `cycles`; returns when
        it ends."""
        start = max(self._kernel_ready, self._kernel_ends[-1] if self._kernel_ends else 0)
        end = start + cycles
        if constants:
            reads = max(start, self._port_free)  # after a transfer from the constants still on the port
            self._port_free = reads + constants
            end = max(end, self._port_free)
        self._kernel_ends.append(end)
        return end

    def dma_wait(self, outstanding: int) -> None:
        """Kernels wait until at most `outstanding` DMA transfers are still running."""
        self._kernel_ready = max(self._kernel_ready, self._all_but_last(self._dma_ends, outstanding))

    def kernel_wait(self, outstanding: int) -> None:
        """DMA waits until at most `outstanding` kernels are still running."""
        self._dma_ready = max(self._dma_ready, self._all_but_last(self._kernel_ends, outstanding))

    @property
    def elapsed(self) -> int:
        return max(self._dma_ends + self._kernel_ends, default=0)

    @property
    def computed(self) -> int:
        """When the block operations queued so far end."""
        return self._kernel_ends[-1] if self._kernel_ends else 0


def _no_sooner(ends: list[int], others: list[int], count: int) -> bool:
    """Whether each of the last `count` of `ends` is at least the one of `others` as far from the last (an absent
    one taken as 0)."""
    return all((ends[-j] if j <= len(ends) else 0) >= (others[-j] if j <= len(others) else 0)
               for j in range(1, count + 1))
