"""The sticky register file: the last command that set each register, read by the operations that follow.

Vela drops register writes that would not change a value, so the state carries over from one operation to the
next. Registers never written hold their reset value 0.
"""
from __future__ import annotations

from .errors import SimulatorError
from .registers import Command, Kind, OPCODES

_BY_NAME = {op.name: op for op in OPCODES.values() if op.kind is not Kind.OPERATION}


class RegisterFile:
    """Register values plus the operation being executed, so that errors can point at both."""

    def __init__(self) -> None:
        self._last: dict[str, Command] = {}
        self.operation: Command | None = None

    def set(self, command: Command) -> None:
        self._last[command.opcode.name] = command

    def raw(self, name: str) -> int:
        """The value as `Command.value` defines it (parameter, or payload with upper bits)."""
        command = self._last.get(name)
        return 0 if command is None else command.value

    def param(self, name: str) -> int:
        command = self._last.get(name)
        return 0 if command is None else command.param

    def field(self, name: str, field: str) -> int:
        """One named field of a register's parameter (sign-extended where the field is signed)."""
        for spec in _BY_NAME[name].fields:
            if spec.name == field:
                return spec.extract(self.param(name))
        raise KeyError(f"{name} has no field {field}")

    def signed(self, name: str) -> int:
        """A register whose whole parameter is a two's complement 16-bit number."""
        value = self.param(name)
        return value - 0x10000 if value & 0x8000 else value

    def describe(self, name: str) -> str:
        """`NPU_SET_X = value (set by command N)` for error messages."""
        command = self._last.get(name)
        origin = "reset value" if command is None else f"set by command {command.index}"
        return f"{_BY_NAME[name].mnemonic} = {self.raw(name):#x} ({origin})"

    def where(self) -> str:
        """`command N (NPU_OP_X)` for the operation being executed."""
        op = self.operation
        return "before any operation" if op is None else f"command {op.index} ({op.opcode.mnemonic})"

    def error(self, name: str, message: str) -> SimulatorError:
        """An error about the value of one register, as seen by the current operation."""
        return SimulatorError(f"{self.where()}: {self.describe(name)}: {message}")
