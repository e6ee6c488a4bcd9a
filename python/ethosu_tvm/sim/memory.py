"""The NPU's view of memory: numbered regions (base pointers) plus its internal SHRAM, every access bounds-checked.

All reads and writes go through `Memory.view`, which returns a strided NumPy view after checking that its whole
extent lies inside the region, and which counts the bytes moved per region for the statistics and records the
extent for the race check (`hazards`).
"""
from __future__ import annotations

from collections import Counter
from typing import Mapping, NamedTuple

import numpy as np

from ..arch.cycles import SHRAM
from .errors import SimulatorError

Buffer = bytearray | bytes | memoryview


class Access(NamedTuple):
    """The extent of one access, bytes [start, end) of a region, which the race check (`hazards`) compares."""

    region: int | str
    start: int
    end: int
    write: bool


def _writable(buffer: Buffer) -> bool:
    return isinstance(buffer, bytearray) or (isinstance(buffer, memoryview) and not buffer.readonly)


class Memory:
    """Regions by index and the SHRAM of the accelerator. A region is a bytearray, read-only bytes, or a memoryview
    (so that several regions can alias one arena, as TFLite Micro's base pointers do)."""

    def __init__(self, regions: Mapping[int, Buffer], shram_bytes: int):
        for index, buffer in regions.items():
            if not isinstance(buffer, (bytearray, bytes, memoryview)):
                raise TypeError(f"region {index} must be a bytearray, bytes or memoryview, got {type(buffer).__name__}")
            if isinstance(buffer, memoryview) and (buffer.ndim != 1 or buffer.itemsize != 1):
                raise TypeError(f"region {index} must be a flat byte memoryview")
        self.regions = dict(regions)
        self.shram = bytearray(shram_bytes)
        self.bytes_read: Counter = Counter()
        self.bytes_written: Counter = Counter()
        self.accesses: list[Access] = []

    def _buffer(self, region: int | str, what: str, write: bool) -> Buffer:
        if region == SHRAM:
            return self.shram
        buffer = self.regions.get(region)
        if buffer is None:
            raise SimulatorError(f"{what}: region {region} is not mapped (mapped regions: {sorted(self.regions)})")
        if write and not _writable(buffer):
            raise SimulatorError(f"{what}: region {region} is read-only")
        return buffer

    def view(self, region: int | str, offset: int, shape: tuple[int, ...], strides: tuple[int, ...],
             dtype: np.dtype, what: str, write: bool = False) -> np.ndarray:
        """A view of `shape` elements at byte `offset` with byte `strides`; `what` names the access in errors."""
        dtype = np.dtype(dtype)
        buffer = self._buffer(region, what, write)
        count = int(np.prod(shape))
        if count == 0:
            return np.empty(shape, dtype)
        last = offset + sum((n - 1) * s for n, s in zip(shape, strides)) + dtype.itemsize
        if offset < 0 or last > len(buffer) or any(s < 0 for s in strides):
            raise SimulatorError(
                f"{what}: access to bytes [{offset:#x}, {last:#x}) is outside region {region} "
                f"of {len(buffer):#x} bytes"
            )
        counter = self.bytes_written if write else self.bytes_read
        counter[region] += count * dtype.itemsize
        self.accesses.append(Access(region, offset, last, write))
        return np.ndarray(shape, dtype=dtype, buffer=buffer, offset=offset, strides=strides)

    def read_bytes(self, region: int | str, address: int, length: int, what: str) -> bytes:
        return self.view(region, address, (length,), (1,), np.uint8, what).tobytes()
