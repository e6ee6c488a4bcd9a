"""Per-channel bias and scale records: 10 bytes per OFM channel, little-endian.

Bytes 0-4: 40-bit two's complement bias; bytes 5-8: unsigned 32-bit multiplier; byte 9: shift in bits [5:0]
(bits [7:6] reserved, zero). With two cores, each core's stream holds the records of its own channels (core c:
every second channel from c).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

RECORD_BYTES = 10


@dataclass(frozen=True)
class ChannelScales:
    bias: np.ndarray  # int64 per channel
    multiplier: np.ndarray  # int64 per channel
    shift: np.ndarray  # int64 per channel


def parse_records(data: bytes, channels: int) -> ChannelScales:
    """The first `channels` records of a scale stream; raises ValueError on reserved bits or short data."""
    if len(data) < channels * RECORD_BYTES:
        raise ValueError(f"{len(data)} bytes hold fewer than the {channels} records of {RECORD_BYTES} bytes needed")
    raw = np.frombuffer(data, dtype=np.uint8, count=channels * RECORD_BYTES).reshape(channels, RECORD_BYTES)
    raw = raw.astype(np.int64)
    bias = sum(raw[:, i] << (8 * i) for i in range(5))
    bias = np.where(bias >= 1 << 39, bias - (1 << 40), bias)
    multiplier = sum(raw[:, 5 + i] << (8 * i) for i in range(4))
    if np.any(raw[:, 9] & 0xC0):
        raise ValueError("a record sets the reserved bits [7:6] of its shift byte")
    return ChannelScales(bias, multiplier, raw[:, 9] & 0x3F)


def interleave(parts: list[ChannelScales]) -> ChannelScales:
    """The records of all channels from the cores' records, core c holding channels c, c + n, ... of n cores."""
    if len(parts) == 1:
        return parts[0]
    channels = sum(len(part.bias) for part in parts)

    def merged(field: str) -> np.ndarray:
        values = np.empty(channels, np.int64)
        for core, part in enumerate(parts):
            values[core::len(parts)] = getattr(part, field)
        return values

    return ChannelScales(merged("bias"), merged("multiplier"), merged("shift"))
