"""The plan and proposal search: every worthwhile way to cut a graph into cascades, as a Pareto frontier.

1. Plans. For each run of consecutive parts (at most `max_plan_size`) that can form a cascade (only the last
   part's output leaves it) and each row-stripe height of that output (`candidate_stripe_shapes` on the row axis)
   and buffer mode, `evaluate_plan` walks the stripes exactly: the rows each part computes, the ring each interior
   tensor needs, and the cycles of every operation. The plans of one run are culled to their Pareto frontier.
2. Proposals. A proposal for the first j parts is a proposal for the first i parts followed by a plan of parts
   i..j−1. Going over j in order, the frontier of proposals for each prefix is kept (memoised), Pareto culled on
   (peak memory, cycles) and thinned to `max_proposals`; the frontier for the whole graph is the result.

Stripes run over rows only: the NPU reads and writes whole rows of an NHWC feature map efficiently, rings wrap
over rows, and every primitive's row dependency is a window. Limits are in `CascaderOptions`.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

from ..arch import ALIGNMENT, round_up
from .buffering import Choice, choose_buffering, streaming
from .graph import ROW_AXIS, CascaderGraph, Part
from .pareto import pareto_frontier, thin
from .plan import BufferMode, Plan, Proposal, TensorConfig, TensorState
from .stripe_config import StripeConfig, candidate_stripe_shapes


@dataclass(frozen=True)
class CascaderOptions:
    """How the search runs: its limits and switches. They shape the frontier of proposals; which proposal a build
    takes (by its SRAM limit) is decided outside the core, by `codegen.cascade.CascaderSettings`.

    * `max_plan_size`: the most parts in one cascade.
    * `max_proposals`: proposals kept per graph prefix after Pareto culling (thinned evenly, ends kept).
    * `stripe_halvings`: output stripe heights tried are ceil(H / 2^k) for k ≤ this, and single rows.
    * `enable_cascading`: plans of several parts; off, every part is its own plan.
    * `enable_striping`: stripes smaller than the whole output; off, every plan computes whole tensors.
    * `buffer_modes`: the interior buffer modes tried.
    * `weight_buffering`: also try each plan with weight buffers, where parts offer them (`Part.buffer`).
    * `alignment`: every buffer's size is rounded up to this, as the memory planner allocates it.
    """

    max_plan_size: int = 12
    max_proposals: int = 32
    stripe_halvings: int = 4
    enable_cascading: bool = True
    enable_striping: bool = True
    buffer_modes: tuple[BufferMode, ...] = (BufferMode.ROLLING, BufferMode.RECOMPUTE)
    weight_buffering: bool = True
    alignment: int = ALIGNMENT

    def __post_init__(self):
        if self.max_plan_size < 1 or self.max_proposals < 1 or self.stripe_halvings < 0 or self.alignment < 1:
            raise ValueError(f"invalid cascader options: {self}")
        if not self.buffer_modes:
            raise ValueError("at least one buffer mode is needed")

    def align(self, size: int) -> int:
        return round_up(size, self.alignment)


class _Liveness:
    """Where each tensor is produced and last read (part indices; graph inputs at −1, graph outputs to the end),
    and which part's output takes over each reused input's buffer (`Part.reuses`)."""

    def __init__(self, graph: CascaderGraph):
        self.graph = graph
        end = len(graph.parts)
        self.produced = {t.name: -1 for t in graph.inputs}
        self.produced.update({p.output.name: i for i, p in enumerate(graph.parts)})
        self.reused_by = {p.reuses: i for i, p in enumerate(graph.parts) if p.reuses is not None}
        self.last_read = {}
        for tensor in graph.tensors():
            readers = graph.consumers(tensor)
            self.last_read[tensor.name] = end if graph.is_output(tensor) else max(readers, default=-1)

    def interior(self, first: int, stop: int) -> list | None:
        """The tensors that parts first..stop−1 alone produce and read, or None when one of them is read after
        the run (or is a graph output) and the run cannot be a cascade."""
        tensors = []
        for index in range(first, stop - 1):
            tensor = self.graph.parts[index].output
            if self.last_read[tensor.name] >= stop:
                return None
            tensors.append(tensor)
        return tensors

    def shares(self, tensor: str, first: int, stop: int, interior: set[str]) -> bool:
        """Whether `tensor` and the output of a part among first..stop−1 are one buffer: that part reuses it, and
        neither is a ring (an interior tensor of a cascade of several stripes)."""
        part = self.reused_by.get(tensor)
        return (part is not None and first <= part < stop and tensor not in interior
                and self.graph.parts[part].output.name not in interior)

    def boundary_bytes(self, first: int, stop: int, interior: set[str], options: CascaderOptions) -> int:
        """Budgeted bytes of the whole tensors alive while parts first..stop−1 run (a reused input and the output
        taking its buffer counted once)."""
        return sum(options.align(t.size) for t in self.graph.tensors()
                   if t.name in self.graph.scratch and t.name not in interior
                   and self.produced[t.name] < stop and self.last_read[t.name] >= first
                   and not self.shares(t.name, first, stop, interior))


def _interior_reads(parts, interior: set[str]) -> tuple:
    """Per part, last first: its output's name and, for each interior tensor it reads, (name, row map, height):
    what `_windows` and the ring sizes read of a plan's parts, looked up once per walk instead of per stripe."""
    return tuple((part.output.name, tuple((tensor.name, rows, tensor.shape[ROW_AXIS])
                                          for tensor, rows in zip(part.inputs, part.row_maps)
                                          if tensor.name in interior))
                 for part in reversed(parts))


