"""The Ethos-U55/U65 functional simulator: executes a command stream against memory regions, bit-exactly.

Operations run one after another in stream order. The hardware overlaps DMA with compute and chains blocks
(BLOCKDEP), but a correct stream's results equal in-order execution, so DMA_WAIT, KERNEL_WAIT, BLOCKDEP, PMU_MASK
and IRQ only affect the timing estimate; so does the U65-512 splitting an operation's OFM depth over its two cores
(beyond which stream holds which channel's weights and scales). Whether a stream is correct in that sense, its
waits ordering every DMA and kernel that touch the same bytes, is checked where asked (`hazards`). The stream must
end with NPU_OP_STOP.
"""
from __future__ import annotations

from collections import Counter
from typing import Mapping, Sequence

from ..arch import find_accelerator
from ..arch.system import DEFAULT_SYSTEM, System
from ..arch.operation import CONV, DEPTHWISE, ELEMENTWISE, POOL
from . import featuremap, hazards, mlw, operation, output, stream
from .errors import SimulatorError
from .memory import Buffer, Memory
from .ops import conv, dma, elementwise, pool
from .registers import Command
from .stats import SimStats, walk

_EXECUTORS = {
    CONV: conv.execute,
    DEPTHWISE: conv.execute,
    POOL: pool.execute,
    ELEMENTWISE: elementwise.execute,
}
# A convolution's check returns the wait for its weight streams, which decode while the walk goes on.
_CHECKS = {CONV: conv.check, DEPTHWISE: conv.check, POOL: pool.check, ELEMENTWISE: elementwise.check}


class Simulator:
    """A functional model of one Ethos-U55 or U65 configuration (`arch.ACCELERATORS`); its cycle estimates are for
    `system` (default: Ethos_U55_High_End_Embedded, Shared_Sram) around it."""

    def __init__(self, accelerator: str = "ethos-u55-128", system: System = DEFAULT_SYSTEM):
        self.accelerator = find_accelerator(accelerator)
        self.system = system
        mlw.start()

    def commands(self, command_stream: bytes | Sequence[int]) -> list[Command]:
        """The decoded commands of a driver payload or raw register stream."""
        return stream.load(command_stream, self.accelerator)

    def run(self, command_stream: bytes | Sequence[int], regions: Mapping[int, Buffer],
            check_hazards: bool = False) -> SimStats:
        """Execute the stream; OFMs and DMA results land in the writable regions. Raises SimulatorError, also for a
        race between DMA and compute if `check_hazards` (`hazards.check`)."""
        return self._walk(command_stream, regions, False, check_hazards)

    def check(self, command_stream: bytes | Sequence[int], regions: Mapping[int, Buffer],
              check_hazards: bool = False) -> SimStats:
        """Check the stream as `run` would, every command, register rule, region and bound, the weight streams
        decoded and the scale streams parsed, DMAs done, the same bytes accessed (so `check_hazards` finds the same
        races), but compute no OFM (its bounds are checked, nothing is written to it): so what depends on the
        values goes unchecked (accumulator and OFM overflows, SHL/SHR amounts read from a tensor, weight or scale
        streams read from bytes a kernel wrote). Whether the NPU can execute the stream at all, at a fraction of
        `run`'s cost. Raises SimulatorError."""
        return self._walk(command_stream, regions, True, check_hazards)

    def _walk(self, command_stream: bytes | Sequence[int], regions: Mapping[int, Buffer], check: bool,
              check_hazards: bool) -> SimStats:
        memory = Memory(regions, self.accelerator.shram_bytes)
        accesses = {}
        decoding = []  # (command index, wait) of the weight streams decoding meanwhile (check mode), in stream order

        def measured(command, action):
            read, written, first = Counter(memory.bytes_read), Counter(memory.bytes_written), len(memory.accesses)
            action()
            accesses[command.index] = memory.accesses[first:]
            return memory.bytes_read - read, memory.bytes_written - written

        def execute(op: operation.BlockOperation, regs):
            featuremap.write(memory, op.ofm, _EXECUTORS[op.kind](op, regs, memory, self.accelerator))

        def checked(op: operation.BlockOperation, regs):
            wait = _CHECKS[op.kind](op, regs, memory, self.accelerator)
            if wait is not None:
                decoding.append((op.command.index, wait))
            output.check_reads(op.output, regs, memory, self.accelerator)
            featuremap.writable(memory, op.ofm)

        def on_block(op: operation.BlockOperation, regs):
            return measured(op.command, lambda: (checked if check else execute)(op, regs))

        def on_dma(transfer: dma.DmaTransfer, regs):
            return measured(regs.operation, lambda: dma.execute(transfer, regs, memory))

        commands = self.commands(command_stream)
        try:
            stats = walk(commands, self.accelerator, on_block, on_dma, self.system)
        finally:  # over the operations that ran: a race before a fault is the stream's first error, in either mode
            fault = _first_fault(decoding)
            ran = accesses if fault is None else {i: a for i, a in accesses.items() if i < fault[0]}
            if check_hazards:
                hazards.check(commands, ran, self.accelerator)
            if fault is not None:
                raise fault[1]
        return stats


def _first_fault(decoding: list) -> tuple[int, SimulatorError] | None:
    """The first weight stream that fails, with its operation's command index: the stream's fault is there, before
    anything the walk found after it, and the operations after it would not have run. Waits for all of them, so
    that none is left decoding."""
    faults = []
    for index, wait in decoding:
        try:
            wait()
        except SimulatorError as err:
            faults.append((index, err))
    return faults[0] if faults else None
