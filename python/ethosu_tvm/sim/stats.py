"""Per-operation and whole-stream statistics: measured by a simulation run, or computed from the registers alone.

Traffic counts every byte an operation touches once: the IFM window (and IFM2 unless it is a scalar), the whole
weight and scale streams, the LUT entries it reads from SHRAM, the OFM it writes, and both sides of a DMA. A run
measures these at the memory interface; `estimate` derives the same quantities from the decoded registers (by the
cost model's `arch.cycles.touched_traffic`, as code generation's cost of an operation counts them), which is what
`python -m ethosu_tvm.sim stats` can report for a stream without its memory contents. The cycle estimate
counts more: what the hardware fetches again for every OFM block (`arch.cycles.block_traffic`).
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Callable

from ..arch import Accelerator
from ..arch.system import CONSTANTS_REGION, DEFAULT_SYSTEM, System
from . import operation
from .cycles import CycleModel, Timeline, touched
from .ops import dma
from .regfile import RegisterFile
from .registers import Command
from .stream import TIMING_ONLY, operations


@dataclass(frozen=True)
class OpStats:
    """What one NPU operation did. Regions are numbered; "shram" is the NPU's internal memory."""

    index: int  # command index of the NPU_OP_* command
    kind: str  # CONV, DEPTHWISE, POOL, ELEMENTWISE or DMA
    mode: str  # pooling or elementwise mode
    ifm_shape: tuple[int, int, int] | None
    ifm2_shape: tuple[int, int, int] | None
    ofm_shape: tuple[int, int, int] | None
    kernel: tuple[int, int] | None  # taps (height, width)
    macs: int
    blocks: int  # OFM blocks of OFM_BLK_* size
    bytes_read: dict[int | str, int]
    bytes_written: dict[int | str, int]
    cycles: int  # estimate, see cycles.py: max(compute_cycles, memory_cycles) for a block operation
    compute_cycles: int = 0  # a DMA has none
    memory_cycles: int = 0  # a DMA's are its cycles
    finish: int = 0  # when it finishes on the stream's timeline (DMA overlapping compute, cycles.Timeline)


def _sorted(counter) -> dict[int | str, int]:
    return dict(sorted(((k, v) for k, v in counter.items() if v), key=lambda item: str(item[0])))


def _traffic(counter: dict) -> str:
    return " ".join(f"{region}:{count}" for region, count in counter.items()) or "-"


def _shape(shape) -> str:
    return "x".join(map(str, shape)) if shape else "-"


@dataclass(frozen=True)
class SimStats:
    """Statistics of one stream: the operations in stream order, their totals, and the elapsed-time estimate."""

    accelerator: str
    ops: list[OpStats] = field(default_factory=list)
    elapsed_cycles: int = 0  # DMA overlapping compute as the stream's waits allow (cycles.Timeline)

    @property
    def macs(self) -> int:
        return sum(op.macs for op in self.ops)

    @property
    def cycles(self) -> int:
        """Sum of the operations' own estimates (no overlap)."""
        return sum(op.cycles for op in self.ops)

    @property
    def blocks(self) -> int:
        return sum(op.blocks for op in self.ops)

    @property
    def bytes_read(self) -> dict[int | str, int]:
        return _sorted(sum((Counter(op.bytes_read) for op in self.ops), Counter()))

    @property
    def bytes_written(self) -> dict[int | str, int]:
        return _sorted(sum((Counter(op.bytes_written) for op in self.ops), Counter()))

    def table(self) -> str:
        """A fixed-width table, one row per operation, a total row and the elapsed-time estimate."""
        header = ("cmd", "kind", "mode", "ifm", "ifm2", "ofm", "kernel", "macs", "blocks", "read", "written", "cycles")
        rows = [header]
        for op in self.ops:
            rows.append((str(op.index), op.kind, op.mode or "-", _shape(op.ifm_shape), _shape(op.ifm2_shape),
                         _shape(op.ofm_shape), _shape(op.kernel), str(op.macs), str(op.blocks),
                         _traffic(op.bytes_read), _traffic(op.bytes_written), str(op.cycles)))
        rows.append(("total", f"{len(self.ops)} ops", "", "", "", "", "", str(self.macs), str(self.blocks),
                     _traffic(self.bytes_read), _traffic(self.bytes_written), str(self.cycles)))
        widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
        lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]
        lines.insert(1, "  ".join("-" * width for width in widths))
        lines.append(f"{self.accelerator}: {self.elapsed_cycles} cycles elapsed with DMA overlapping compute "
                     f"({self.cycles} if serialised)")
        return "\n".join(lines)