def _windows(reads, output: str, lo: int, hi: int) -> dict[str, tuple[int, int]]:
    """The unclipped window of every interior tensor (and the output) for output rows [lo, hi): the hull of
    what its consumers' windows read (`reads`: `_interior_reads`). TIR's compute_at derives the producers'
    regions the same way, clipping only when a block stores or loads."""
    window = {output: (lo, hi)}
    for name, inputs in reads:
        lo, hi = window[name]
        for tensor, rows, height in inputs:
            read = rows.window(lo, hi, height)
            known = window.get(tensor, read)
            window[tensor] = (min(known[0], read[0]), max(known[1], read[1]))
    return window


def _stripe_order(parts, first: int) -> list[tuple[int, Part]]:
    """(graph index, part) in the order a stripe runs them: the last part, and each other one (from the last
    backwards) right before the first of its consumers placed so far, as TIR's compute_at places a producer at
    the cascade's stripe loop (`codegen.cascade.cascade_schedule`)."""
    placed = [(first + len(parts) - 1, parts[-1])]
    for index in range(first + len(parts) - 2, first - 1, -1):
        part = parts[index - first]
        at = next(k for k, (_, consumer) in enumerate(placed) if part.output in consumer.inputs)
        placed.insert(at, (index, part))
    return placed


