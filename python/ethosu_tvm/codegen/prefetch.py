"""Weight DMAs issued more than one operation ahead, where the memory they need is free anyway.

The joint buffering choice (`cascader.buffering`) issues each weight DMA under the operation just before its
convolution. A long transfer (ResNet-8's 8x8x64 3x3 convolutions: 18 KB) then outlasts that operation, though the
ones before it (a residual ADD, a convolution reading buffered weights) left the flash idle. Issued `lead`
operations ahead, the DMA overlaps all of them; its buffer is live that much longer, so it is allowed only where the
bytes live at each step, the buffers included, stay within the scratch the plain choice needs (or the limit given).

The choice is checked on the stream's own timeline (`sim.cycles.Timeline`), step by step as the stream will issue
them: the DMAs issued before an operation in the reverse order of their convolutions (so the nearest one is the
last issued), a convolution waiting for its DMA only when that is the last DMA issued before it, as Vela's API makes
the stream wait on the Ethos-U55 (one outstanding DMA); a choice in which a convolution could start before its DMA
is done is not taken. Starting from the plain choice, each convolution in turn takes the state with the fewest
cycles for the whole stream: its own, or buffering with a lead of two or more operations; rounds repeat while
that improves.

The parts of a convolution split along its depth (`codegen.depth_split`) are chosen jointly (`joint`), every
combination of streaming or buffering with a lead of up to GROUP_LEAD: their best states depend on one another.
In ResNet-8's last 3x3 convolution, split in four (ethos-u55-128), the third part's DMA is issued with a lead of
five, before the 1x1 projection's own, into the flash's idle time under the residual ADD, while the first part
streams and the second and fourth buffer with a lead of two; no change of one part's state alone leads there.
"""
from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from ..cascader.buffering import Choice
from ..sim.cycles import Timeline

MAX_LEAD = 8  # operations a DMA may be issued ahead of its convolution
GROUP_LEAD = 5  # the same for the parts of a convolution chosen jointly
ROUNDS = 3


@dataclass(frozen=True)
class Fixed:
    """An operation without a buffering option: its block operations' (cycles, constants' cycles) and the DMAs it
    issues first ((cycles, from the constants' memory)), which its block operations wait for."""

    kernels: tuple[tuple[int, int], ...]
    dmas: tuple[tuple[int, bool], ...] = ()


@dataclass(frozen=True)
class State:
    """A convolution's state: streaming (frugally or not), or buffering with its DMA issued `lead` steps ahead."""

    buffers: bool
    frugal: bool = False
    lead: int = 1


@dataclass(frozen=True)
class Prefix:
    """The stream's timeline after its first `steps` operations: the last DMA issued (its convolution's index, None
    for another DMA) and the convolutions whose DMAs no wait has covered yet."""

    steps: int
    timeline: Timeline
    last: int | None
    pending: frozenset[int]


def advance(steps: Sequence[Fixed | Choice], states: dict[int, State], stop: int, prefix: Prefix | None = None,
            rival: Sequence[Prefix] = (), since: int | None = None) -> Prefix | None:
    """The `Prefix` after steps[:stop] (from `prefix`, one that `states` share), or None when a convolution could
    start before its weights arrived; also None as soon as, after steps[:since] or more, this walk is no sooner
    than `rival` (the prefixes of another walk, by steps walked, that walks the steps from `since` on as this one
    does): it then ends no sooner than that walk."""
    start, timeline, last, pending = (0, Timeline(), None, set()) if prefix is None else \
        (prefix.steps, prefix.timeline.copy(), prefix.last, set(prefix.pending))
    early: dict[int, list[int]] = {}
    for index in sorted(states, reverse=True):
        state = states[index]
        if state.buffers and start <= index - state.lead + 1 < stop:
            early.setdefault(index - state.lead + 1, []).append(index)
    for position in range(start, stop):
        step = steps[position]
        for consumer in early.get(position, []):
            choice = steps[consumer]
            timeline.dma(choice.buffer.transfer, True)
            last = consumer
            pending.add(consumer)
        if isinstance(step, Fixed):
            for cycles, from_constants in step.dmas:
                timeline.dma(cycles, from_constants)
                last = None
            if step.dmas:
                timeline.dma_wait(0)
                pending.clear()
            for cycles, constants in step.kernels:
                timeline.kernel(cycles, constants)
            continue
        state = states[position]
        if state.buffers:
            if last == position:
                timeline.dma_wait(0)
                pending.clear()
            if position in pending:
                return None
            timeline.kernel(step.buffer.cycles)
        elif state.frugal:
            timeline.kernel(step.frugal[0], step.frugal[0] - step.frugal[1])
        else:
            timeline.kernel(step.streamed, step.streamed - step.overlap)
        if since is not None and since <= position + 1 < len(rival):
            other = rival[position + 1]  # the same DMA last issued and convolutions waiting, no time earlier
            if last == other.last and pending == other.pending and timeline.no_sooner_than(other.timeline):
                return None
    return Prefix(stop, timeline, last, frozenset(pending))


def elapsed(steps: Sequence[Fixed | Choice], states: dict[int, State], prefix: Prefix | None = None,
            rival: Sequence[Prefix] = (), since: int | None = None) -> int | None:
    """The elapsed cycles of the stream (from `prefix`, one that `states` share), or None when a convolution could
    start before its weights arrived or (`advance`) it ends no sooner than the `rival` walk."""
    whole = advance(steps, states, len(steps), prefix, rival, since)
    return None if whole is None else whole.timeline.elapsed


