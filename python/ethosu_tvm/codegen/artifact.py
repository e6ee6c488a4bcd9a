"""One NPU subgraph → NpuArtifact: a driver payload, its constant blob, scratch size and I/O placements.

The path: NpuGraph → TE graph → (scheduled) TIR PrimFunc → stripes (one per NPU operation, geometry from the TIR)
→ concatenation inputs written in place → memory plan → Vela API operations → register command stream.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import NamedTuple

from ethosu.vela import api as vapi

from ..arch.cycles import dma_cycles
from ..arch.system import CONSTANTS_REGION, DEFAULT_SYSTEM, FAST_SCRATCH_REGION, System
from ..cascader.buffering import Budget, Choice, choose_buffering
from ..legalize.ops import NpuGraph
from ..target import EthosuTarget
from .depth_split import part_depth, parts, worth_splitting
from .in_place import VIEW, Alias, candidates, write_in_place
from .memory import ConstantPool, Placement, live_bytes, nbytes, plan, weight_buffer
from .operation_cost import estimate_cycles
from .operations import OperationBuilder, buffering_key
from .prefetch import Fixed, State, elapsed, fullest, joint, prefetch, waits
from .schedule import ScheduleFn
from .tir_to_npu import Stripe, translate
from .vela_calls import vela_call


@dataclass(frozen=True)
class IoBinding:
    """Where the driver's caller puts an input or finds an output: region (base-address index) and offset."""

    name: str
    region: int
    offset: int
    shape: tuple[int, int, int, int]
    dtype: str
    size: int


@dataclass(frozen=True)
class OpSummary:
    """One stripe of a primitive (all of it when unscheduled), for reports: the Vela operation producing it, and how
    many block operations the stripe takes (a softmax takes a sequence of them)."""

    op: str
    source: str
    npu_operation: str
    block_config: tuple[int, int, int] | None
    block_operations: int = 1


@dataclass(frozen=True)
class CascadeReport:
    """What the cascader chose for one NPU subgraph: proposal `index` of the `proposals` on its Pareto frontier
    (ordered by increasing memory), for an SRAM limit of `sram_limit` bytes of scratch (None: no limit);
    `scratch_size` is what memory planning made of it (of the fast scratch under Dedicated_Sram). `proposal` is a
    `cascader.Proposal`."""

    proposal: object
    index: int
    proposals: int
    sram_limit: int | None
    scratch_size: int


@dataclass(frozen=True)
class NpuArtifact:
    """Everything needed to run one NPU subgraph: base address table entries are described by `inputs`, `outputs`,
    region 0 (``constants``), region 1 (``scratch_size`` bytes) and region 2 (``fast_scratch_size`` bytes, under
    Dedicated_Sram). `function` is the partitioned module's global
    function the artifact implements; `cascade` says how the cascader scheduled it (None: it did not run); `system`
    is the system its cycles are estimated for (the target's)."""

    name: str
    function: str
    accelerator: str
    driver_payload: bytes
    command_stream: tuple[int, ...]
    constants: bytes
    scratch_size: int
    inputs: tuple[IoBinding, ...]
    outputs: tuple[IoBinding, ...]
    ops: tuple[OpSummary, ...]
    cascade: CascadeReport | None = None
    system: System = DEFAULT_SYSTEM
    fast_scratch_size: int = 0


def _binding(tensor, placement: Placement) -> IoBinding:
    return IoBinding(tensor.name, placement.region, placement.offset, tensor.shape, tensor.dtype, nbytes(tensor))


def _summary(op, npu_ops) -> OpSummary:
    block = getattr(npu_ops[-1], "block_config", None)
    config = (block.height, block.width, block.depth) if block is not None else None
    count = sum(isinstance(npu_op, vapi.NpuBlockOperation) for npu_op in npu_ops)
    return OpSummary(op.op_name, op.source, type(npu_ops[-1]).__name__, config, count)


