"""Weight-stream decompression with Arm's `ethosu.mlw_codec.decode`, isolated in a helper process.

The C decoder calls exit() when a stream runs past its end and trusts the stream's headers for its buffers, so a
corrupt weight stream would kill (or corrupt) the simulator's own process. A small long-lived child process does the
decoding instead; if it dies, the stream is reported as malformed and a fresh child is started on the next call.
Frames on the pipes are a little-endian uint32 byte count followed by the bytes (int16 values on the way back).
"""
from __future__ import annotations

import atexit
import struct
import subprocess
import sys

import numpy as np

_CHILD = r"""
import os, struct, sys
from array import array
from ethosu import mlw_codec
replies = os.fdopen(os.dup(1), "wb")
os.dup2(2, 1)  # the decoder prints its complaints on stdout; keep them off the reply pipe
requests = sys.stdin.buffer
while True:
    head = requests.read(4)
    if len(head) < 4:
        break
    data = requests.read(struct.unpack("<I", head)[0])
    values = array("h", mlw_codec.decode(bytearray(data))).tobytes()
    replies.write(struct.pack("<I", len(values)) + values)
    replies.flush()
"""


class MlwDecodeError(ValueError):
    """The decoder rejected the stream (its process exited or answered incompletely)."""


class _Decoder:
    def __init__(self) -> None:
        self._process: subprocess.Popen | None = None
        atexit.register(self.close)

    def _child(self) -> subprocess.Popen:
        if self._process is None or self._process.poll() is not None:
            self._process = subprocess.Popen(
                [sys.executable, "-c", _CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
            )
        return self._process

    def decode(self, data: bytes) -> np.ndarray:
        child = self._child()
        try:
            child.stdin.write(struct.pack("<I", len(data)) + data)
            child.stdin.flush()
            head = child.stdout.read(4)
            count = struct.unpack("<I", head)[0] if len(head) == 4 else -1
            reply = child.stdout.read(count) if count >= 0 else b""
        except BrokenPipeError:
            count, reply = -1, b""
        if count < 0 or len(reply) != count:
            raise MlwDecodeError(f"the mlw decoder aborted on this stream: {self._reap()}")
        return np.frombuffer(reply, dtype=np.int16)

    def _reap(self) -> str:
        child, self._process = self._process, None
        child.kill()
        _, err = child.communicate()
        lines = err.decode(errors="replace").strip().splitlines()
        return lines[-1] if lines else f"exit status {child.returncode}"

    def close(self) -> None:
        child, self._process = self._process, None
        if child is not None:
            child.communicate()


_decoder = _Decoder()


def start() -> None:
    """Launch the helper process early; it starts in parallel with the caller's own work."""
    _decoder._child()


def decode(data: bytes) -> np.ndarray:
    """The int16 weights (in stream order) of an mlw-compressed stream; MlwDecodeError if it is malformed."""
    return _decoder.decode(bytes(data))