def _one_stripe_memory(graph: CascaderGraph, first: int, stop: int, order, configs, buffers: dict[int, int],
                       liveness: _Liveness, options: CascaderOptions) -> tuple[int, int]:
    """The peak of budgeted bytes of a plan computed in one stripe, and those live during its last operation: each
    part runs once, in `order`, so a tensor is live from the operation writing it (or the plan's start) to the last
    one of the plan reading it (or the plan's end), as the memory planner places it, instead of every interior
    tensor for the whole plan; a reused input's buffer passes to the output taking it over. Operation k also holds
    its weight buffer and the next one's, whose transfer it overlaps (`buffers`: bytes by part; a view left out
    has no operation, so no buffer, and the transfer after it overlaps the operation before it)."""
    position = {index: k for k, (index, _) in enumerate(order)}
    sizes = {c.tensor.name: options.align(c.buffer_size) for c in configs}
    last = len(order) - 1
    spans = []
    for tensor in graph.tensors():
        produced, last_read = liveness.produced[tensor.name], liveness.last_read[tensor.name]
        if tensor.name not in graph.scratch or produced >= stop or last_read < first:
            continue
        start = position[produced] if produced >= first else 0
        end = last if last_read >= stop else max(position[r] for r in graph.consumers(tensor) if first <= r < stop)
        if liveness.shares(tensor.name, first, stop, set()):
            end = position[liveness.reused_by[tensor.name]] - 1
        spans.append((start, end, sizes.get(tensor.name, options.align(tensor.size))))
    held = [buffers.get(index, 0) for index, _ in order]
    following, after = [], 0
    for index, _ in reversed(order):  # the next operation's weight buffer, from each position on
        following.append(after)
        after = buffers.get(index, after)
    following.reverse()
    live = [sum(size for start, end, size in spans if start <= k <= end) + held[k] for k in range(len(order))]
    return max(bytes_ + next_ for bytes_, next_ in zip(live, following)), live[-1]


def evaluate_plan(graph: CascaderGraph, first: int, stop: int, rows: int, mode: BufferMode,
                  options: CascaderOptions = CascaderOptions(), liveness: _Liveness | None = None,
                  buffer_weights: bool = False) -> Plan | None:
    """The plan running parts first..stop−1 in stripes of `rows` output rows, or None if they cannot cascade.

    Per stripe every interior tensor has a window (`_windows`); a part computes its output's window clipped to
    the tensor, with ROLLING buffers only the rows past those it wrote before. A ring must still hold every row
    a consumer reads when it reads it, so it needs (rows written so far − first row read) rows at least. A
    rolling cascade gets enough warm-up stripes that the first real stripe's windows lie inside the tensors; a
    single stripe (the whole output) gets none, as it is clipped to the tensors anyway (with a warm-up stripe, the
    rows its consumers skip here did not match what code generation reads: a ring one row short).

    With `buffer_weights`, the operations whose parts offer a weight buffer take it where that gives the fewest
    cycles for the plan (`choose_buffering`: each transfer overlaps the operation before it, see `Plan`), as code
    generation decides it; a buffer is live during both operations.
    """
    walk = _Walk.of(graph, first, stop, rows, mode, options, liveness or _Liveness(graph), buffer_weights)
    return None if walk is None else walk.plan(buffer_weights, options)


