"""Plans and proposals of the generic cascader on hand-made graphs, against hand-computed rings, rows, memory and
cycles, and against a brute-force enumeration of every way to cut a graph into cascades."""
import importlib
import itertools
import math

import pytest

from ethosu_tvm.cascader import (
    BufferMode,
    CascaderGraph,
    CascaderOptions,
    Part,
    Proposal,
    Tensor,
    WeightBuffer,
    binary_elementwise_propagator,
    candidate_plans,
    conv2d_propagator,
    evaluate_plan,
    pareto_frontier,
    search,
)

ROLLING, RECOMPUTE = BufferMode.ROLLING, BufferMode.RECOMPUTE


def rows_cost(out_shape, in_shapes):
    """Cycles = output rows computed (so recomputation shows), plus a fixed cost per operation."""
    return out_shape[1] * 10 + 3


def conv_part(name, src: Tensor, dst: Tensor, kernel=3, stride=1, pad=1, cost=rows_cost):
    return Part(name, (src,), dst, (conv2d_propagator((kernel, kernel), src.shape[3], (stride, stride),
                                                      padding=(pad, pad)),), cost)


def chain(height=12, width=6, channels=(4, 8, 4), scratch=("b",)):
    """a → conv3x3 SAME → b → conv3x3 SAME → c."""
    a, b, c = (Tensor(n, (1, height, width, ch)) for n, ch in zip("abc", channels))
    parts = (conv_part("conv1", a, b), conv_part("conv2", b, c))
    return CascaderGraph(parts, (a,), (c,), frozenset(scratch))


def residual(height=8):
    """a → conv → b → conv → c; add(c, a) → d: `a` passes over both convolutions."""
    a, b, c, d = (Tensor(n, (1, height, 4, 8)) for n in "abcd")
    add = Part("add", (c, a), d, (binary_elementwise_propagator(c.shape, d.shape),
                                  binary_elementwise_propagator(a.shape, d.shape)), rows_cost)
    parts = (conv_part("conv1", a, b), conv_part("conv2", b, c), add)
    return CascaderGraph(parts, (a,), (d,), frozenset("abcd"))


@pytest.mark.parametrize("mode, producer_ops, producer_rows, ring", [(ROLLING, 7, 12, 4), (RECOMPUTE, 6, 22, 4)])
def test_two_convolutions_in_stripes_of_two_rows(mode, producer_ops, producer_rows, ring):
    """Output stripes [0,2), [2,4), ... [10,12) need intermediate rows [0,3), [1,5), ..., [9,12) (SAME padding
    clips the ends). Recomputing them costs 3+4+4+4+4+3 = 22 rows in 6 operations. Rolling computes each row once:
    a warm-up stripe computes row 0, then 2 rows per stripe, the last one row: 12 rows in 7 operations. Either way
    a ring must hold the 4 rows a stripe reads."""
    graph = chain()
    plan = evaluate_plan(graph, 0, 2, 2, mode)
    assert plan.stripes == 6 and plan.rows == 2
    assert plan.warmup == (1 if mode is ROLLING else 0)
    (config,) = plan.interior
    assert (config.tensor.name, config.rows, config.buffer_mode) == ("b", ring, mode)
    consumer = 6 * (2 * 10 + 3)
    producer = producer_rows * 10 + producer_ops * 3
    assert plan.cycles == consumer + producer
    assert plan.memory == ring * 6 * 8  # only b is budgeted here: 4 rows of 6 × 8 bytes


def test_rfc_example_two_convolutions_drop_from_megabytes_to_kilobytes():
    """Two chained 3x3 convolutions on 1x321x212x6 with a 16-channel intermediate: 1,088,832 bytes whole, a
    3-row ring (10,176 bytes) when cascaded in single rows."""
    graph = chain(321, 212, (6, 16, 6))
    whole = 321 * 212 * 16
    assert whole > 1_000_000
    proposals = search(graph)
    assert proposals[-1].memory == whole and not proposals[-1].cascades
    smallest = proposals[0]
    (plan,) = smallest.plans
    assert (plan.parts, plan.rows, plan.interior[0].rows) == ((0, 1), 1, 3)
    assert smallest.memory == 3 * 212 * 16 == 10_176


