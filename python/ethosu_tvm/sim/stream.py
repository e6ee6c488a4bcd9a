"""Turning a command stream (raw words, bytes, or a COP1 driver payload) into commands, and walking its operations
with the sticky register state each one sees."""
from __future__ import annotations

from typing import Iterator, Sequence

from ..arch import ACCELERATORS, Accelerator
from .errors import SimulatorError
from .payload import bytes_to_words, is_driver_payload, parse_driver_payload
from .regfile import RegisterFile
from .registers import Command, Kind, decode_stream

# Operations that only synchronise or signal: results do not depend on them.
TIMING_ONLY = frozenset({"NPU_OP_DMA_WAIT", "NPU_OP_KERNEL_WAIT", "NPU_OP_PMU_MASK", "NPU_OP_IRQ"})


def load(command_stream: bytes | Sequence[int], accelerator: Accelerator) -> list[Command]:
    """Decode a driver payload or raw register stream, checking a payload's target against `accelerator`."""
    if isinstance(command_stream, (bytes, bytearray, memoryview)):
        words = bytes_to_words(bytes(command_stream))
    else:
        words = [int(w) for w in command_stream]
    if is_driver_payload(words):
        payload = parse_driver_payload(words)
        target = (payload.product, payload.macs_per_cycle)
        if payload.macs_per_cycle is not None and target != (accelerator.product_number, accelerator.total_macs):
            raise SimulatorError(
                f"the driver payload was compiled for {_product(payload.product)} with {payload.macs_per_cycle} "
                f"MACs/cycle, the simulator models {accelerator.name} ({accelerator.total_macs} MACs/cycle)"
            )
        words = payload.words
    return decode_stream(words, accelerator.address_bits)


def _product(number: int) -> str:
    names = {acc.product_number: acc.product for acc in ACCELERATORS.values()}
    return names.get(number, f"unknown product {number}")


def operations(commands: list[Command]) -> Iterator[tuple[Command, RegisterFile]]:
    """Each operation command with the register file as it stands; the stream must end with NPU_OP_STOP."""
    regs = RegisterFile()
    for command in commands:
        if command.opcode.kind is not Kind.OPERATION:
            regs.set(command)
            continue
        regs.operation = command
        if command.opcode.name == "NPU_OP_STOP":
            if command.index != len(commands) - 1:
                raise SimulatorError(f"{regs.where()}: {len(commands) - 1 - command.index} commands follow it")
            return
        yield command, regs
    raise SimulatorError(f"the stream ends after {len(commands)} commands without NPU_OP_STOP")