def _prefixes(steps: Sequence[Fixed | Choice], states: dict[int, State]) -> list[Prefix]:
    """The `Prefix` before each step of the walk of `states` (one never refused): a walk of states that differ
    from some step on only resumes there."""
    prefixes = [Prefix(0, Timeline(), None, frozenset())]
    for stop in range(1, len(steps)):
        prefixes.append(advance(steps, states, stop, prefixes[-1]))
    return prefixes


def waits(steps: Sequence[Fixed | Choice], states: dict[int, State]) -> dict[int, int]:
    """The cycles each buffering convolution's block operation waits for its weights (or for anything else it
    waits on) in the walk of `states` (one never refused): how much later than its own cycles it ends after the
    operation before it."""
    prefixes = _prefixes(steps, states)
    prefixes.append(advance(steps, states, len(steps), prefixes[-1]))
    return {index: prefixes[index + 1].timeline.computed - prefixes[index].timeline.computed
            - steps[index].buffer.cycles for index, state in states.items() if state.buffers}


def _first_change(index: int, *states: State) -> int:
    """The first step whose walk differs between the given states of the convolution at `index`: its own, or where
    one of them issues its DMA."""
    return index - max(state.lead if state.buffers else 1 for state in states) + 1


def _span(index: int, state: State) -> range:
    """The steps at which the convolution at `index` holds its buffer in `state` (none while it streams)."""
    return range(max(index - state.lead, 0), index + 1) if state.buffers else range(0)


def _extra(steps: Sequence[Fixed | Choice], states: dict[int, State]) -> list[int]:
    """The bytes of weight buffers live at each step."""
    extra = [0] * len(steps)
    for index, state in states.items():
        for step in _span(index, state):
            extra[step] += steps[index].buffer.nbytes
    return extra


def fullest(steps: Sequence[Fixed | Choice], states: dict[int, State], live: Sequence[int]) -> int:
    """The bytes live at the fullest step, weight buffers included (`live`: the bytes other than those)."""
    return max(own + more for own, more in zip(live, _extra(steps, states)))


def _fits(steps: Sequence[Fixed | Choice], others: Sequence[int], live: Sequence[int], limit: int,
          changes: dict[int, State]) -> bool:
    """Whether the steps at which the convolutions in `changes` hold their buffers in their new states stay within
    `limit` bytes (`others`: the bytes of the other weight buffers at each step)."""
    extra: dict[int, int] = {}
    for index, state in changes.items():
        for step in _span(index, state):
            extra[step] = extra.get(step, 0) + steps[index].buffer.nbytes
    return all(live[step] + others[step] + nbytes <= limit for step, nbytes in extra.items())


def joint(steps: Sequence[Fixed | Choice], states: dict[int, State], live: Sequence[int], limit: int,
          group: Sequence[int]) -> tuple[dict[int, State], int | None]:
    """The states of the convolutions at `group` (the parts of one split along its depth, `codegen.depth_split`)
    with the fewest elapsed cycles, each streaming or buffering with a lead of up to GROUP_LEAD, the others' as in
    `states`; and those cycles."""
    def options(index: int) -> list[State]:
        return [State(False)] + [State(True, lead=lead) for lead in range(1, min(index + 1, GROUP_LEAD) + 1)]

    others = _extra(steps, {index: state for index, state in states.items() if index not in group})
    best = elapsed(steps, states)
    # no DMA of the group is issued before this step: the timeline up to it is the same for every combination, and
    # the states of the convolutions before it no longer matter
    start = max(min(group) - GROUP_LEAD + 1, 0)
    prefix = advance(steps, {**states, **dict.fromkeys(group, State(False))}, start)
    later = {index: state for index, state in states.items() if index >= start}
    # after the group, every combination walks the same steps: one no sooner there than the best one cannot win
    after = max(group) + 1
    rival = [None] * after + [advance(steps, states, after, prefix)] if best is not None and prefix else ()
    for combination in itertools.product(*(options(index) for index in group)):
        changes = dict(zip(group, combination))
        if not _fits(steps, others, live, limit, changes):
            continue
        cycles = None if prefix is None else elapsed(steps, {**later, **changes}, prefix, rival, after)
        if cycles is not None and (best is None or cycles < best):
            states, best = {**states, **changes}, cycles
            rival = [None] * after + [advance(steps, states, after, prefix)]
    return states, best


def prefetch(steps: Sequence[Fixed | Choice], states: dict[int, State], live: Sequence[int],
             limit: int) -> dict[int, State]:
    """The states (by step index, for the steps that are `Choice`s) with the fewest elapsed cycles reachable from
    `states` (the plain choice) as the module docstring says, with at most `limit` bytes live at each step (`live`:
    the bytes other than weight buffers)."""
    plain, best = states, elapsed(steps, states)
    if best is None:
        return states
    saved = None  # `_prefixes` of `states`, while they stay as they are
    for _ in range(ROUNDS):
        improved = False
        for index in sorted(states):
            others = _extra(steps, {i: state for i, state in states.items() if i != index})
            options = [plain[index]]
            if steps[index].buffer is not None:
                options += [State(True, lead=lead) for lead in range(2, min(index + 1, MAX_LEAD) + 1)]
            found = None
            for option in options:
                if option == states[index] or not _fits(steps, others, live, limit, {index: option}):
                    continue
                saved = saved or _prefixes(steps, states)
                # from the step after it on, the walk is that of `states`, which `best` is not above
                cycles = elapsed(steps, {**states, index: option}, saved[_first_change(index, states[index], option)],
                                 saved, index + 1)
                if cycles is not None and cycles < best:
                    best, found = cycles, option
            if found is not None:
                states, improved, saved = {**states, index: found}, True, None
        if not improved:
            break
    return states
