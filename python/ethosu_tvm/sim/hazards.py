"""Races between the DMA engine and the compute pipeline, which a sequential run of the stream cannot show.

On the hardware a DMA runs concurrently with block operations (kernels); only NPU_OP_DMA_WAIT n (the next kernel
starts once at most the last n DMAs issued are running) and NPU_OP_KERNEL_WAIT n (likewise the next DMA, for
kernels) order them. The check walks the stream keeping the DMAs and kernels issued but not known to be complete,
and refuses an operation that touches bytes one of the other kind may still be touching, where either writes them:
a kernel reading or writing what a DMA writes, or writing what it reads, and the converse.

What is known complete is ordering, not timing: each queue completes in issue order; a wait completes all but the
last n of its queue; and the command queue stalls issuing an operation while its queue is full, so at most
`Accelerator.outstanding_dmas` DMAs (Vela's `max_outstanding_dma`: one on the U55, two on the U65) and
`OUTSTANDING_KERNELS` kernels (Vela's `max_outstanding_kernels`) run at once, the one just issued included. These
are the guarantees Vela's `get_wait_dependency` relies on when it places the waits.

The bytes are those the run actually accessed (`Memory.accesses`: each view's extent, per region), so the check
needs a run first. Regions are compared by number, as Vela does: aliased base pointers are not seen. A kernel also
uses SHRAM for its input buffers and accumulators: every bank but the LUT's two, except on a 16-bank SHRAM, which
keeps no banks in reserve, when it reads no table (then a DMA loading a LUT must wait for it to finish with them).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..arch import Accelerator
from ..arch.cycles import SHRAM
from .errors import SimulatorError
from .memory import Access
from .registers import Command

OUTSTANDING_KERNELS = 2
SMALL_SHRAM_BANKS = 16  # up to this many banks, the LUT's are not kept in reserve
_VERB = {False: "reads", True: "writes"}
_DOING = {False: "reading", True: "writing"}


def _overlap(first: Access, second: Access) -> tuple[int, int] | None:
    """The bytes both accesses touch when at least one writes them, else None."""
    if first.region != second.region or not (first.write or second.write):
        return None
    start, end = max(first.start, second.start), min(first.end, second.end)
    return (start, end) if start < end else None


def _kernel_accesses(accesses: list[Access], accelerator: Accelerator) -> list[Access]:
    """A kernel's accesses plus the SHRAM banks it may use (Vela's `available_shram_banks`)."""
    reserved = accelerator.shram_banks > SMALL_SHRAM_BANKS or any(access.region == SHRAM for access in accesses)
    return accesses + [Access(SHRAM, 0, accelerator.lut_base if reserved else accelerator.shram_bytes, True)]


def _conflict(command: Command, own: list[Access], running: list[tuple[Command, list[Access]]]) -> None:
    """Raise for the first access of `command` that overlaps one of an operation of the other kind still running."""
    for access in own:
        for other, others in reversed(running):
            for theirs in others:
                overlap = _overlap(access, theirs)
                if overlap is not None:
                    raise SimulatorError(
                        f"command {command.index} ({command.opcode.mnemonic}) {_VERB[access.write]} region "
                        f"{access.region} [{overlap[0]:#x}, {overlap[1]:#x}) that command {other.index} "
                        f"({other.opcode.mnemonic}) may still be {_DOING[theirs.write]} (no wait completes it)")


def check(commands: Sequence[Command], accesses: Mapping[int, list[Access]], accelerator: Accelerator) -> None:
    """Raise SimulatorError for the first race in a stream that ran (up to its fault, if any), `accesses` its
    operations' accesses by command index (`Simulator.run`)."""
    dmas: list[tuple[Command, list[Access]]] = []
    kernels: list[tuple[Command, list[Access]]] = []
    for command in commands:
        name = command.opcode.name
        if name == "NPU_OP_DMA_WAIT":
            del dmas[: max(len(dmas) - command.param, 0)]
        elif name == "NPU_OP_KERNEL_WAIT":
            del kernels[: max(len(kernels) - command.param, 0)]
        elif command.index not in accesses:  # not an operation, or one after the stream's fault
            continue
        elif name == "NPU_OP_DMA_START":
            _conflict(command, accesses[command.index], kernels)
            dmas.append((command, accesses[command.index]))
            del dmas[: max(len(dmas) - accelerator.outstanding_dmas, 0)]
        else:
            own = _kernel_accesses(accesses[command.index], accelerator)
            _conflict(command, own, dmas)
            kernels.append((command, own))
            del kernels[: max(len(kernels) - OUTSTANDING_KERNELS, 0)]