def _joint_choice(options: list[tuple[Stripe, Choice]], left_out: set[str], budget: Budget | None
                  ) -> tuple[frozenset[tuple[int, int]], dict[str, int], frozenset[tuple[int, int]]]:
    """The stripes `choose_buffering` buffers within `budget`, without the buffers named in `left_out`, their
    buffers' sizes, and the stripes it streams frugally."""
    choices = [replace(choice, buffer=None) if weight_buffer(stripe) in left_out else choice
               for stripe, choice in options]
    decision = choose_buffering(choices, budget=budget)
    chosen = [option for option, buffers in zip(options, decision.buffered) if buffers]
    return (frozenset(buffering_key(stripe) for stripe, _ in chosen),
            {weight_buffer(stripe): choice.buffer.nbytes for stripe, choice in chosen},
            frozenset(buffering_key(stripe) for (stripe, _), frugal in zip(options, decision.frugal) if frugal))


def _fixed(ops, target: EthosuTarget) -> Fixed:
    """A stripe's operations as `prefetch` times them."""
    system, accelerator = target.system, target.npu_accelerator
    costs = [estimate_cycles(op, accelerator, system=system) for op in ops if isinstance(op, vapi.NpuBlockOperation)]
    return Fixed(tuple((cost.cycles, cost.constants_cycles) for cost in costs),
                 tuple((math.ceil(dma_cycles(system, op.src.region, op.dest.region, op.src.length)),
                        op.src.region == CONSTANTS_REGION) for op in ops if isinstance(op, vapi.NpuDmaOperation)))


class _Decision(NamedTuple):
    """Our own choice of buffering: the `buffering_key`s of the stripes that buffer, their buffers' sizes (by
    `weight_buffer` name), those that stream frugally, the leads of the DMAs issued ahead (by buffer name and by
    stripe index), the bytes the plain choice keeps live at its fullest step, the stream's elapsed cycles, and
    the steps and states `prefetch` times them by."""

    buffered: frozenset[tuple[int, int, int]]
    wanted: dict[str, int]
    frugal: frozenset[tuple[int, int, int]]
    leads: dict[str, int]
    ahead: dict[int, int]
    peak: int
    cycles: int | None
    steps: list[Fixed | Choice]
    states: dict[int, State]


def _steps(stripes: list[Stripe], per_stripe, options, target: EthosuTarget) -> list[Fixed | Choice]:
    """The stripes as `prefetch` times them: their `Choice` where they have a buffering option."""
    option = {id(stripe): choice for stripe, choice in options if choice.buffer is not None}
    return [option.get(id(stripe)) or _fixed(ops, target) for stripe, ops in zip(stripes, per_stripe)]


def _plain(stripes: list[Stripe], steps: list[Fixed | Choice], chosen) -> dict[int, State]:
    """The states of a `_joint_choice`, by step index."""
    buffered, _, frugal = chosen
    return {index: State(buffering_key(stripe) in buffered, buffering_key(stripe) in frugal)
            for index, (stripe, step) in enumerate(zip(stripes, steps)) if isinstance(step, Choice)}


def _decided(stripes: list[Stripe], steps: list[Fixed | Choice], chosen, states: dict[int, State],
             peak: int) -> _Decision:
    """The `_Decision` of `states`, `chosen` (a `_joint_choice`) where they are its own."""
    cycles = elapsed(steps, states)
    if states == _plain(stripes, steps, chosen):
        return _Decision(*chosen, {}, {}, peak, cycles, steps, states)
    ahead = {index: state.lead for index, state in states.items() if state.buffers and state.lead > 1}
    keys = {index: buffering_key(stripes[index]) for index in states}
    buffers = [index for index, state in states.items() if state.buffers]
    return _Decision(frozenset(keys[i] for i in buffers),
                     {weight_buffer(stripes[i]): steps[i].buffer.nbytes for i in buffers},
                     frozenset(keys[i] for i, state in states.items() if state.frugal),
                     {weight_buffer(stripes[i]): lead for i, lead in ahead.items()}, ahead, peak, cycles, steps,
                     states)


def _prefetched(stripes: list[Stripe], per_stripe, options, chosen, live: tuple[int, ...], limit: int | None,
                target: EthosuTarget) -> _Decision:
    """`chosen` (a `_joint_choice`) with the weight DMAs `prefetch` issues ahead, at most `limit` bytes live at
    each step (None: the plain choice's fullest step)."""
    steps = _steps(stripes, per_stripe, options, target)
    plain = _plain(stripes, steps, chosen)
    peak = fullest(steps, plain, live)
    return _decided(stripes, steps, chosen, prefetch(steps, plain, live, peak if limit is None else limit), peak)