@dataclass(frozen=True, eq=False)
class _Walk:
    """What `evaluate_plan` finds walking a plan's stripes, before it chooses which weights to buffer: the walk is
    the same with and without weight buffers, so the search walks each plan once for both."""

    graph: CascaderGraph
    first: int
    stop: int
    rows: int
    mode: BufferMode
    liveness: _Liveness
    warmup: int
    configs: tuple[TensorConfig, ...]
    output_config: StripeConfig
    boundary: int  # `_Liveness.boundary_bytes`
    rings: int  # budgeted bytes of the interior rings (but those a concatenation holds in place)
    order: tuple
    choices: tuple[Choice, ...]  # each operation's cycles streaming, and its weight buffer option if asked for
    operations: tuple[tuple[int, int], ...]  # (part, first output row) of each

    @classmethod
    def of(cls, graph: CascaderGraph, first: int, stop: int, rows: int, mode: BufferMode, options: CascaderOptions,
           liveness: _Liveness, buffer_weights: bool) -> _Walk | None:
        parts = graph.parts[first:stop]
        interior = liveness.interior(first, stop)
        if interior is None or (len(parts) > 1 and not all(p.stripable for p in parts)):
            return None
        output = parts[-1].output
        height = output.shape[ROW_AXIS]
        if rows != height and not parts[-1].stripable:
            return None
        names = {t.name for t in interior}
        reads = _interior_reads(parts, names)
        warmup = 0
        if mode is BufferMode.ROLLING and names and rows < height:
            windows = _windows(reads, output.name, 0, rows)
            lead = max(-lo for name, (lo, _) in windows.items() if name in names)
            warmup = -(-lead // rows) if lead > 0 else 0
        written = dict.fromkeys(names, 0)
        ring = dict.fromkeys(names, 1)
        choices: list[Choice] = []
        operations: list[tuple[int, int]] = []
        order = _stripe_order(parts, first)
        inputs = dict(reads)
        steps = [(index, part, part.output.name, part.output.shape[ROW_AXIS],
                  mode is BufferMode.ROLLING and part.output.name in names, inputs[part.output.name])
                 for index, part in order]
        for start in range(-warmup * rows, height, rows):
            window = _windows(reads, output.name, start, min(start + rows, height))
            for index, part, name, part_height, rolling, interior_inputs in steps:
                lo, hi = window[name]
                lo, hi = max(lo, 0), min(hi, part_height)
                if rolling:
                    lo = max(lo, written[name])
                if lo >= hi or part.view and _written_in_place(part, lo, hi, names, rows >= height):
                    continue
                for tensor, row_map, tensor_height in interior_inputs:
                    ring[tensor] = max(ring[tensor], written[tensor] - row_map(lo, hi, tensor_height)[0])
                choices.append(part.stripe_options(lo, hi, buffer_weights))
                operations.append((index, lo))
                if name in written:
                    written[name] = max(written[name], hi)
        configs = tuple(TensorConfig(t, TensorState.INTERIOR, mode, min(ring[t.name], t.shape[ROW_AXIS]))
                        for t in interior)
        joined = _joined(graph, configs)
        rings = sum(options.align(c.buffer_size) for c in configs
                    if c.tensor.name in graph.scratch and c.tensor.name not in joined)
        return cls(graph, first, stop, rows, mode, liveness, warmup, configs,
                   _output_config(output.shape, rows),
                   liveness.boundary_bytes(first, stop, names, options), rings, tuple(order), tuple(choices),
                   tuple(operations))

    def plan(self, buffer_weights: bool, options: CascaderOptions) -> Plan:
        """The plan of this walk, its weights buffered where that pays with `buffer_weights`, else all streamed."""
        graph, first, stop, configs, config = self.graph, self.first, self.stop, self.configs, self.output_config
        height = graph.parts[stop - 1].output.shape[ROW_AXIS]
        if not self.operations:  # a view alone
            return Plan(tuple(range(first, stop)), config, self.mode, configs, self.boundary, 0,
                        exit_memory=self.boundary, empty=True)
        choices = self.choices
        decision = choose_buffering(choices) if buffer_weights else streaming(choices)
        buffered = [operation for operation, buffers in zip(self.operations, decision.buffered) if buffers]
        buffers = [options.align(choice.buffer.nbytes) if buffers else 0
                   for choice, buffers in zip(choices, decision.buffered)]  # each operation's weight buffer bytes
        base = self.boundary + self.rings
        memory, exit_memory = base + max(a + b for a, b in zip([0] + buffers, buffers)), base + buffers[-1]
        if self.warmup == 0 and self.rows >= height and stop - first > 1:
            by_part = {index: nbytes for (index, _), nbytes in zip(self.operations, buffers)}
            memory, exit_memory = _one_stripe_memory(graph, first, stop, self.order, configs, by_part,
                                                     self.liveness, options)
        return Plan(tuple(range(first, stop)), config, self.mode, configs, memory, decision.total, self.warmup,
                    tuple(buffered), entry_buffer=buffers[0], entry_transfer=decision.stalls[0],
                    exit_memory=exit_memory, exit_cycles=decision.overlaps[-1])


@functools.lru_cache(maxsize=1 << 12)
def _output_config(shape: tuple[int, ...], rows: int) -> StripeConfig:
    """The stripes of `rows` rows of an output of `shape`: the same for every run of parts ending in one part, so
    made once (the search walks hundreds of runs, each at several heights)."""
    return StripeConfig.for_tensor(shape, shape[:ROW_AXIS] + (rows,) + shape[ROW_AXIS + 1:])


def _written_in_place(part: Part, lo: int, hi: int, interior: set[str], one_stripe: bool) -> bool:
    """Whether `part` is a view (`Part.view`) computed whole from a whole input, which code generation leaves out:
    its input is written in its output's place (`codegen.in_place`). A tensor of one row, or any in a cascade of
    one stripe, is whole even as a ring."""
    def whole(tensor) -> bool:
        return tensor.name not in interior or one_stripe or tensor.shape[ROW_AXIS] == 1

    return (part.view and lo == 0 and hi == part.output.shape[ROW_AXIS]
            and whole(part.inputs[0]) and whole(part.output))


def _joined(graph: CascaderGraph, configs) -> set[str]:
    """The interior tensors a concatenation's ring holds in place (`Part.joins`): read by it alone, in a ring of
    as many rows as its output's."""
    rows = {c.tensor.name: c.rows for c in configs}
    joined = set()
    for config in configs:
        readers = graph.consumers(config.tensor)
        if len(readers) == 1:
            reader = graph.parts[readers[0]]
            if config.tensor.name in reader.joins and rows.get(reader.output.name) == config.rows:
                joined.add(config.tensor.name)
    return joined


def _row_choices(part: Part, options: CascaderOptions) -> list[int]:
    """Output stripe heights to try, tallest (the whole tensor) first."""
    height = part.output.shape[ROW_AXIS]
    if not (options.enable_striping and part.stripable):
        return [height]
    shapes = candidate_stripe_shapes(part.output.shape, axes=(ROW_AXIS,), halvings=options.stripe_halvings)
    return [shape[ROW_AXIS] for shape in shapes]


def _cost(item) -> tuple[int, int]:
    return item.memory, item.cycles


def candidate_plans(graph: CascaderGraph, first: int, stop: int, options: CascaderOptions = CascaderOptions(),
                    liveness: _Liveness | None = None) -> list[Plan]:
    """The Pareto frontier of the plans running parts first..stop−1 together (empty if they cannot cascade)."""
    liveness = liveness or _Liveness(graph)
    rows = _row_choices(graph.parts[stop - 1], options)
    modes = options.buffer_modes if stop - first > 1 else options.buffer_modes[:1]  # no interior tensors
    offered = options.weight_buffering and any(graph.parts[i].buffer is not None for i in range(first, stop))
    walks = [_Walk.of(graph, first, stop, r, mode, options, liveness, offered) for r in rows for mode in modes]
    plans = [walk.plan(weights, options) for walk in walks if walk is not None
             for weights in ((False, True) if offered else (False,))]
    return pareto_frontier(plans, _cost, tie_key=Plan.key)


def search(graph: CascaderGraph, options: CascaderOptions = CascaderOptions(),
           progress: Callable[[int, int], None] | None = None) -> list[Proposal]:
    """The Pareto frontier of proposals for the whole graph, by increasing memory (decreasing cycles).
    `progress(n, m)` is called as the frontier reaches part n of m."""
    liveness = _Liveness(graph)
    longest = options.max_plan_size if options.enable_cascading else 1
    frontier: list[list[Proposal]] = [[Proposal((), 0, 0)]]
    for stop in range(1, len(graph.parts) + 1):
        extended = []
        for first in range(max(0, stop - longest), stop):
            plans = candidate_plans(graph, first, stop, options, liveness)
            extended += [before.then(plan) for before in frontier[first] for plan in plans]
        frontier.append(thin(pareto_frontier(extended, _cost, tie_key=Proposal.key), options.max_proposals))
        if progress is not None:
            progress(stop, len(graph.parts))
    return frontier[-1]