def _blocks(op: operation.BlockOperation) -> int:
    h, w, d = op.block
    return -(-op.ofm.height // h) * -(-op.ofm.width // w) * -(-op.ofm.depth // d)


def _block_stats(command: Command, op: operation.BlockOperation, bytes_read: dict, bytes_written: dict,
                 cycles: CycleModel) -> OpStats:
    cost = cycles.block(op)
    return OpStats(command.index, op.kind, op.mode, op.ifm.shape, op.ifm2.shape if op.reads_ifm2 else None,
                   op.ofm.shape, (op.kernel.height, op.kernel.width), op.macs, _blocks(op), _sorted(bytes_read),
                   _sorted(bytes_written), cost.cycles, cost.compute_cycles, int(math.ceil(cost.memory_cycles)))


def _dma_stats(command: Command, transfer: dma.DmaTransfer, bytes_read: dict, bytes_written: dict,
               cycles: CycleModel) -> OpStats:
    dma_cycles = cycles.dma(transfer)
    return OpStats(command.index, "DMA", "", None, None, None, None, 0, 0, _sorted(bytes_read),
                   _sorted(bytes_written), dma_cycles, 0, dma_cycles)


Traffic = tuple[dict, dict]  # bytes read and written per region


def walk(commands: list[Command], accelerator: Accelerator,
         on_block: Callable[[operation.BlockOperation, RegisterFile], Traffic],
         on_dma: Callable[[dma.DmaTransfer, RegisterFile], Traffic], system: System = DEFAULT_SYSTEM) -> SimStats:
    """Visit every operation of a stream in order and collect its statistics; the callbacks execute (or not) the
    operation and report its traffic. Cycles are estimated for `system`."""
    cycles, timeline, ops = CycleModel(accelerator, system), Timeline(), []
    for command, regs in operations(commands):
        name = command.opcode.name
        if name == "NPU_OP_DMA_WAIT":
            timeline.dma_wait(command.param)
        elif name == "NPU_OP_KERNEL_WAIT":
            timeline.kernel_wait(command.param)
        elif name == "NPU_OP_DMA_START":
            transfer = dma.decode(regs)
            stats = _dma_stats(command, transfer, *on_dma(transfer, regs), cycles)
            ops.append(replace(stats, finish=timeline.dma(stats.cycles, transfer.src_region == CONSTANTS_REGION)))
        elif name not in TIMING_ONLY:
            op = operation.decode(regs, command)
            if op.cores > accelerator.cores:
                raise regs.error("PARALLEL_MODE", f"{op.cores} cores work on the operation, the {accelerator.name} "
                                                  f"has {accelerator.cores}")
            stats = _block_stats(command, op, *on_block(op, regs), cycles)
            ops.append(replace(stats, finish=timeline.kernel(stats.cycles, cycles.constants(op))))
    return SimStats(accelerator.name, ops, timeline.elapsed)


def _block_traffic(op: operation.BlockOperation, regs: RegisterFile) -> Traffic:
    traffic = touched(op)
    return traffic.read, traffic.written


def _dma_traffic(transfer: dma.DmaTransfer, regs: RegisterFile) -> Traffic:
    return {transfer.src_region: transfer.nbytes}, {transfer.dst_region: transfer.nbytes}


def estimate(commands: list[Command], accelerator: Accelerator, system: System = DEFAULT_SYSTEM) -> SimStats:
    """Statistics of a stream from its registers alone, without executing it (no memory needed)."""
    return walk(commands, accelerator, _block_traffic, _dma_traffic, system)
