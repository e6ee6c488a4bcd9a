"""What the cascader schedules: tensors, parts (operators) that read and write them, and the graph they form.

A `Part` knows which input region each output stripe needs (one `Propagator` per input) and what computing a
stripe costs (a callable the caller supplies, e.g. `codegen.stripe_cost` through `cascader.ethosu`); nothing here
knows the NPU.
Parts are listed in execution order, which the plans keep: a cascade is a run of consecutive parts.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from .propagator import Propagator

ROW_AXIS = 1  # NHWC: cascades stripe feature maps by rows

# (output stripe shape, input stripe shapes) → estimated cycles of computing that stripe as one operation
StripeCost = Callable[[tuple[int, ...], tuple[tuple[int, ...], ...]], int]


@dataclass(frozen=True)
class WeightBuffer:
    """The option of copying a stripe's constant operands (weights) into a buffer of the budgeted memory before it
    runs: `nbytes` of buffer, a `transfer` of that many cycles (it may overlap the previous operation), then
    `cycles` for the operation reading the copy (all of which a later transfer can overlap)."""

    nbytes: int
    transfer: int
    cycles: int


@dataclass(frozen=True)
class Choice:
    """One operation's options, among which `cascader.buffering` chooses: `streamed` cycles (with `overlap` of them
    free for the next one's transfer), `buffer`, the option of buffering its weights (None: it has none), and
    `frugal`, the (cycles, overlap) of streaming them frugally (None: no such option). A part remembers those of
    its stripes (`Part.stripe_options`): the walks ask for them at every stripe."""

    streamed: int
    overlap: int
    buffer: WeightBuffer | None = None
    frugal: tuple[int, int] | None = None


# (output stripe shape, input stripe shapes) → that stripe's weight buffer option, or None without one
StripeBuffer = Callable[[tuple[int, ...], tuple[tuple[int, ...], ...]], WeightBuffer | None]


@dataclass(frozen=True)
class Tensor:
    """A feature map: `size` bytes when it exists whole."""

    name: str
    shape: tuple[int, ...]
    itemsize: int = 1

    @property
    def size(self) -> int:
        return math.prod(self.shape) * self.itemsize

    @property
    def row_bytes(self) -> int:
        return self.size // self.shape[ROW_AXIS]


@dataclass(frozen=True)
class RowMap:
    """The rows of one input that an interval of output rows reads: the propagator's row for the row axis.

    Output rows [lo, hi) need input rows from floor(stride·lo + offset), ceil(stride·(hi − lo) + halo) of them,
    clipped to the input (what falls outside is padding). `whole` inputs are read entirely by any stripe.
    """

    stride: int | Fraction
    halo: int | Fraction
    offset: int | Fraction
    whole: bool = False

    @classmethod
    def of(cls, propagator: Propagator) -> RowMap | None:
        """The row map of `propagator`, or None when its input rows follow another output axis."""
        dependency = propagator.dependencies[ROW_AXIS]
        row = propagator.transform[ROW_AXIS]
        if dependency is None:
            return cls(0, row[-1], 0, whole=True)
        if dependency != ROW_AXIS:
            return None
        return cls(row[ROW_AXIS], row[-1], propagator.offset[ROW_AXIS])

    def window(self, lo: int, hi: int, height: int) -> tuple[int, int]:
        """The rows read, not clipped: rows before 0 or from `height` on are padding (or, for a cascade's
        window, rows that a stripe before the first or after the last would read)."""
        if self.whole:
            return 0, height
        start = math.floor(self.stride * lo + self.offset)
        return start, start + math.ceil(self.stride * (hi - lo) + self.halo)

    def __call__(self, lo: int, hi: int, height: int) -> tuple[int, int]:
        start, stop = self.window(lo, hi, height)
        return max(start, 0), min(stop, height)


@dataclass(frozen=True, eq=False)
class Part:
    """One operator: reads `inputs`, writes `output`; `propagators` follow `inputs`.

    `stripable` is False for parts whose output cannot be produced in row stripes (a reshape that needs its
    whole input laid out as one buffer); they only run whole, outside any cascade. `reuses` names the input whose
    buffer the output takes when neither is a ring (an elementwise output over an input nothing else reads).
    `joins` names the inputs of a concatenation its output may hold in place (`legalize.reuse.concatenation_joins`);
    inside a cascade one does when it is kept in a ring of as many rows as the output's (`codegen.in_place`).
    `view` marks an identity whose input is written in its output's place (`legalize.reuse.reshape_views`): where
    both are whole, it costs no operation.

    A part's stripe costs and buffer options are remembered by output rows: the search walks the same stripes of a
    part in every plan that holds it (a dozen runs of parts, each at several stripe heights and buffer modes).
    """

    name: str
    inputs: tuple[Tensor, ...]
    output: Tensor
    propagators: tuple[Propagator, ...]
    cost: StripeCost
    stripable: bool = True
    buffer: StripeBuffer | None = None
    overlap: StripeCost | None = None  # the cycles of a stripe a weight transfer issued after it can run in
    reuses: str | None = None
    joins: tuple[str, ...] = ()
    view: bool = False
    row_maps: tuple[RowMap | None, ...] = field(init=False, repr=False)
    _remembered: dict = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self):
        if len(self.inputs) != len(self.propagators):
            raise ValueError(f"part {self.name}: {len(self.inputs)} inputs but {len(self.propagators)} propagators")
        maps = tuple(RowMap.of(p) for p in self.propagators)
        object.__setattr__(self, "row_maps", maps)
        if any(m is None for m in maps):  # an input's rows follow another output axis: rows cannot be striped
            object.__setattr__(self, "stripable", False)

    def input_rows(self, lo: int, hi: int) -> tuple[tuple[int, int], ...]:
        """For output rows [lo, hi), the rows of each input read (clipped to the input)."""
        return tuple(m(lo, hi, t.shape[ROW_AXIS]) for m, t in zip(self.row_maps, self.inputs))

    def _stripe_shapes(self, lo: int, hi: int) -> tuple[tuple[int, ...], tuple[tuple[int, ...], ...]]:
        """(output stripe shape, input stripe shapes) of output rows [lo, hi)."""
        out_shape = _with_rows(self.output.shape, hi - lo)
        return out_shape, tuple(_with_rows(t.shape, b - a) for t, (a, b) in zip(self.inputs, self.input_rows(lo, hi)))

    def _remember(self, key: tuple, compute: Callable[[], object]):
        """`compute()`, once per `key` (the kind of answer and every argument it depends on)."""
        if key not in self._remembered:
            self._remembered[key] = compute()
        return self._remembered[key]

    def stripe_cost(self, lo: int, hi: int) -> int:
        """Cycles of computing output rows [lo, hi) as one operation."""
        return self._remember(("cost", lo, hi), lambda: self.cost(*self._stripe_shapes(lo, hi)))

    def stripe_overlap(self, lo: int, hi: int, cycles: int) -> int:
        """The cycles of computing output rows [lo, hi) (`cycles` in all) that a weight transfer issued after it can
        run in: all of them unless `overlap` says otherwise (the operation reads the memory the transfer reads)."""
        if self.overlap is None:
            return cycles
        return self._remember(("overlap", lo, hi), lambda: self.overlap(*self._stripe_shapes(lo, hi)))

    def stripe_options(self, lo: int, hi: int, buffer: bool) -> Choice:
        """Output rows [lo, hi) as one operation: its cycles, those a weight transfer can run in, and its weight
        buffer option when `buffer` asks for it (else None). Remembered whole, as a plan's walk asks for them at
        every stripe, and looked up before anything else is built."""
        key = ("options", lo, hi, buffer)
        known = self._remembered.get(key)
        if known is None:
            cycles = self.stripe_cost(lo, hi)
            known = self._remembered[key] = Choice(cycles, self.stripe_overlap(lo, hi, cycles),
                                                   self.stripe_buffer(lo, hi) if buffer else None)
        return known

    def stripe_buffer(self, lo: int, hi: int) -> WeightBuffer | None:
        """The weight buffer option of computing output rows [lo, hi) as one operation (None: there is none)."""
        if self.buffer is None:
            return None
        return self._remember(("buffer", lo, hi), lambda: self.buffer(*self._stripe_shapes(lo, hi)))


def _with_rows(shape: tuple[int, ...], rows: int) -> tuple[int, ...]:
    return shape[:ROW_AXIS] + (rows,) + shape[ROW_AXIS + 1:]


@dataclass(frozen=True, eq=False)
class CascaderGraph:
    """Parts in execution order; `inputs`/`outputs` are the graph's. `scratch` names the tensors that occupy the
    memory being budgeted (the intermediates, and any graph I/O that is placed there too)."""

    parts: tuple[Part, ...]
    inputs: tuple[Tensor, ...]
    outputs: tuple[Tensor, ...]
    scratch: frozenset[str]

    def __post_init__(self):
        available = {t.name for t in self.inputs}
        for part in self.parts:
            missing = [t.name for t in part.inputs if t.name not in available]
            if missing:
                raise ValueError(f"part {part.name} reads {missing} before anything produces them")
            available.add(part.output.name)
        consumers = {t: [i for i, p in enumerate(self.parts) if t in {x.name for x in p.inputs}] for t in available}
        object.__setattr__(self, "_consumers", consumers)

    def consumers(self, tensor: Tensor) -> list[int]:
        """Indices of the parts that read `tensor`, in order."""
        return self._consumers[tensor.name]

    def is_output(self, tensor: Tensor) -> bool:
        return tensor.name in {t.name for t in self.outputs}

    def tensors(self) -> Sequence[Tensor]:
        """Every tensor once: graph inputs, then each part's output."""
        return list(self.inputs) + [p.output for p in self.parts]
