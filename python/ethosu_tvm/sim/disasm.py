"""A disassembler: one line per command with the register name and decoded fields, plus a summary after each
block operation of the shapes the sticky register state gives it."""
from __future__ import annotations

from typing import Iterable

from ..arch.operation import ELEMENTWISE
from . import operation
from .errors import SimulatorError
from .regfile import RegisterFile
from .registers import Command, Kind


def format_fields(command: Command) -> str:
    """`name=value` pairs, enum values by name; wide registers as hex, scales as multiplier and shift."""
    kind = command.opcode.kind
    if kind is Kind.WIDE:
        return f"{command.value:#x}"
    parts = []
    if kind is Kind.SCALE:
        parts.append(f"scale={command.value}")
    for field in command.opcode.fields:
        value = field.extract(command.param)
        parts.append(f"{field.name}={field.names[value] if field.names else value}")
    return " ".join(parts)


def _summary(op: operation.BlockOperation) -> str:
    def shape(fm):
        return "x".join(map(str, fm.shape))

    text = f"{op.kind}{' ' + op.mode if op.mode else ''}: ifm {shape(op.ifm)} {op.ifm.dtype}"
    if op.ifm2 is not None:
        text += f", ifm2 {'scalar ' + str(op.ifm2_scalar) if op.ifm2_scalar is not None else shape(op.ifm2)}"
    text += f" -> ofm {shape(op.ofm)} {op.ofm.dtype}"
    if op.kind != ELEMENTWISE:
        k = op.kernel
        text += f", kernel {k.height}x{k.width} stride {k.stride_y}x{k.stride_x}"
    return text


def disassemble(commands: Iterable[Command]) -> list[str]:
    """The listing of a decoded stream."""
    lines = []
    regs = RegisterFile()
    for command in commands:
        words = " ".join(f"{w:08x}" for w in command.words())
        lines.append(f"{command.index:5d} {command.offset * 4:#07x}  {words:<17}  {command.opcode.mnemonic:<26} "
                     f"{format_fields(command)}".rstrip())
        if command.opcode.kind is not Kind.OPERATION:
            regs.set(command)
            continue
        regs.operation = command
        if command.opcode.name in ("NPU_OP_CONV", "NPU_OP_DEPTHWISE", "NPU_OP_POOL", "NPU_OP_ELEMENTWISE"):
            try:
                lines.append(f"{'':16}; {_summary(operation.decode(regs, command))}")
            except SimulatorError as err:
                lines.append(f"{'':16}; not executable: {err}")
    return lines
