"""Which operations of a sequence buffer their weights: the choice with the fewest cycles, made jointly.

An operation that buffers has its weights DMAed into SRAM while the operation before it runs, and waits for what
the transfer outlasts of that operation's `overlap` (the cycles in which it leaves the constants' memory alone).
An operation reading its own weights from flash leaves little overlap, one reading them from a buffer leaves all
of it; so buffering one operation can make buffering the next pay (Vela buffers every weight stream of a
depthwise-separable network for this reason). Operation by operation, the cheaper choice given the previous one
misses that; a two-state dynamic programme over the sequence does not. Under a memory budget it keeps to the
choices whose buffers fit beside what else is live (`Budget`): a buffer is live during its operation and the one
before, so whether it fits depends on its neighbours' choices only, which the programme's states hold.

For the same reason an operation that streams may do so frugally: with the block config that fetches its weights
from flash fewest times, which leaves more of its cycles to the next operation's transfer, though it is often
slower on its own (a third state).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .graph import Choice


STREAMS, BUFFERS, FRUGAL = range(3)  # an operation's states in the programme


@dataclass(frozen=True)
class Budget:
    """At most `limit` bytes live at each step of the schedule, where `live[j]` bytes other than weight buffers are
    live at step j, and choice i is the operation at step `steps[i]` (increasing). A buffer is live at its
    operation's step and the step before."""

    limit: int
    live: tuple[int, ...]
    steps: tuple[int, ...]

    def fits(self, before: tuple[int, int] | None, after: tuple[int, int] | None) -> bool:
        """Do the steps from one choice's (`before`: its index and its buffer's bytes, 0 when it streams; None: from
        the first step) up to the next one's (`after`, exclusive; None: to the last step) stay within the limit?"""
        start = self.steps[before[0]] if before is not None else 0
        stop = self.steps[after[0]] if after is not None else len(self.live)
        for step in range(start, stop):
            extra = before[1] if before is not None and step == start else 0
            extra += after[1] if after is not None and step == stop - 1 else 0
            if self.live[step] + extra > self.limit:
                return False
        return True


@dataclass(frozen=True)
class Buffering:
    """The decision: per operation whether it buffers, its cycles (its wait for its transfer included), its wait,
    the cycles of it a next transfer can overlap, and whether it streams frugally."""

    buffered: tuple[bool, ...]
    cycles: tuple[int, ...]
    stalls: tuple[int, ...]
    overlaps: tuple[int, ...]
    frugal: tuple[bool, ...]

    @property
    def total(self) -> int:
        return sum(self.cycles)


def _step(choice: Choice, state: int, previous: int) -> tuple[int, int, int]:
    """One operation's (cycles, its wait for its transfer, cycles of it the next transfer can overlap) in `state`,
    after an operation that leaves `previous` cycles to overlap."""
    if state == STREAMS:
        return choice.streamed, 0, choice.overlap
    if state == FRUGAL:
        return choice.frugal[0], 0, choice.frugal[1]
    stall = max(choice.buffer.transfer - previous, 0)
    return choice.buffer.cycles + stall, stall, choice.buffer.cycles


def streaming(choices: Sequence[Choice]) -> Buffering:
    """The decision in which every operation streams its weights plainly."""
    none = (False,) * len(choices)
    return Buffering(none, tuple(c.streamed for c in choices), (0,) * len(choices),
                     tuple(c.overlap for c in choices), none)


def choose_buffering(choices: Sequence[Choice], previous: int = 0, budget: Budget | None = None) -> Buffering:
    """The buffering of `choices` (in execution order) with the fewest cycles, the first transfer overlapping
    `previous` cycles of the operation before them, within `budget` (None: no limit; when nothing fits, not even
    streaming everything, everything streams). Ties keep streaming (less memory), and plainly."""
    def fits(index: int, previous_buffers: bool, buffers: bool | None) -> bool:
        """Choice `index` buffering or not (None: past the last one) after the previous one's decision."""
        if budget is None:
            return True
        before = (index - 1, choices[index - 1].buffer.nbytes if previous_buffers else 0) if index > 0 else None
        after = (index, choices[index].buffer.nbytes if buffers else 0) if buffers is not None else None
        return budget.fits(before, after)

    # per state of the latest operation: (total cycles, buffers and frugal streams so far, overlap it leaves); and
    # per operation, the state of the one before it on each state's best path (the path is read back at the end,
    # not copied at every step: plans run hundreds of operations)
    states: list[tuple[int, int, int, int] | None] = [(0, 0, 0, previous), None, None]
    links: list[tuple[int | None, ...]] = []
    for index, choice in enumerate(choices):
        # Streaming (plainly or frugally) follows the state of the fewest cycles so far that it fits after, the
        # first of equals; buffering, the one of the fewest cycles with its wait for the transfer.
        came = None
        for state, entry in enumerate(states):
            if entry is not None and (came is None or entry[0] < states[came][0]) and (
                    budget is None or fits(index, state == BUFFERS, False)):
                came = state
        plain = states[came] if came is not None else None
        options = [None if plain is None else (plain[0] + choice.streamed, plain[1], plain[2], choice.overlap),
                   None, None]
        link = [came, None, came]
        if choice.buffer is not None:
            buffer, best = choice.buffer, None
            for state, entry in enumerate(states):
                if entry is None or budget is not None and not fits(index, state == BUFFERS, True):
                    continue
                total = entry[0] + buffer.cycles + max(buffer.transfer - entry[3], 0)
                if best is None or total < best[0]:
                    best, link[BUFFERS] = (total, entry[1] + 1, entry[2], buffer.cycles), state
            options[BUFFERS] = best
        if choice.frugal is not None and plain is not None:
            options[FRUGAL] = (plain[0] + choice.frugal[0], plain[1], plain[2] + 1, choice.frugal[1])
        states = options
        links.append(tuple(link))
    feasible = [state for state, s in enumerate(states) if s is not None and fits(len(choices), state == BUFFERS, None)]
    if not feasible:
        return streaming(choices)
    state = min(feasible, key=lambda s: states[s][:3])
    path = []
    for link in reversed(links):
        path.append(state)
        state = link[state]
    path.reverse()
    cycles, stalls, overlaps = [], [], []
    for choice, state in zip(choices, path):
        own, stall, previous = _step(choice, state, previous)
        cycles.append(own)
        stalls.append(stall)
        overlaps.append(previous)
    return Buffering(tuple(state == BUFFERS for state in path), tuple(cycles), tuple(stalls), tuple(overlaps),
                     tuple(state == FRUGAL for state in path))
