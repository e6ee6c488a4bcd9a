"""NPU_OP_DMA_START: copy bytes between regions, or from a region into SHRAM (the LUT area).

Each side has a stride mode. 1D: contiguous bytes. 2D: DMA0_SIZE0 rows of DMA0_LEN bytes, row r at
address + r * (LEN + SKIP0). 3D: DMA0_SIZE1 planes of SIZE0 rows, plane p at address + p * (LEN * SIZE0 + SKIP1);
3D with a non-zero SKIP0 is not modelled. The transfer moves LEN * SIZE0 (if either side is 2D or 3D) * SIZE1
(if either side is 3D) bytes. An INTERNAL destination is SHRAM; its region number is not used.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...arch.cycles import SHRAM
from ..errors import SimulatorError
from ..memory import Memory
from ..regfile import RegisterFile


@dataclass(frozen=True)
class DmaTransfer:
    """One DMA command as the registers describe it; `nbytes` is the amount moved."""

    src_region: int | str
    src: int
    dst_region: int | str
    dst: int
    length: int
    src_mode: int
    dst_mode: int
    size0: int
    size1: int
    skip0: int
    skip1: int

    @property
    def nbytes(self) -> int:
        mode = max(self.src_mode, self.dst_mode)
        return self.length * (self.size0 if mode >= 1 else 1) * (self.size1 if mode == 2 else 1)


def decode(regs: RegisterFile) -> DmaTransfer:
    if regs.field("DMA0_SRC_REGION", "internal"):
        raise regs.error("DMA0_SRC_REGION", "DMA from SHRAM is not supported")
    channel_mode = regs.operation.param
    if channel_mode:
        raise SimulatorError(f"{regs.where()}: channel/mode parameter {channel_mode:#x} is not supported (only 0)")
    internal = regs.field("DMA0_DST_REGION", "internal")
    transfer = DmaTransfer(
        src_region=regs.field("DMA0_SRC_REGION", "region"),
        src=regs.raw("DMA0_SRC"),
        dst_region=SHRAM if internal else regs.field("DMA0_DST_REGION", "region"),
        dst=regs.raw("DMA0_DST"),
        length=regs.raw("DMA0_LEN"),
        src_mode=regs.field("DMA0_SRC_REGION", "stride_mode"),
        dst_mode=regs.field("DMA0_DST_REGION", "stride_mode"),
        size0=regs.param("DMA0_SIZE0"),
        size1=regs.param("DMA0_SIZE1"),
        skip0=regs.raw("DMA0_SKIP0"),
        skip1=regs.raw("DMA0_SKIP1"),
    )
    if max(transfer.src_mode, transfer.dst_mode) == 2 and transfer.skip0:
        raise regs.error("DMA0_SKIP0", "3D transfers with a non-zero SKIP0 are not modelled")
    return transfer


def _side(transfer: DmaTransfer, mode: int, address: int) -> tuple[int, tuple[int, ...], tuple[int, ...]]:
    """(offset, shape, byte strides) of one side of the transfer."""
    length, size0, size1 = transfer.length, transfer.size0, transfer.size1
    overall = max(transfer.src_mode, transfer.dst_mode)
    rows = size0 if overall >= 1 else 1
    planes = size1 if overall == 2 else 1
    if mode == 0:
        return address, (planes, rows, length), (rows * length, length, 1)
    if mode == 1:
        return address, (planes, rows, length), (rows * (length + transfer.skip0), length + transfer.skip0, 1)
    return address, (planes, rows, length), (length * size0 + transfer.skip1, length, 1)


def execute(transfer: DmaTransfer, regs: RegisterFile, memory: Memory) -> None:
    where = regs.where()
    src_offset, shape, src_strides = _side(transfer, transfer.src_mode, transfer.src)
    dst_offset, _, dst_strides = _side(transfer, transfer.dst_mode, transfer.dst)
    source = memory.view(transfer.src_region, src_offset, shape, src_strides, np.uint8,
                         f"{where}: DMA source at {regs.describe('DMA0_SRC')}")
    data = source.copy()
    memory.view(transfer.dst_region, dst_offset, shape, dst_strides, np.uint8,
                f"{where}: DMA destination at {regs.describe('DMA0_DST')}", write=True)[...] = data
