"""The helper processes' command line and the frames on their pipes (`sim.mlw`'s weight decoders,
`codegen.weight_encoder`): a frame is a little-endian uint32 byte count, then the bytes."""
from __future__ import annotations

import struct
import sys
from pathlib import Path

_PACKAGE_ROOT = Path(__file__).resolve().parents[1]  # the directory holding this ethosu_tvm


def command(script: str) -> list[str]:
    """The command of a helper process running `script` in this interpreter, with this package's directory as its
    sys.argv[1] (to import this ethosu_tvm)."""
    return [sys.executable, "-c", script, str(_PACKAGE_ROOT)]


def write_frame(pipe, data: bytes) -> None:
    """Send `data` as one frame, flushed."""
    pipe.write(struct.pack("<I", len(data)) + data)
    pipe.flush()


def read_frame(pipe) -> bytes | None:
    """One frame's bytes from `pipe`; None when it ends before the frame does."""
    head = pipe.read(4)
    if len(head) < 4:
        return None
    count = struct.unpack("<I", head)[0]
    data = pipe.read(count)
    return data if len(data) == count else None