def test_a_tensor_read_after_the_run_cannot_be_interior():
    """A run cascades only if what its earlier parts produce is read inside it. In the residual graph b is read
    by conv2 alone, so conv1..conv2 cascade; when the add reads b too, they cascade only with the add."""
    graph = residual()
    assert evaluate_plan(graph, 0, 2, 1, ROLLING) is not None
    a, b, c, d = (Tensor(n, (1, 8, 4, 8)) for n in "abcd")
    # b is read by conv2 and by the add after the run 0..1.
    add = Part("add", (c, b), d, (binary_elementwise_propagator(c.shape, d.shape),
                                  binary_elementwise_propagator(b.shape, d.shape)), rows_cost)
    leaky = CascaderGraph((conv_part("conv1", a, b), conv_part("conv2", b, c), add), (a,), (d,), frozenset("bcd"))
    assert evaluate_plan(leaky, 0, 2, 1, ROLLING) is None
    assert evaluate_plan(leaky, 0, 3, 1, ROLLING) is not None


def test_memory_counts_the_tensors_passing_over_a_plan():
    """In the residual graph `a` is alive until the add: a plan of conv2 alone holds a, b and c whole
    (3 × 256 bytes); the whole block as one cascade holds a and d whole plus rings for b and c."""
    graph = residual()
    alone = evaluate_plan(graph, 1, 2, 8, ROLLING)
    assert alone.memory == 3 * 256
    block = evaluate_plan(graph, 0, 3, 1, ROLLING)
    rings = {c.tensor.name: c.rows for c in block.interior}
    assert block.memory == 2 * 256 + sum(rows * 32 for rows in rings.values())
    assert rings == {"b": 3, "c": 1}


def reused(reuses: str | None):
    """a → conv → b → conv → c; add(c, b) → d, whose output may take c's buffer (`reuses`); a is outside the
    scratch."""
    a, b, c, d = (Tensor(n, (1, 8, 4, 8)) for n in "abcd")
    add = Part("add", (c, b), d, (binary_elementwise_propagator(c.shape, d.shape),
                                  binary_elementwise_propagator(b.shape, d.shape)), rows_cost, reuses=reuses)
    parts = (conv_part("conv1", a, b), conv_part("conv2", b, c), add)
    return CascaderGraph(parts, (a,), (d,), frozenset("bcd"))


@pytest.mark.parametrize("rows", [8, 2])
def test_an_output_taking_its_inputs_buffer_counts_once(rows):
    """The add alone holds b, c and d (3 × 256 bytes), or b and d when d takes c's buffer, in any stripes; conv2
    and the add in one stripe hold b and c, then b and d; in stripes of one row c is a ring and d needs its own
    buffer."""
    for reuses, tensors in ((None, 3), ("c", 2)):
        assert evaluate_plan(reused(reuses), 2, 3, rows, ROLLING).memory == tensors * 256
    assert evaluate_plan(reused(None), 1, 3, 8, ROLLING).memory == 3 * 256
    assert evaluate_plan(reused("c"), 1, 3, 8, ROLLING).memory == 2 * 256
    striped = [evaluate_plan(reused(reuses), 1, 3, 1, ROLLING) for reuses in (None, "c")]
    assert striped[0].memory == striped[1].memory == 2 * 256 + 32 * striped[0].interior[0].rows


def test_a_part_that_cannot_be_striped_runs_whole_and_alone():
    graph = chain()
    unstripable = Part("reshape", graph.parts[1].inputs, graph.parts[1].output, graph.parts[1].propagators,
                       rows_cost, stripable=False)
    graph = CascaderGraph((graph.parts[0], unstripable), graph.inputs, graph.outputs, graph.scratch)
    assert evaluate_plan(graph, 0, 2, 12, ROLLING) is None
    assert evaluate_plan(graph, 1, 2, 6, ROLLING) is None
    assert [p.rows for p in candidate_plans(graph, 1, 2)] == [12]


def brute_force(graph: CascaderGraph, options: CascaderOptions) -> list[tuple[int, int]]:
    """(memory, cycles) of the Pareto frontier over every cut of the parts into runs and every plan per run."""
    n = len(graph.parts)
    points = []
    for cuts in itertools.product([False, True], repeat=n - 1):
        bounds = [0] + [i + 1 for i, cut in enumerate(cuts) if cut] + [n]
        runs = list(zip(bounds, bounds[1:]))
        choices = [candidate_plans(graph, a, b, options) for a, b in runs]
        for plans in itertools.product(*choices):
            points.append((max(p.memory for p in plans), sum(p.cycles for p in plans)))
    return sorted(set(pareto_frontier(points, lambda p: p)))


@pytest.mark.parametrize("make", [chain, residual])
def test_search_finds_the_same_frontier_as_brute_force(make):
    graph = make()
    options = CascaderOptions(max_proposals=1000)
    found = [(p.memory, p.cycles) for p in search(graph, options)]
    assert found == brute_force(graph, options)
    assert all(a[0] < b[0] and a[1] > b[1] for a, b in zip(found, found[1:]))


