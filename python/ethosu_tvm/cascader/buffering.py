"""Which operations of a sequence buffer their weights: the choice with the fewest cycles, made jointly.

An operation that buffers has its weights DMAed into SRAM while the operation before it runs, and waits for what
the transfer outlasts of that operation's `overlap` (the cycles in which it leaves the constants' memory alone).
An operation reading its own weights from flash leaves little overlap, one reading them from a buffer leaves all
of it; so buffering one operation can make buffering the next pay (Vela buffers every weight stream of a
depthwise-separable network for this reason). Operation by operation, the cheaper choice given the previous one
misses that; a two-state dynamic programme over the sequence does not.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .graph import WeightBuffer


@dataclass(frozen=True)
class Choice:
    """One operation's options: `streamed` cycles (with `overlap` of them free for the next one's transfer), and
    `buffer`, the option of buffering its weights (None: it has none)."""

    streamed: int
    overlap: int
    buffer: WeightBuffer | None = None


@dataclass(frozen=True)
class Buffering:
    """The decision: per operation whether it buffers, its cycles (its wait for its transfer included), its wait,
    and the cycles of it a next transfer can overlap."""

    buffered: tuple[bool, ...]
    cycles: tuple[int, ...]
    stalls: tuple[int, ...]
    overlaps: tuple[int, ...]

    @property
    def total(self) -> int:
        return sum(self.cycles)


def _step(choice: Choice, buffers: bool, previous: int) -> tuple[int, int, int]:
    """One operation's (cycles, its wait for its transfer, cycles of it the next transfer can overlap), streaming or
    buffering after an operation that leaves `previous` cycles to overlap."""
    if not buffers:
        return choice.streamed, 0, choice.overlap
    stall = max(choice.buffer.transfer - previous, 0)
    return choice.buffer.cycles + stall, stall, choice.buffer.cycles


def choose_buffering(choices: Sequence[Choice], previous: int = 0) -> Buffering:
    """The buffering of `choices` (in execution order) with the fewest cycles, the first transfer overlapping
    `previous` cycles of the operation before them. Ties keep streaming (less memory)."""
    # per state of the latest operation (streams, buffers): (total cycles, decisions so far, overlap it leaves)
    states: list[tuple[int, tuple[bool, ...], int] | None] = [(0, (), previous), None]
    for choice in choices:
        options = []
        for buffers in (False, True):
            best = None
            if not buffers or choice.buffer is not None:
                for state in states:
                    if state is None:
                        continue
                    cycles, _, overlap = _step(choice, buffers, state[2])
                    if best is None or state[0] + cycles < best[0]:
                        best = (state[0] + cycles, state[1] + (buffers,), overlap)
            options.append(best)
        states = options
    final = min((s for s in states if s is not None), key=lambda s: (s[0], sum(s[1])))
    cycles, stalls, overlaps = [], [], []
    for choice, buffers in zip(choices, final[1]):
        own, stall, previous = _step(choice, buffers, previous)
        cycles.append(own)
        stalls.append(stall)
        overlaps.append(previous)
    return Buffering(final[1], tuple(cycles), tuple(stalls), tuple(overlaps))
