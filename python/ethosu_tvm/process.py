"""The `tvmc` process (also `python -m ethosu_tvm`): the command with Python's collector paused around its imports
(:mod:`ethosu_tvm.collector`), glibc's allocator told to keep freed memory, and its exit."""
from __future__ import annotations

import ctypes
import os
import sys

from . import collector

# mallopt's parameters (glibc's malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3


def keep_freed_memory() -> None:
    """Raise glibc's mmap threshold to 32 MiB and its trim threshold to 256 MiB. Vela's weight encoder allocates
    and frees buffers of a few MiB per stream; by default each comes from a fresh mmap or a regrown heap top, and
    the kernel faults in and zeroes its pages again: 260,000 page faults, a sixth of MobileNetV2-224's compile.
    Kept for reuse, they cost about 45 MB more peak memory. Nothing to do without glibc (no `mallopt`)."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    mallopt(_M_MMAP_THRESHOLD, 32 << 20)
    mallopt(_M_TRIM_THRESHOLD, 256 << 20)


def command() -> None:
    """`cli.main` with the collector paused until the command's imports are done, then an immediate exit with its
    status. Finalizing an interpreter that has TVM loaded takes 0.1-0.3 s, about as long as Vela's whole compile
    of a small model, and once `main` returns nothing is left to clean up: its files are written, the progress
    display has stopped, and the simulator's weight decoder process ends when its request pipe closes."""
    collector.pause()
    keep_freed_memory()
    from .cli import main

    status = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
