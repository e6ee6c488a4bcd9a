"""Weight DMAs issued more than one operation ahead (`codegen.prefetch`): the timeline arithmetic of the choice, the
orders it refuses, and ResNet-8, whose 18 KB transfer now runs under the residual block before it, bit-exact."""
import itertools

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ethosu_tvm.arch import ACCELERATORS
from ethosu_tvm.cascader.buffering import Choice
from ethosu_tvm.cascader.graph import WeightBuffer
from ethosu_tvm.codegen import artifact as artifact_module
from ethosu_tvm.codegen import compile_npu_graph
from ethosu_tvm.codegen import prefetch as prefetch_module
from ethosu_tvm.codegen.prefetch import Fixed, State, elapsed, prefetch
from ethosu_tvm.target import EthosuTarget
from ethosu_tvm.testing import models, shared_model

from sim_support import exact_build
from test_weight_buffering import assert_exact, graph_of, stream_ops
from test_weight_buffering import elapsed as simulated

COMPUTE = Fixed(((10_000, 0),))  # an operation that leaves the flash alone
LONG = Choice(20_000, 0, WeightBuffer(15_000, 15_000, 5_000))  # streams 20,000 cycles, or DMAs 15,000 bytes first
SHORT = Choice(3_000, 0, WeightBuffer(1_000, 1_000, 1_000))


def test_a_long_transfer_is_issued_ahead():
    """Under the operation just before, the 15,000-cycle DMA starts when the one before that ends (10,000) and the
    convolution waits for it (30,000 in all); issued one operation earlier it starts at 0 (25,000)."""
    steps = [COMPUTE, COMPUTE, LONG]
    plain = {2: State(True)}
    assert elapsed(steps, plain) == 30_000
    chosen = prefetch(steps, plain, live=(0, 0, 0), limit=15_000)
    assert chosen == {2: State(True, lead=2)} and elapsed(steps, chosen) == 25_000


def test_not_ahead_where_the_buffer_does_not_fit():
    """Live a step longer, the buffer would meet 1,000 other bytes at the first step: over the limit."""
    steps = [COMPUTE, COMPUTE, LONG]
    plain = {2: State(True)}
    assert prefetch(steps, plain, live=(1_000, 0, 0), limit=15_000) == plain
    assert prefetch(steps, plain, live=(1_000, 0, 0), limit=16_000) == {2: State(True, lead=2)}


def test_a_streaming_convolution_may_buffer_ahead():
    """Streaming (20,000 cycles) beat buffering under the operation before (15,000 + 5,000 after a 10,000 wait),
    not buffering two operations ahead."""
    steps = [COMPUTE, COMPUTE, LONG]
    plain = {2: State(False)}
    assert elapsed(steps, plain) == 40_000
    assert prefetch(steps, plain, live=(0, 0, 0), limit=15_000) == {2: State(True, lead=2)}


def test_the_nearest_convolution_waits_for_every_transfer_before_its_own():
    """Both DMAs issued before the first convolution, the farther one's first: the first convolution's wait (for
    the last DMA issued) covers both, 16,000 cycles in; the second needs no wait of its own."""
    steps = [COMPUTE, SHORT, LONG]
    assert elapsed(steps, {1: State(True), 2: State(True, lead=2)}) == 16_000 + 1_000 + 5_000


def test_an_order_that_could_run_a_convolution_before_its_weights_is_refused():
    """The first convolution's DMA issued first, the second's after it: the last DMA before the first convolution
    is not its own, so the stream would not make it wait (one outstanding DMA on the U55)."""
    steps = [COMPUTE, COMPUTE, SHORT, LONG]
    assert elapsed(steps, {2: State(True, lead=3), 3: State(True, lead=3)}) is None
    assert elapsed(steps, {2: State(True, lead=2), 3: State(True, lead=3)}) is not None


@pytest.mark.parametrize("accelerator, cycles", [("ethos-u55-128", (208_649, 191_756)),
                                                 ("ethos-u55-256", (135_988, 124_078))])
def test_resnet8_issues_its_long_transfer_under_the_residual_block(accelerator, cycles, monkeypatch):
    """The 8x8x64 stride-2 convolution's 18,032-byte transfer goes before the residual ADD before it, in the same
    scratch; the simulator's timeline agrees that it pays, and the build is bit-exact (no convolution split along
    its depth: `test_depth_split` has those)."""
    model = shared_model("mlperf_tiny_ic_resnet8_int8.tflite")
    graph = graph_of(model, accelerator)
    target = EthosuTarget(accelerator)
    monkeypatch.setattr(artifact_module, "part_depth", lambda depth: None)
    ahead = compile_npu_graph(graph, target)
    with monkeypatch.context() as patch:
        patch.setattr(artifact_module, "prefetch", lambda steps, states, *_: states)
        plain = compile_npu_graph(graph, target)
    assert ahead.scratch_size == plain.scratch_size == 51_840
    ops = stream_ops(ahead)
    transfer = next(i for i, op in enumerate(ops) if op.kind == "DMA" and op.bytes_read == {0: 18_032})
    add = next(i for i, op in enumerate(ops) if op.mode == "ADD" and op.ofm_shape == (16, 16, 32))
    assert transfer < add
    assert (simulated(plain), simulated(ahead)) == cycles
    assert_exact(ahead, model)