def _issued_ahead(per_stripe: list[list], ahead: dict[int, int]) -> list[list]:
    """The stripes' operations with the weight DMA of each stripe in `ahead` moved to the start of the stripe that
    many stripes back, after the DMAs of later stripes moved there (`prefetch`)."""
    moved = [list(ops) for ops in per_stripe]
    early: dict[int, list] = {}
    for index in sorted(ahead, reverse=True):
        if moved[index] and isinstance(moved[index][0], vapi.NpuDmaOperation):
            early.setdefault(index - ahead[index] + 1, []).append(moved[index].pop(0))
    return [early.get(index, []) + ops for index, ops in enumerate(moved)]


class _Ours(NamedTuple):
    """What our own buffering choice is made from: the stripes, each one's operations, the options of those built
    with a block operation (`OperationBuilder.choices`) and the bytes live at each stripe (`live_bytes`)."""

    stripes: list[Stripe]
    per_stripe: list[list]
    options: list[tuple[Stripe, Choice]]
    live: tuple[int, ...]


def _budget(ours: _Ours, limit: int | None) -> Budget | None:
    """The budget of `limit` bytes at each stripe (None: no limit)."""
    if limit is None:
        return None
    step = {id(stripe): index for index, stripe in enumerate(ours.stripes)}
    return Budget(limit, ours.live, tuple(step[id(stripe)] for stripe, _ in ours.options))


class _Candidate(NamedTuple):
    """One way our own choice may build the stripes: what it is made from, its budget, the plain `_joint_choice`
    within that budget, and the decision taken (DMAs issued ahead included)."""

    ours: _Ours
    budget: Budget | None
    plain: tuple
    decision: _Decision


def _our_choice(ours: _Ours, dropped: set[str], sram_limit: int | None, target: EthosuTarget) -> _Candidate:
    """The `_Candidate` of `ours`, its DMAs issued ahead by `_prefetched`."""
    budget = _budget(ours, sram_limit)
    plain = _joint_choice(ours.options, dropped, budget)
    return _Candidate(ours, budget, plain, _prefetched(*ours[:3], plain, ours.live, sram_limit, target))


def _with_parts(graph: NpuGraph, choice: _Candidate, index: int, parts: list[Stripe], dropped: set[str],
                sram_limit: int | None, limit: int, placements: dict[str, Placement],
                target: EthosuTarget) -> _Candidate:
    """`choice` with the stripe at `index` replaced by its `parts` (`depth_split.parts`), their
    operations built on `placements` in a pool of their own, and their states chosen jointly within `limit` bytes
    (`prefetch.joint`), the others' kept; the bytes live during each part are those live during the whole."""
    ours, decision = choice.ours, choice.decision
    builder = OperationBuilder(target.npu_accelerator, placements, ConstantPool(), target.system)
    part_ops = [builder.build(graph.ops[part.op], part) for part in parts]
    whole = ours.stripes[index]
    options = [pair for stripe, option in ours.options
               for pair in (zip(builder.stripes, builder.choices) if stripe is whole else [(stripe, option)])]
    count = len(parts)
    trial = _Ours(ours.stripes[:index] + parts + ours.stripes[index + 1:],
                  ours.per_stripe[:index] + part_ops + ours.per_stripe[index + 1:], options,
                  ours.live[:index] + (ours.live[index],) * count + ours.live[index + 1:])
    steps = decision.steps[:index] + _steps(parts, part_ops, options, target) + decision.steps[index + 1:]
    states = {i if i < index else i + count - 1: state for i, state in decision.states.items() if i != index}
    states, _ = joint(steps, {**states, **{i: State(False) for i in range(index, index + count)}}, trial.live, limit,
                      range(index, index + count))
    budget = _budget(trial, sram_limit)
    plain = _joint_choice(options, dropped, budget)
    return _Candidate(trial, budget, plain, _decided(trial.stripes, steps, plain, states, decision.peak))


