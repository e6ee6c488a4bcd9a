"""The driver payload ("COP1") that wraps a register stream in Vela's output, and its unwrapping.

Layout (32-bit little-endian words): the fourcc 'COP1'; then driver actions, each a tag word with the action in
bits [7:0], an 8-bit extra field in bits [15:8] and a 16-bit parameter in bits [31:16]. Config (1) is followed by
the NPU config and ID words; NOP (5) pads to 16-byte alignment; CmdStream (2) carries the stream length in words
(parameter | extra << 16) and is followed by the stream itself. ReadAPB (3) and DumpSHRAM (4) are one-word
debugging actions with no effect on results.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Sequence

from .errors import SimulatorError

FOURCC = b"COP1"
_CONFIG, _CMD_STREAM, _READ_APB, _DUMP_SHRAM, _NOP = 1, 2, 3, 4, 5


@dataclass(frozen=True)
class DriverPayload:
    """What a payload says about its target and the register stream it carries."""

    macs_per_cycle: int | None  # from the Config action (all cores together), None when the payload has none
    shram_kib: int | None
    words: list[int]
    product: int | None = None  # 0 Ethos-U55, 1 Ethos-U65


def bytes_to_words(data: bytes) -> list[int]:
    """Little-endian 32-bit words; the length must be a whole number of words."""
    if len(data) % 4:
        raise SimulatorError(f"command stream of {len(data)} bytes is not a whole number of 32-bit words")
    return list(struct.unpack(f"<{len(data) // 4}I", data))


def is_driver_payload(data: bytes | Sequence[int]) -> bool:
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data[:4]) == FOURCC
    return len(data) > 0 and int(data[0]) == int.from_bytes(FOURCC, "little")


def parse_driver_payload(words: Sequence[int]) -> DriverPayload:
    """Unwrap a COP1 payload into its register stream (several CmdStream actions run back to back)."""
    if not is_driver_payload(words):
        raise SimulatorError("driver payload does not start with the 'COP1' fourcc")
    macs = shram = product = None
    stream: list[int] = []
    pos = 1
    while pos < len(words):
        tag = int(words[pos])
        action, extra, param = tag & 0xFF, (tag >> 8) & 0xFF, tag >> 16
        if action == _CONFIG:
            if pos + 2 >= len(words):
                raise SimulatorError(f"driver payload word {pos}: Config action is truncated")
            config = int(words[pos + 1])
            macs, shram, product = 1 << (config & 0xF), (config >> 8) & 0xFF, config >> 28
            pos += 3
        elif action == _CMD_STREAM:
            length = param | (extra << 16)
            if pos + 1 + length > len(words):
                raise SimulatorError(
                    f"driver payload word {pos}: CmdStream declares {length} words but only "
                    f"{len(words) - pos - 1} follow (truncated payload)"
                )
            stream.extend(int(w) for w in words[pos + 1 : pos + 1 + length])
            pos += 1 + length
        elif action in (_NOP, _READ_APB, _DUMP_SHRAM):
            pos += 1
        else:
            raise SimulatorError(f"driver payload word {pos}: unknown driver action {action} (tag {tag:#010x})")
    if not stream:
        raise SimulatorError("driver payload contains no CmdStream action")
    return DriverPayload(macs, shram, stream, product)