@settings(max_examples=6, deadline=None)
@given(graph=st.sampled_from(sorted(models.GRAPHS)), seed=st.integers(0, 100),
       accelerator=st.sampled_from([name for name in ACCELERATORS if name.startswith("ethos-u55")]))
def test_factory_graphs_never_slower_nor_larger_and_exact(graph, seed, accelerator):
    """Whatever the graph, DMAs issued ahead keep the workspace and never cost cycles by the simulator's timeline;
    both builds equal LiteRT."""
    model = models.make_graph(graph, seed)
    ahead = exact_build(model, accelerator)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(artifact_module, "prefetch", lambda steps, states, *_: states)
        patch.setattr(artifact_module, "joint", lambda steps, states, *_: (states, None))
        plain = exact_build(model, accelerator)
    assert ahead[0] <= plain[0] and ahead[1] == plain[1]


_cycles = st.integers(0, 30_000)
_fixed = st.builds(Fixed, st.lists(st.tuples(_cycles, _cycles), min_size=1, max_size=2).map(tuple),
                   st.lists(st.tuples(_cycles, st.booleans()), max_size=2).map(tuple))
_choice = st.builds(Choice, _cycles, _cycles, st.builds(WeightBuffer, _cycles, _cycles, _cycles),
                    st.tuples(_cycles, _cycles))


@st.composite
def _changed_stream(draw):
    """Steps, each convolution's state, and another state for one of them."""
    steps = draw(st.lists(st.one_of(_fixed, _choice), min_size=1, max_size=12))
    convolutions = [i for i, step in enumerate(steps) if isinstance(step, Choice)]
    if not convolutions:
        steps, convolutions = steps + [draw(_choice)], [len(steps)]

    def state(index):
        return draw(st.builds(State, st.booleans(), st.booleans(), st.integers(1, index + 1)))

    states = {index: state(index) for index in convolutions}
    index = draw(st.sampled_from(convolutions))
    return steps, states, index, state(index)


@given(_changed_stream())
def test_a_walk_resumed_where_one_state_changes_times_the_whole_stream(stream):
    """`prefetch` times a convolution's other states from what the walk of the current states (never refused)
    left at the first step they change (`_first_change`): the same cycles, or the same refusal, as walking the
    whole stream."""
    steps, states, index, other = stream
    assume(elapsed(steps, states) is not None)
    saved = prefetch_module._prefixes(steps, states)
    since = prefetch_module._first_change(index, states[index], other)
    changed = {**states, index: other}
    assert elapsed(steps, changed, saved[since]) == elapsed(steps, changed)


@given(_changed_stream())
def test_a_walk_given_up_against_its_rival_could_not_have_won(stream):
    """`prefetch` gives up on a changed state's walk as soon as, past that convolution, it is no sooner than the
    current states' walk (`Timeline.no_sooner_than`): the whole stream then takes as many cycles or more (or is
    refused); a walk not given up times it exactly."""
    steps, states, index, other = stream
    assume(elapsed(steps, states) is not None)
    saved = prefetch_module._prefixes(steps, states)
    changed = {**states, index: other}
    whole = elapsed(steps, changed)
    given_up = elapsed(steps, changed, saved[prefetch_module._first_change(index, states[index], other)], saved,
                       index + 1)
    if given_up is None:
        assert whole is None or whole >= elapsed(steps, states)
    else:
        assert given_up == whole


@given(st.lists(st.one_of(_fixed, _choice), max_size=6), st.lists(_choice, min_size=2, max_size=3),
       st.lists(st.one_of(_fixed, _choice), max_size=3), st.integers(0, 60_000))
@settings(max_examples=60)
def test_joint_states_are_the_first_best_combination(before, group, after, limit):
    """`joint`, which gives up on combinations no sooner than the best one after the group, takes the first
    combination (in `itertools.product` order) with the fewest cycles among those within `limit`, as trying
    every one does."""
    steps = before + group + after
    states = {i: State(False) for i, step in enumerate(steps) if isinstance(step, Choice)}
    indices = range(len(before), len(before) + len(group))
    live = [0] * len(steps)
    best_states, best = states, elapsed(steps, states)
    for combination in itertools.product(*([State(False)] + [State(True, lead=lead) for lead in
                                                             range(1, min(i + 1, prefetch_module.GROUP_LEAD) + 1)]
                                           for i in indices)):
        trial = {**states, **dict(zip(indices, combination))}
        cycles = elapsed(steps, trial)
        if prefetch_module.fullest(steps, trial, live) <= limit and cycles is not None and \
                (best is None or cycles < best):
            best_states, best = trial, cycles
    assert prefetch_module.joint(steps, states, live, limit, indices) == (best_states, best)