def _depth_split(graph: NpuGraph, choice: _Candidate, dropped: set[str], sram_limit: int | None, limit: int,
                 placements: dict[str, Placement], target: EthosuTarget) -> _Candidate | None:
    """`choice` with the convolutions `depth_split.worth_splitting` picks split into parts
    (`depth_split.part_depth`, `_with_parts`), each where the stream then finishes sooner; None when no split
    pays. Each is tried on the splits taken before it: the streaming convolutions first, in stream order, then the
    buffering ones, whose parts' transfers would otherwise take the flash's idle time first (ResNet-8 on
    ethos-u55-256: 121,237 cycles with a buffering convolution split first and its streaming one after, 119,389
    with the streaming one alone)."""
    ours, decision = choice.ours, choice.decision
    best, cycles = None, decision.cycles
    if cycles is None:
        return None
    waited = waits(decision.steps, decision.states)
    for stripe, option in sorted(ours.options, key=lambda pair: buffering_key(pair[0]) in decision.buffered):
        index = next(i for i, whole in enumerate(ours.stripes) if whole is stripe)
        depth = part_depth(stripe.ofm.box[3].extent)
        if depth is None or not worth_splitting(graph.ops[stripe.op], stripe, option,
                                                buffering_key(stripe) in decision.buffered, ours.live[index], limit,
                                                waited.get(index, 0), decision.cycles):
            continue
        current = best or choice
        index = next(i for i, whole in enumerate(current.ours.stripes) if whole is stripe)
        trial = _with_parts(graph, current, index, parts(stripe, depth), dropped, sram_limit, limit, placements,
                            target)
        if trial.decision.cycles is not None and trial.decision.cycles < cycles:
            best, cycles = trial, trial.decision.cycles
    return best


def _taken(choice: _Candidate):
    """A `_Candidate` as `_build_operations` builds it: (stripes, options, budget, plain choice, (buffered, buffer
    sizes, frugal, leads by buffer name, leads by stripe index))."""
    return choice.ours.stripes, choice.ours.options, choice.budget, choice.plain, choice.decision[:5]


def build_operations(graph: NpuGraph, stripes: list[Stripe], target: EthosuTarget,
                     io_in_scratch: frozenset[str] = frozenset(), sram_limit: int | None = None,
                     buffered: frozenset[tuple[int, int, int]] | None = None, aliases: dict[str, Alias] | None = None,
                     spill: bool = True):
    """`_build_operations`. Under Dedicated_Sram the fast scratch holds the launch's intermediate feature maps too,
    as Vela's arena cache does (in SRAM they cost fewer cycles than in DRAM), unless they leave it larger than
    `sram_limit` and `spill` lets them go to DRAM: then it holds only the weight buffers and rolling buffers."""
    if target.system.cache_region != FAST_SCRATCH_REGION:
        return _build_operations(graph, stripes, target, io_in_scratch, sram_limit, buffered, aliases, False)
    built = _build_operations(graph, stripes, target, io_in_scratch, sram_limit, buffered, aliases, True)
    if sram_limit is None or built[6] <= sram_limit or not spill:
        return built
    return _build_operations(graph, stripes, target, io_in_scratch, sram_limit, buffered, aliases, False)


