"""Python's cyclic garbage collector paused around the `tvmc` process's imports.

Importing TVM, Vela and NumPy allocates about 230,000 objects that live as long as the process; with the collector
on, the collections their allocation triggers traverse them again and again, 0.15-0.2 s of a 0.9 s import. So the
process starts with the collector off (`pause`, :mod:`ethosu_tvm.process`), and each command turns it back on once
its heavy imports are done (`resume`), having frozen what they created so that later collections skip it. A
`cli.main` called inside another program leaves that program's collector alone.
"""
from __future__ import annotations

import gc

_paused = False


def pause() -> None:
    """Turn the collector off until `resume` (the `tvmc` process, before its imports)."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def resume() -> None:
    """After a command's heavy imports: keep what they created out of later collections, collect again (only in
    the `tvmc` process, which paused the collector)."""
    global _paused
    if _paused:
        gc.freeze()
        gc.enable()
        _paused = False