def test_search_is_deterministic_and_bounded():
    graph = residual(16)
    first = search(graph, CascaderOptions(max_proposals=3))
    assert len(first) == 3
    assert [p.key() for p in first] == [p.key() for p in search(graph, CascaderOptions(max_proposals=3))]
    full = search(graph, CascaderOptions(max_proposals=1000))
    assert (first[0].memory, first[-1].memory) == (full[0].memory, full[-1].memory)  # thinning keeps both ends


def test_switches_limit_the_plans():
    graph = residual()
    no_cascades = search(graph, CascaderOptions(enable_cascading=False))
    assert all(len(plan.parts) == 1 for p in no_cascades for plan in p.plans)
    no_stripes = search(graph, CascaderOptions(enable_striping=False))
    assert all(plan.stripes == 1 for p in no_stripes for plan in p.plans)
    assert all(plan.interior == () or plan.interior[0].rows == 8 for p in no_stripes for plan in p.plans)
    only_recompute = search(graph, CascaderOptions(buffer_modes=(RECOMPUTE,)))
    assert {plan.buffer_mode for p in only_recompute for plan in p.plans if plan.interior} == {RECOMPUTE}
    with pytest.raises(ValueError):
        CascaderOptions(max_plan_size=0)


def test_costs_are_asked_for_the_stripe_shapes_computed():
    """The cost callback sees each operation's output stripe and the input rows it reads (clipped)."""
    seen = []

    def record(out_shape, in_shapes):
        seen.append((out_shape, in_shapes))
        return math.prod(out_shape)

    a, b, c = Tensor("a", (1, 6, 2, 1)), Tensor("b", (1, 6, 2, 1)), Tensor("c", (1, 6, 2, 1))
    graph = CascaderGraph((conv_part("c1", a, b, cost=record), conv_part("c2", b, c, cost=record)),
                          (a,), (c,), frozenset("b"))
    evaluate_plan(graph, 0, 2, 3, ROLLING)
    assert seen == [
        ((1, 1, 2, 1), ((1, 2, 2, 1),)),  # warm-up: b row 0 from a rows [0,2); c has no rows before 0
        ((1, 3, 2, 1), ((1, 5, 2, 1),)),  # b rows [1,4) from a rows [0,5)
        ((1, 3, 2, 1), ((1, 4, 2, 1),)),  # c rows [0,3) from b rows [0,4)
        ((1, 2, 2, 1), ((1, 3, 2, 1),)),  # b rows [4,6) from a rows [3,6)
        ((1, 3, 2, 1), ((1, 4, 2, 1),)),  # c rows [3,6) from b rows [2,6)
    ]


def buffered_chain(transfer: int, buffered_cycles: int = 50):
    """`chain()` whose second convolution may buffer 100 bytes of weights: a `transfer` that overlaps the first
    convolution's stripe (10 cycles per row + 3), then `buffered_cycles` instead of 200 streaming."""
    a, b, c = (Tensor(n, (1, 12, 6, ch)) for n, ch in zip("abc", (4, 8, 4)))
    second = Part("conv2", (b,), c, (conv2d_propagator((3, 3), 8, (1, 1), padding=(1, 1)),), lambda o, i: 200,
                  buffer=lambda o, i: WeightBuffer(100, transfer, buffered_cycles))
    return CascaderGraph((conv_part("conv1", a, b), second), (a,), (c,), frozenset("b"))


@pytest.mark.parametrize("transfer, buffers", [(100, True), (123, True), (274, False)])
def test_weight_buffer_overlaps_the_operation_before_and_joins_the_memory(transfer, buffers):
    """Whole tensors: conv1 takes 123 cycles; conv2's transfer runs meanwhile, so buffering costs 50 + what the
    transfer outlasts conv1 by, against 200 streaming. A buffer lives during its operation and the one before: the
    plan's memory is b (12 rows of 48 bytes) plus the 112-byte aligned buffer; as a plan of its own, conv2 carries
    the transfer in full and `Proposal.then` takes back what conv1 hides, keeping the buffer in the joint peak."""
    graph = buffered_chain(transfer)
    plan = evaluate_plan(graph, 0, 2, 12, ROLLING, buffer_weights=True)
    assert plan.buffered == (((1, 0),) if buffers else ())
    assert plan.cycles == 123 + (50 + max(transfer - 123, 0) if buffers else 200)
    assert plan.memory == 12 * 48 + (112 if buffers else 0)
    assert evaluate_plan(graph, 0, 2, 12, ROLLING).cycles == 123 + 200
    first = evaluate_plan(graph, 0, 1, 12, ROLLING, buffer_weights=True)
    second = evaluate_plan(graph, 1, 2, 12, ROLLING, buffer_weights=True)
    assert (second.entry_buffer, second.entry_transfer) == ((112, transfer) if transfer < 150 else (0, 0))
    joined = Proposal((), 0, 0).then(first).then(second)
    if transfer < 150:  # alone, 50 + transfer beats 200
        assert joined.cycles == 123 + 50 + max(transfer - 123, 0)
        assert joined.memory == first.exit_memory + 112 == 12 * 48 + 112
    else:
        assert joined.cycles == 123 + 200 and joined.memory == 12 * 48