def _build_operations(graph: NpuGraph, stripes: list[Stripe], target: EthosuTarget, io_in_scratch: frozenset[str],
                      sram_limit: int | None, buffered: frozenset[tuple[int, int, int]] | None,
                      aliases: dict[str, Alias] | None, cache_feature_maps: bool):
    """The stripes (our own choice may split convolutions along their depth, `_depth_split`), the Vela operations
    of each, the constant pool, placements, scratch size, the sizes of the weight buffers (by `weight_buffer` name)
    and the fast scratch size. A second pass when some convolution stripes buffer their weights (those in
    `buffered`, by `buffering_key`, as the cascader chose them; None: the ones `choose_buffering` picks from a
    first pass that streams them all, which also picks the stripes that stream frugally): their buffers join the
    memory plan, and the operations use them. Our own choice keeps to `sram_limit` bytes of scratch at every
    stripe, counting the bytes live there (`live_bytes`); while the planned scratch still exceeds it (the planner
    may leave gaps), the largest buffer is left out (its convolution streams), and the choice is made again
    without it. Under Dedicated_Sram the limit is the fast scratch's, which holds the weight buffers. `aliases`
    are the tensors written in place (see `in_place`); `cache_feature_maps`: see `memory.plan`."""
    cache = target.system.cache_region
    wanted: dict[str, int] = {}
    frugal: frozenset[tuple[int, int, int]] = frozenset()  # stripes streaming frugally, when the choice is ours
    dropped: set[str] = set()
    options = None  # each stripe's options, when the choice is ours
    budget = None
    leads: dict[str, int] = {}  # weight buffers whose DMAs `prefetch` issues ahead, and by how many stripes
    ahead: dict[int, int] = {}  # the same by stripe index
    peak = sram_limit  # the most bytes DMAs issued ahead may leave live: without a limit, the plain choice's
    whole = None  # our own choice without depth splits

    def limited(sizes: tuple[dict, int, int]) -> int:
        """The planned size of the region holding the weight buffers."""
        return sizes[2] if cache == FAST_SCRATCH_REGION else sizes[1]

    if buffered is None:
        placements, scratch_size, fast_size = plan(graph, stripes, io_in_scratch, aliases=aliases, cache_region=cache,
                                                   cache_feature_maps=cache_feature_maps)
        pool = ConstantPool()
        builder = OperationBuilder(target.npu_accelerator, placements, pool, target.system)
        per_stripe = [builder.build(graph.ops[stripe.op], stripe) for stripe in stripes]
        ours = _Ours(stripes, per_stripe, list(zip(builder.stripes, builder.choices)),
                     live_bytes(graph, stripes, io_in_scratch, aliases, cache, cache_feature_maps))
        whole = _our_choice(ours, dropped, sram_limit, target)
        decision = whole.decision
        peak = decision.peak if sram_limit is None else sram_limit
        split = _depth_split(graph, whole, dropped, sram_limit, peak, placements, target)
        if split is None and not decision.buffered and not decision.frugal:
            return stripes, per_stripe, pool, placements, scratch_size, {}, fast_size
        stripes, options, budget, plain, (buffered, wanted, frugal, leads, ahead) = _taken(split or whole)
    while True:
        chosen = {name: size for name, size in wanted.items() if name not in dropped}
        placements, scratch_size, fast_size = sizes = plan(graph, stripes, io_in_scratch, chosen, aliases,
                                                           leads=leads, cache_region=cache,
                                                           cache_feature_maps=cache_feature_maps)
        if leads and limited(sizes) > peak:  # the planner left gaps
            if whole is not None and stripes is not whole.ours.stripes:  # the convolutions stay whole
                stripes, options, budget, plain, (buffered, wanted, frugal, leads, ahead) = _taken(whole)
            else:  # no DMA ahead
                (buffered, wanted, frugal), leads, ahead = plain, {}, {}
            continue
        if sram_limit is not None and limited(sizes) > sram_limit and chosen:
            dropped.add(max(chosen, key=lambda name: (chosen[name], name)))
            if options is not None:
                buffered, wanted, frugal = plain = _joint_choice(options, dropped, budget)
            continue
        pool = ConstantPool()
        builder = OperationBuilder(target.npu_accelerator, placements, pool, target.system, buffered, frugal)
        per_stripe = [builder.build(graph.ops[stripe.op], stripe) for stripe in stripes]
        if builder.weight_buffers == wanted:
            return stripes, _issued_ahead(per_stripe, ahead), pool, placements, scratch_size, wanted, fast_size
        wanted = builder.weight_buffers


def written_in_place(graph: NpuGraph, stripes: list[Stripe], io_in_scratch: frozenset[str]):
    """`write_in_place` of the candidates: identity inputs in their outputs' places always (the identity's copy
    goes, and the two tensors' buffers become one, live where either was: never more bytes live at once; the
    cascader counts them so too), concatenation inputs and elementwise outputs unless they make the planned scratch
    larger: a concatenation input produced long before the others would hold the whole output's buffer in the
    meantime. The inputs of one concatenation are tried together first (each alone may hold the output's buffer
    for nothing while the others still need buffers of their own), then one at a time."""
    found = candidates(graph, stripes)
    chosen = {name: place for name, place in found.items() if place[1] == VIEW}
    kept, aliases = write_in_place(graph, stripes, chosen)
    best = plan(graph, kept, io_in_scratch, aliases=aliases, verify=False)[1]
    groups: dict[str, dict] = {}
    for name, place in found.items():
        if name not in chosen:
            groups.setdefault(place[0], {})[name] = place
    for group in groups.values():
        for trial in [group] + ([{name: place} for name, place in group.items()] if len(group) > 1 else []):
            if not trial.keys() - chosen.keys():
                continue
            kept, aliases = write_in_place(graph, stripes, {**chosen, **trial})
            size = plan(graph, kept, io_in_scratch, aliases=aliases, verify=False)[1]
            if size <= best:
                chosen, best = {**chosen, **trial}, size
    return write_in_place(graph, stripes, chosen)


