"""An NPU subgraph's TE graph as a scheduled TIR PrimFunc: the form code generation translates.

Every block of primitive ``i`` carries the annotation ``OP_ANNOTATION = i`` (set by the TE definitions), so a schedule
may split, reorder and move blocks freely: code generation still knows which primitive each block computes. The
default schedule is none: one NPU operation per primitive. A cascading schedule (the cascader's, or a test's) splits
the last operator's loops and moves its producers under the outer loop with :func:`compute_primitive_at`: a loop
holding several operators is a stripe loop. To stripe a single operator, annotate its outer loops with
``STRIPE_ANNOTATION`` (``sch.annotate(loop, STRIPE_ANNOTATION, 1)``).

Inside a cascade an intermediate tensor need not exist whole. Annotating the output block of its producer with
``RING_ANNOTATION = R`` keeps it in a ring of R rows (row y at ring row y mod R); adding ``ROLLING_ANNOTATION`` makes
every stripe compute only the rows that earlier stripes have not (a rolling buffer), instead of recomputing the
rows it shares with the previous stripe. ``Schedule.rolling_buffer`` expresses the same in TIR for chains whose
producer regions are not clipped at the tensor's border; SAME padding clips them, and TVM then refuses the
primitive, hence the annotations (code generation checks that every read finds its rows still in the ring).
"""
from __future__ import annotations

from collections.abc import Callable

from tvm import s_tir, tirx

from ..te import OP_ANNOTATION, TeGraph
from .vela_calls import CodegenError

ScheduleFn = Callable[[s_tir.Schedule], None]

# Loop annotation: each iteration of this loop is a separate NPU operation (stripe) of the operator inside it.
STRIPE_ANNOTATION = "ethosu.stripe"
# Output-block annotations of a primitive whose OFM lives in a ring of that many rows / is computed rolling.
RING_ANNOTATION = "ethosu.ring_rows"
ROLLING_ANNOTATION = "ethosu.rolling"
# Stripe-loop annotation: iterations to run before the loop's start (warm-up stripes of a rolling cascade).
WARMUP_ANNOTATION = "ethosu.warmup"


def lower(graph: TeGraph, schedule: ScheduleFn | None = None) -> tirx.PrimFunc:
    """The TE graph's PrimFunc with `schedule` applied to it (without one, as TE made it: a Schedule costs more to
    build than most NPU subgraphs take to translate)."""
    if schedule is None:
        return graph.prim_func()
    sch = s_tir.Schedule(graph.prim_func())
    schedule(sch)
    return sch.mod["main"]


def execution_order(graph: TeGraph) -> tuple[int, ...]:
    """The primitives' indices in the order the unscheduled PrimFunc runs them: TE orders the blocks by its own
    walk of the graph, which need not be the NpuGraph's list (a residual branch's 1x1 convolution may come first)."""
    order: dict[int, None] = {}
    for block in annotated_blocks(graph.prim_func().body):
        order.setdefault(int(block.annotations[OP_ANNOTATION]), None)
    return tuple(order)


def annotated_blocks(stmt) -> list[s_tir.SBlock]:
    """The blocks that carry an OP_ANNOTATION under `stmt`, in program order. Schedules of NPU subgraphs only make
    loops, sequences and blocks; anything else is refused rather than overlooked."""
    found: list[s_tir.SBlock] = []

    def visit(node):
        if isinstance(node, s_tir.SBlockRealize):
            if OP_ANNOTATION in node.block.annotations:
                found.append(node.block)
            visit(node.block.body)
        elif isinstance(node, tirx.SeqStmt):
            for child in node.seq:
                visit(child)
        elif isinstance(node, tirx.For):
            visit(node.body)
        elif not isinstance(node, tirx.BufferStore):
            raise CodegenError(f"unexpected {type(node).__name__} in the TIR of an NPU subgraph")

    visit(stmt)
    return found


def primitive_blocks(sch: s_tir.Schedule, index: int) -> list[s_tir.schedule.SBlockRV]:
    """The blocks of primitive `index`, in program order (producers first)."""
    blocks = annotated_blocks(sch.mod["main"].body)
    return [sch.get_sblock(b.name_hint) for b in blocks if int(b.annotations[OP_ANNOTATION]) == index]


def compute_primitive_at(sch: s_tir.Schedule, index: int, loop: s_tir.schedule.LoopRV) -> None:
    """Move the blocks of primitive `index` that are not under `loop` yet there, each computing what its consumers
    under `loop` need (so the consumers must be there already)."""
    target = sch.get(loop)
    for block in reversed(primitive_blocks(sch, index)):
        if not any(sch.get(outer).same_as(target) for outer in sch.get_loops(block)):
            sch.compute_at(block, loop)
