"""Vela's weight encoder run on two cores: a long-lived helper process encodes part of a batch of weight streams
while this process encodes the rest.

Vela's C encoder holds the GIL, so threads cannot share its work, and MobileNetV2-224's compile spends about a
quarter of its CPU time in it (every convolution is encoded at the two block depths
`block_config.buffered_block_config` compares, and the depth split's parts at theirs again). The helper takes the
batch's requests from the front, one at a time, and this process takes them from the back, so that neither is
idle while a request is left unstarted; each stream is the same function's bytes whichever process encoded it.
A helper that dies (or is still starting) leaves its requests to this process. It ends when its request pipe
closes: when this process exits, even by os._exit.
Its pipes carry frames (`helper_pipes`): a pickled request one way, the stream the other; the helper writes one
empty frame once it is ready.
"""
from __future__ import annotations

import atexit
import collections
import contextlib
import io
import os
import pickle
import subprocess
import threading

from ethosu.vela import api as vapi

from ..helper_pipes import command, read_frame, write_frame

# A batch with fewer weights than this is encoded here alone: the helper's round trips and its start (about 0.3 s
# of a second core) pay only for streams of tens of milliseconds.
MIN_WEIGHTS = 1 << 16

_CHILD = r"""
import os, pickle, sys
sys.path.insert(0, sys.argv[1])
from ethosu_tvm.helper_pipes import read_frame, write_frame
from ethosu_tvm.process import keep_freed_memory
keep_freed_memory()  # as the tvmc process does: the encoder's buffers, kept, are not faulted in again each time
import numpy
from ethosu.vela import api
replies = os.fdopen(os.dup(1), "wb")
os.dup2(2, 1)  # Vela's first call announces its default configuration; keep it off the reply pipe
requests = sys.stdin.buffer
# Vela's first call sets it up (0.2 s): done before the first request, not on its time
api.npu_encode_weights(api.NpuAccelerator.Ethos_U55_128, numpy.zeros((16, 1, 1, 16), numpy.int16), (1, 1), 8, 16,
                       False, api.NpuBlockTraversal.DEPTH_FIRST)
write_frame(replies, b"")
while (request := read_frame(requests)) is not None:
    write_frame(replies, bytes(api.npu_encode_weights(*pickle.loads(request))))
"""


def encode(request: tuple) -> bytes:
    """One weight stream, `vapi.npu_encode_weights(*request)`, encoded in this process."""
    with contextlib.redirect_stdout(io.StringIO()):  # Vela's first call announces its default configuration
        return bytes(vapi.npu_encode_weights(*request))


class _Helper:
    """The helper process and the thread in this process that feeds it one request at a time from `_pending`
    ((batch, index) → request, in batch order) and files its streams in `_done`."""

    def __init__(self) -> None:
        self._forget()
        atexit.register(self.close)
        os.register_at_fork(after_in_child=self._forget)

    def _forget(self) -> None:
        """No helper: at first, and in a forked child, which has neither the feeding thread nor its own helper."""
        self._process: subprocess.Popen | None = None
        self._batch = 0
        self._ready = False  # whether the helper process has started and takes requests
        self._running: tuple[int, int] | None = None  # the (batch, index) of the request sent to the helper
        self._pending: collections.OrderedDict[tuple[int, int], tuple] = collections.OrderedDict()
        self._done: dict[tuple[int, int], bytes] = {}
        self._changed = threading.Condition()

    def start(self) -> None:
        """Launch the helper unless it runs; it starts in parallel with the caller's own work."""
        with self._changed:
            if self._process is not None:
                return
            self._process = subprocess.Popen(command(_CHILD), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                             stderr=subprocess.DEVNULL)
            self._ready = False
        threading.Thread(target=self._serve, args=(self._process,), daemon=True).start()

    def _serve(self, process: subprocess.Popen) -> None:
        """Feed `process` requests until its pipes break; then leave what it held to this process."""
        key = None
        try:
            if read_frame(process.stdout) != b"":
                raise BrokenPipeError
            with self._changed:
                self._ready = True
                self._changed.notify_all()
            while True:
                with self._changed:
                    while not self._pending and self._process is process:
                        self._changed.wait()
                    if self._process is not process:  # closed
                        raise BrokenPipeError
                    key, request = self._pending.popitem(last=False)
                data = pickle.dumps(request, protocol=pickle.HIGHEST_PROTOCOL)
                write_frame(process.stdin, data)
                with self._changed:
                    self._running = key
                    self._changed.notify_all()
                stream = read_frame(process.stdout)
                if stream is None:
                    raise BrokenPipeError
                with self._changed:
                    if key[0] == self._batch:
                        self._done[key] = stream
                    self._running = key = None
                    self._changed.notify_all()
        except Exception:  # a broken pipe, a pipe closed by `close`: never a request left to no one
            with self._changed:
                if key is not None and key[0] == self._batch:
                    self._pending[key] = request
                    self._pending.move_to_end(key, last=False)
                self._running = None
                if self._process is process:
                    self._process, self._ready = None, False
                self._changed.notify_all()
            process.kill()
            process.wait()

    def encode_all(self, requests: list[tuple]) -> list[bytes]:
        """The streams of `requests`, the helper encoding from the front while this process encodes from the back;
        this process waits only for the stream the helper is encoding once nothing else is left. Since the
        encoder holds the GIL, the thread feeding the helper runs only between this process's encodes: each of
        them starts once the helper has a request (unless it is not ready). Requests are keyed by batch, so that
        a stream of an abandoned batch (Vela raised here) joins no later one."""
        with self._changed:
            self._batch += 1
            keys = [(self._batch, index) for index in range(len(requests))]
            self._pending.update(zip(keys, requests))
            self._changed.notify_all()
            try:
                while len(self._done) < len(requests):
                    if self._pending and (not self._ready or self._running is not None):
                        key, request = self._pending.popitem(last=True)
                        self._changed.release()
                        try:
                            stream = encode(request)
                        finally:
                            self._changed.acquire()
                        self._done[key] = stream
                    else:
                        self._changed.wait()
                return [self._done[key] for key in keys]
            finally:
                self._pending.clear()
                self._done.clear()

    def close(self) -> None:
        """End the helper: its request pipe closes, it exits, and the feeding thread reaps it."""
        with self._changed:
            process, self._process, self._ready = self._process, None, False
            self._changed.notify_all()
        if process is not None:
            process.stdin.close()
            process.wait()


_helper = _Helper()


def _core_free() -> bool:
    """Whether a core is left for the helper: the load average (this process counted) below the cores less one
    half. On a busy machine the scheduler shares one CPU between this session's processes (autogroups): the
    helper would only take this process's time (MobileNetV2-224 at load 6: 1.1 s more wall time)."""
    return os.getloadavg()[0] < len(os.sched_getaffinity(0)) - 0.5


def start() -> None:
    """Launch the helper early, when a build will encode large streams and a core is free for it."""
    if _core_free():
        _helper.start()


def encode_all(requests: list[tuple]) -> list[bytes]:
    """`encode` of each request (the arguments of `vapi.npu_encode_weights`), on both cores when the batch holds
    at least MIN_WEIGHTS weights and more than one stream, and the helper runs or a core is free for it."""
    if len(requests) < 2 or sum(request[1].size for request in requests) < MIN_WEIGHTS:
        return [encode(request) for request in requests]
    start()
    return _helper.encode_all(requests)