def _built(graph: NpuGraph, order: list[Stripe], target: EthosuTarget, io_in_scratch: frozenset[str],
           sram_limit: int | None, buffered: frozenset[tuple[int, int, int]] | None, spill: bool = True):
    """(stripes after in-place writes and depth splits, their aliases, the rest of `build_operations` of them) for
    the stripes in `order`."""
    stripes, aliases = written_in_place(graph, order, io_in_scratch)
    stripes, *built = build_operations(graph, stripes, target, io_in_scratch, sram_limit, buffered, aliases, spill)
    return stripes, aliases, tuple(built)


def _model_order_plans_smaller(graph: NpuGraph, built, io_in_scratch: frozenset[str]) -> bool:
    """Whether the unscheduled stripes of `built` (a `_built`), run in the NpuGraph's order instead, plan a
    smaller scratch with the same in-place writes and weight buffers: a cheap test before building them so."""
    stripes, aliases, (*_, weight_buffers, _) = built
    ordered = sorted(stripes, key=lambda stripe: stripe.op)
    return ordered != stripes and plan(graph, ordered, io_in_scratch, weight_buffers, aliases, False)[1] < \
        _planned_bytes(built)


def _planned_bytes(built) -> int:
    """The scratch and fast scratch bytes of a `_built`."""
    *_, scratch_size, _, fast_size = built[2]
    return scratch_size + fast_size


def compile_npu_graph(graph: NpuGraph, target: EthosuTarget, schedule: ScheduleFn | None = None,
                      io_in_scratch: frozenset[str] = frozenset(), sram_limit: int | None = None,
                      buffered: frozenset[tuple[int, int]] | None = None, spill: bool = True) -> NpuArtifact:
    """Generate the register command stream and constants of one NPU subgraph with Vela's API, from its TIR with
    `schedule` applied (None: one NPU operation per primitive). Inputs/outputs named in `io_in_scratch` are placed
    in the scratch region (their IoBinding says where) instead of regions of their own. Weight buffers stay within
    a scratch of `sram_limit` bytes (None: no limit); `buffered` names the convolution stripes that buffer them by
    primitive index and first OFM row, as the cascader does (None: our own choice, see `build_operations`), `spill`
    whether the intermediates may leave the fast scratch for that (see `build_operations`)."""
    order = translate(graph, schedule)
    if buffered is not None:  # the cascader's stripes span the whole depth
        buffered = frozenset((op, row, 0) for op, row in buffered)
    built = _built(graph, order, target, io_in_scratch, sram_limit, buffered, spill)
    # Unscheduled, TE's walk follows each ADD's operands, so it may run a residual block's shortcut convolution
    # first, its output waiting beside the other branch's weight buffers (ResNet-large: 172,864 bytes of scratch,
    # 152,384 in the model's order). Neither order is always the smaller: the model's (Vela's) is kept if smaller.
    if schedule is None and _model_order_plans_smaller(graph, built, io_in_scratch):
        other = _built(graph, sorted(order, key=lambda stripe: stripe.op), target, io_in_scratch, sram_limit, buffered)
        if _planned_bytes(other) < _planned_bytes(built):
            built = other
    stripes, _, (per_stripe, pool, placements, scratch_size, _, fast_size) = built
    accelerator = target.npu_accelerator
    npu_ops = [npu_op for ops in per_stripe for npu_op in ops]
    stream = vela_call(graph.name, vapi.npu_generate_register_command_stream, npu_ops, accelerator)
    payload = vela_call(graph.name, vapi.npu_create_driver_payload, stream, accelerator)
    return NpuArtifact(
        name=graph.name,
        function=graph.function,
        accelerator=target.accelerator,
        driver_payload=bytes(payload),
        command_stream=tuple(int(word) for word in stream),
        constants=pool.data(),
        scratch_size=scratch_size,
        inputs=tuple(_binding(t, placements[t.name]) for t in graph.inputs),
        outputs=tuple(_binding(t, placements[t.name]) for t in graph.outputs),
        ops=tuple(_summary(graph.ops[stripe.op], ops) for stripe, ops in zip(stripes, per_stripe)),
        system=target.system,
        fast_scratch_size=fast_size,
    )
