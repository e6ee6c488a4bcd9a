"""The stage a long compile is in, on stderr: quiet for short compiles, one rewritten line on a terminal."""
from __future__ import annotations

import threading
from typing import TextIO

DELAY = 2.0  # seconds of silence before the first stage is shown: most factory models compile faster
INTERVAL = 0.5  # seconds between looks at the current stage


class StageDisplay:
    """A `progress` callable for `ethosu_tvm.build`: calls only record the current stage; a thread shows it on
    `stream` once the compile has run `delay` seconds, then again whenever it has changed. Used as a context
    manager around the compile; nothing is written after it exits. Compiler output never depends on it."""

    def __init__(self, stream: TextIO, prefix: str = "tvmc: ", delay: float | None = None,
                 interval: float | None = None):
        self._stream, self._prefix = stream, prefix
        self._delay = DELAY if delay is None else delay
        self._interval = INTERVAL if interval is None else interval
        self._terminal = stream.isatty()
        self._stage = ""
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._show, name="tvmc-progress", daemon=True)
        self._written = False

    def __call__(self, stage: str) -> None:
        self._stage = stage

    def __enter__(self) -> StageDisplay:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._done.set()
        self._thread.join()
        if self._terminal and self._written:
            self._stream.write("\r\x1b[K")  # leave the terminal as the compile found it
            self._stream.flush()

    def _show(self) -> None:
        if self._done.wait(self._delay):
            return
        shown = None
        while True:
            stage = self._stage
            if stage and stage != shown:
                line = self._prefix + stage
                self._stream.write(f"\r\x1b[K{line}" if self._terminal else line + "\n")
                self._stream.flush()
                self._written, shown = True, stage
            if self._done.wait(self._interval):
                return
