"""Weight-stream decompression with Arm's `ethosu.mlw_codec.decode`, isolated in helper processes.

The C decoder calls exit() when a stream runs past its end and trusts the stream's headers for its buffers, so a
corrupt weight stream would kill (or corrupt) the simulator's own process. Small long-lived child processes do the
decoding instead; if one dies, its stream is reported as malformed and a fresh child is started for its next one.
Their pipes carry frames (`helper_pipes`): a stream one way, its int16 values the other.

Each child is served by a thread of this process that waits on its pipes, taking streams from one queue, so the
caller goes on while they decode (`submit`): the stream check walks a command stream while its weight streams decode
on the other core.
"""
from __future__ import annotations

import atexit
import os
import queue
import subprocess
import threading
from concurrent.futures import Future

import numpy as np

from ..helper_pipes import command, read_frame, write_frame

HELPERS = 2  # decoder processes

_CHILD = r"""
import os, sys
from array import array
sys.path.insert(0, sys.argv[1])
from ethosu_tvm.helper_pipes import read_frame, write_frame
from ethosu import mlw_codec
replies = os.fdopen(os.dup(1), "wb")
os.dup2(2, 1)  # the decoder prints its complaints on stdout; keep them off the reply pipe
requests = sys.stdin.buffer
while (data := read_frame(requests)) is not None:
    write_frame(replies, array("h", mlw_codec.decode(bytearray(data))).tobytes())
"""


class MlwDecodeError(ValueError):
    """The decoder rejected the stream (its process exited or answered incompletely)."""


class _Decoder:
    def __init__(self) -> None:
        self._process: subprocess.Popen | None = None
        self._pid = os.getpid()
        atexit.register(self.close)

    def start(self) -> subprocess.Popen:
        if self._process is None or self._process.poll() is not None:
            self._process = subprocess.Popen(command(_CHILD), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                             stderr=subprocess.PIPE)
        return self._process

    def decode(self, data: bytes) -> np.ndarray:
        child = self.start()
        try:
            write_frame(child.stdin, data)
            reply = read_frame(child.stdout)
        except BrokenPipeError:
            reply = None
        if reply is None:
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
        if child is not None and os.getpid() == self._pid:  # a forked process's copy is its parent's to close
            child.communicate()


class _Helpers:
    """`HELPERS` decoders, each served by a daemon thread taking (stream, future) pairs from one queue."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self._requests: queue.SimpleQueue = queue.SimpleQueue()
        for _ in range(HELPERS):
            decoder = _Decoder()
            decoder.start()
            threading.Thread(target=self._serve, args=(decoder,), name="mlw-decoder", daemon=True).start()

    def _serve(self, decoder: _Decoder) -> None:
        while True:
            data, future = self._requests.get()
            try:
                future.set_result(decoder.decode(data))
            except Exception as err:  # raised to whoever asks for the result
                future.set_exception(err)

    def submit(self, data: bytes) -> Future:
        future = Future()
        self._requests.put((data, future))
        return future


_helpers: _Helpers | None = None


def _started() -> _Helpers:
    global _helpers
    if _helpers is None or _helpers.pid != os.getpid():  # a forked process has the processes but not the threads
        _helpers = _Helpers()
    return _helpers


def start() -> None:
    """Launch the helper processes early; they start in parallel with the caller's own work."""
    _started()


def submit(data: bytes) -> Future:
    """Start decoding an mlw-compressed stream: a future of its int16 weights in stream order (MlwDecodeError if
    it is malformed)."""
    return _started().submit(bytes(data))