def test_a_parts_stripe_cost_is_asked_once_per_rows():
    """The search walks a part's stripes again in every plan that holds it: the cost callable is asked once per
    part and output rows, so evaluating the same plans again asks it nothing, and gives the same plans as parts
    that ask it every time."""
    asked = []

    def counted(out_shape, in_shapes):
        asked.append(out_shape)
        return rows_cost(out_shape, in_shapes)

    a, b, c = (Tensor(n, (1, 12, 6, ch)) for n, ch in zip("abc", (4, 8, 4)))
    graph = CascaderGraph((conv_part("conv1", a, b, cost=counted), conv_part("conv2", b, c, cost=counted)),
                          (a,), (c,), frozenset("b"))
    first = [evaluate_plan(graph, 0, 2, 2, mode) for mode in (ROLLING, RECOMPUTE)]
    count = len(asked)
    again = [evaluate_plan(graph, 0, 2, 2, mode) for mode in (ROLLING, RECOMPUTE)]
    # rolling: conv1's 7 and conv2's 6 operations; recompute: conv1's 6 windows [0,3), [1,5), ... (conv2's stripes
    # are rolling's)
    assert count == 7 + 6 + 6 and len(asked) == count
    expected = [evaluate_plan(chain(), 0, 2, 2, mode) for mode in (ROLLING, RECOMPUTE)]
    assert [(p.memory, p.cycles) for p in first + again] == [(p.memory, p.cycles) for p in expected + expected]


def test_a_plan_is_walked_once_for_both_weight_bufferings(monkeypatch):
    """Weight buffering changes which operations buffer, not the stripes a plan runs: where parts offer weight
    buffers, the search walks each stripe height and mode once for the plans with and without them, so it computes
    as many windows as where weight buffering is off, and the whole-tensor plan still buffers."""
    search_module = importlib.import_module("ethosu_tvm.cascader.search")
    calls = []
    windows = search_module._windows

    def counted(*args):
        calls.append(args[-2:])
        return windows(*args)

    monkeypatch.setattr(search_module, "_windows", counted)
    graph = buffered_chain(100)
    plans = candidate_plans(graph, 0, 2)
    walked = len(calls)
    calls.clear()
    streamed = candidate_plans(graph, 0, 2, CascaderOptions(weight_buffering=False))
    assert walked == len(calls) > 0
    whole = [p for p in plans if p.rows == 12]
    assert [p.buffered for p in whole] == [((1, 0),)] and [p.buffered for p in streamed if p.rows == 12] == [()]


def test_runs_ending_in_parts_of_other_heights_stripe_their_own_outputs():
    """The stripe config of a plan's output is made once per output shape and stripe height, and shared by the
    runs ending in that part: 3x3 convolutions of stride 2 halve the rows (24 → 12 → 6 → 3), so plans of 3 rows
    end in outputs of 12, 6 and 3 rows, each in stripes of its own: 4, 2 and 1."""
    a, b, c, d = (Tensor(n, (1, height, 4, 4)) for n, height in zip("abcd", (24, 12, 6, 3)))
    graph = CascaderGraph(tuple(conv_part(f"conv{i}", src, dst, stride=2) for i, (src, dst) in
                                enumerate(((a, b), (b, c), (c, d)))), (a,), (d,), frozenset("bc"))
    for first, stop, stripes in ((0, 1, 4), (0, 2, 2), (1, 2, 2), (0, 3, 1), (1, 3, 1), (2, 3, 1)):
        for mode in (ROLLING, RECOMPUTE):
            plan = evaluate_plan(graph, first, stop, 3, mode)
            assert plan.output_config.extent == graph.parts[stop - 1].output.shape
            assert (plan.rows, plan.stripes) == (3, stripes)
