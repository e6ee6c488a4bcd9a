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


def choose_buffering(choices: Sequence[Choice], previous: int = 0) -> Buffering:
    """The buffering of `choices` (in execution order) with the fewest cycles, the first transfer overlapping
    `previous` cycles of the operation before them. Ties keep streaming (less memory)."""
    # per state (streams, buffers) of the latest operation: (total cycles, decisions so far)
    states: list[tuple[int, tuple[bool, ...]] | None] = [(0, ()), None]
    overlaps_before = [previous, previous]
    for choice in choices:
        options = []
        for buffers in (False, True):
            if buffers and choice.buffer is None:
                options.append(None)
                continue
            best = None
            for before, state in enumerate(states):
                if state is None:
                    continue
                own = (choice.buffer.cycles + max(choice.buffer.transfer - overlaps_before[before], 0) if buffers
                       else choice.streamed)
                if best is None or state[0] + own < best[0]:
                    best = (state[0] + own, state[1] + (buffers,))
            options.append(best)
        states = options
        overlaps_before = [choice.overlap, choice.buffer.cycles if choice.buffer is not None else 0]
    final = min((s for s in states if s is not None), key=lambda s: (s[0], sum(s[1])))
    return _replay(choices, final[1], previous)


def _replay(choices: Sequence[Choice], buffered: tuple[bool, ...], previous: int) -> Buffering:
    cycles, stalls, overlaps = [], [], []
    for choice, buffers in zip(choices, buffered):
        stall = max(choice.buffer.transfer - previous, 0) if buffers else 0
        own = choice.buffer.cycles if buffers else choice.streamed
        cycles.append(own + stall)
        stalls.append(stall)
        overlaps.append(own if buffers else choice.overlap)
        previous = overlaps[-1]
    return Buffering(tuple(buffered), tuple(cycles), tuple(stalls), tuple(overlaps))
