"""Code generation from scheduled TIR: striped cascades, single-operator stripes, rolling buffers.

Each schedule becomes one NPU operation per stripe and operator; the artifacts run in the simulator and must equal
LiteRT exactly.
"""
import numpy as np
import pytest
from ethosu.vela import api as vapi

from ethosu_tvm.codegen import CodegenError, compile_npu_graph
from ethosu_tvm.codegen.memory import ConstantPool, plan
from ethosu_tvm.codegen.operations import OperationBuilder
from ethosu_tvm.codegen.schedule import (
    RING_ANNOTATION,
    ROLLING_ANNOTATION,
    STRIPE_ANNOTATION,
    compute_primitive_at,
    primitive_blocks,
)
from ethosu_tvm.codegen.tir_to_npu import translate
from ethosu_tvm.frontend.importer import from_tflite
from ethosu_tvm.legalize import legalize
from ethosu_tvm.partition import partition_for_ethosu
from ethosu_tvm.sim import Simulator
from ethosu_tvm.target import EthosuTarget
from ethosu_tvm.testing import models
from ethosu_tvm.testing.reference import random_inputs, run_litert

from sim_support import ACCELERATORS, run_artifact

BLOCK_OPERATIONS = {"NPU_OP_CONV", "NPU_OP_DEPTHWISE", "NPU_OP_POOL", "NPU_OP_ELEMENTWISE"}


def _graph(model: bytes):
    mod, _ = partition_for_ethosu(from_tflite(model))
    (graph,) = legalize(mod)
    return graph


def _conv_chain(in_shape, padding: str) -> bytes:
    """Two chained 3x3 convolutions."""
    net = models.Net(seed=3)
    x = net.input(in_shape)
    y = net.conv2d(x, out_channels=8, padding=padding, activation="RELU")
    net.output(net.conv2d(y, out_channels=4, padding=padding))
    return net.build()


def _cascade(graph, rows: int, rolling: bool = False):
    """Stripes of `rows` output rows of the graph's last operator, with every producer computed per stripe; with
    `rolling`, the first operator's output lives in a rolling buffer."""
    last = len(graph.ops) - 1

    def schedule(sch):
        outer, _ = sch.split(sch.get_loops(primitive_blocks(sch, last)[-1])[1], [None, rows])
        for index in reversed(range(len(graph.ops))):
            compute_primitive_at(sch, index, outer)
        if rolling:
            sch.rolling_buffer(primitive_blocks(sch, 0)[-1], 0)

    return schedule


def _npu_operations(graph, accelerator: str, schedule):
    """The stripes of a schedule and the Vela operation computing each."""
    stripes = translate(graph, schedule)
    placements, *_ = plan(graph, stripes)
    builder = OperationBuilder(EthosuTarget(accelerator).npu_accelerator, placements, ConstantPool())
    return stripes, [builder.build(graph.ops[stripe.op], stripe)[-1] for stripe in stripes]


def _block_operations(artifact) -> int:
    commands = Simulator(artifact.accelerator).commands(artifact.driver_payload)
    return sum(command.opcode.name in BLOCK_OPERATIONS for command in commands)


def _assert_exact(model: bytes, artifact, seeds=(0, 1)):
    for seed in seeds:
        inputs = random_inputs(model, seed)
        for got, ref in zip(run_artifact(artifact, inputs), run_litert(model, inputs)):
            assert np.array_equal(got.reshape(ref.shape), ref), f"seed {seed}"


@pytest.mark.parametrize("accelerator", ACCELERATORS)
def test_cascaded_resnet_block_in_row_stripes(accelerator):
    """conv3x3 → conv3x3 → add, all per stripe of 4 rows: 4 stripes × 3 operators, each convolution's weights
    encoded once for all its stripes."""
    model = models.make_graph("resnet_block", seed=2)
    graph = _graph(model)
    schedule = _cascade(graph, rows=4)
    artifact = compile_npu_graph(graph, EthosuTarget(accelerator), schedule)
    assert len(artifact.ops) == _block_operations(artifact) == 4 * 3
    assert [s.op for s in artifact.ops[:3]] == ["ethosu.conv2d", "ethosu.conv2d", "ethosu.binary_elementwise"]
    _assert_exact(model, artifact)
    stripes, operations = _npu_operations(graph, accelerator, schedule)
    for index in (0, 1):
        weights = {(o.weights[0].address, o.biases[0].address) for s, o in zip(stripes, operations) if s.op == index}
        assert len(weights) == 1


def test_cascade_with_a_short_last_stripe():
    """10 rows in stripes of 4: the producer's stripes overlap by the kernel's halo; padding only at the borders."""
    model = _conv_chain((1, 10, 6, 4), "SAME")
    graph = _graph(model)
    schedule = _cascade(graph, rows=4)
    stripes = translate(graph, schedule)
    assert [(s.op, s.ofm.box[1].start, s.ofm.box[1].stop) for s in stripes] == [
        (0, 0, 5), (1, 0, 4), (0, 3, 9), (1, 4, 8), (0, 7, 10), (1, 8, 10)]
    assert [(s.ifms[0].padding.top, s.ifms[0].padding.bottom) for s in stripes] == [
        (1, 0), (1, 0), (0, 0), (0, 0), (0, 1), (0, 1)]
    artifact = compile_npu_graph(graph, EthosuTarget("ethos-u55-64"), schedule)
    assert _block_operations(artifact) == 3 * 2
    _assert_exact(model, artifact)


def _single_op_stripes(sch):
    """A 9x9x8 OFM in 3x3x4 stripes: split rows, columns and channels, stripe loops outermost."""
    (output,) = [b for b in primitive_blocks(sch, 0) if sch.get(b).name_hint.endswith("conv2d")]
    _, y, x, c = sch.get_loops(output)
    y0, y1 = sch.split(y, [None, 3])
    x0, x1 = sch.split(x, [None, 3])
    c0, c1 = sch.split(c, [None, 4])
    sch.reorder(y0, x0, c0, y1, x1, c1)
    for loop in (y0, x0, c0):
        sch.annotate(loop, STRIPE_ANNOTATION, 1)


def test_receptive_field_of_a_conv_stripe():
    """The cascader RFC's example: a (1,3,3,4) output stripe of a 3x3 conv reads a (1,5,5,8) input stripe; at the
    image's corner two of those rows and columns are padding instead."""
    model = models.make("conv2d", seed=4, in_shape=(1, 9, 9, 8), out_channels=8)
    graph = _graph(model)
    stripes, operations = _npu_operations(graph, "ethos-u55-128", _single_op_stripes)
    assert len(operations) == 3 * 3 * 2
    assert {o.ofm.shape for o in operations} == {vapi.NpuShape3D(3, 3, 4)}
    corner, centre = operations[0], operations[(1 * 3 + 1) * 2]
    assert centre.ifm.shape == vapi.NpuShape3D(5, 5, 8)
    assert (centre.padding.top, centre.padding.left, centre.padding.bottom, centre.padding.right) == (0, 0, 0, 0)
    assert corner.ifm.shape == vapi.NpuShape3D(4, 4, 8)
    assert (corner.padding.top, corner.padding.left, corner.padding.bottom, corner.padding.right) == (1, 1, 0, 0)
    # The centre stripe starts at IFM row 2, column 2 of the 9x9x8 input; its OFM at row 3, column 3, channel 0.
    assert centre.ifm.tiles.addresses[0] == (2 * 9 + 2) * 8
    assert centre.ofm.tiles.addresses[0] == (3 * 9 + 3) * 8 and centre.ofm.strides.width == 8
    artifact = compile_npu_graph(graph, EthosuTarget("ethos-u55-128"), _single_op_stripes)
    _assert_exact(model, artifact)


def test_rolling_buffer_between_cascaded_convolutions():
    """The intermediate lives in a 4-row ring: stripes that wrap around it use two NPU tiles."""
    model = _conv_chain((1, 12, 6, 4), "VALID")
    graph = _graph(model)
    schedule = _cascade(graph, rows=2, rolling=True)
    stripes, operations = _npu_operations(graph, "ethos-u55-256", schedule)
    assert [s.op for s in stripes] == [0, 1] * 4
    assert stripes[0].ofm.layout == (1, 4, 4, 8) and stripes[0].ofm.rings == (False, True, False, False)
    # The producer computes 4 rows first, then only the 2 new ones per stripe.
    assert [s.ofm.box[1].extent for s in stripes if s.op == 0] == [4, 2, 2, 2]
    wrapped = operations[3]  # the second stripe of the consumer reads rows 2..5: ring rows 2, 3, then 0, 1
    assert stripes[3].ifms[0].box[1].start == 2
    assert wrapped.ifm.tiles.height_0 == 2 and wrapped.ifm.tiles.addresses[2] == wrapped.ifm.tiles.addresses[0] - 64
    artifact = compile_npu_graph(graph, EthosuTarget("ethos-u55-256"), schedule)
    assert artifact.scratch_size == 4 * 4 * 8
    _assert_exact(model, artifact)


def test_a_stripe_that_is_not_a_box_is_refused():
    model = models.make("conv2d", seed=4, in_shape=(1, 9, 9, 8), out_channels=8)

    def fused_rows_and_columns(sch):
        (output,) = [b for b in primitive_blocks(sch, 0) if sch.get(b).name_hint.endswith("conv2d")]
        _, y, x, _ = sch.get_loops(output)
        outer, _ = sch.split(sch.fuse(y, x), [None, 10])
        sch.annotate(outer, STRIPE_ANNOTATION, 1)

    with pytest.raises(CodegenError, match=r"^ethosu\.conv2d \(conv2d:lv\): an instance of block op0_conv2d is "
                                           r"not a dense box"):
        compile_npu_graph(_graph(model), EthosuTarget("ethos-u55-128"), fused_rows_and_columns)


def _annotated_cascade(graph, rows: int, ring: int, rolling: bool):
    """Like `_cascade`, with every intermediate kept in a `ring`-row ring by annotation (rolling or recomputed)."""
    cascade = _cascade(graph, rows)

    def schedule(sch):
        cascade(sch)
        for index in range(len(graph.ops) - 1):
            block = primitive_blocks(sch, index)[-1]
            sch.annotate(block, RING_ANNOTATION, ring)
            if rolling:
                sch.annotate(block, ROLLING_ANNOTATION, 1)

    return schedule


@pytest.mark.parametrize("rolling", [False, True])
def test_ring_annotation_with_same_padding(rolling):
    """SAME padding clips the producer's stripes at the border, which Schedule.rolling_buffer refuses; the ring
    annotations keep the 12-row intermediate in 4 rows. Rolling computes each of its rows once (12 in all),
    recomputing re-does the row each stripe shares with the previous one (22 rows)."""
    model = _conv_chain((1, 12, 6, 4), "SAME")
    graph = _graph(model)
    schedule = _annotated_cascade(graph, rows=2, ring=4, rolling=rolling)
    stripes = translate(graph, schedule)
    producer_rows = [(s.ofm.box[1].start, s.ofm.box[1].stop) for s in stripes if s.op == 0]
    if rolling:
        assert producer_rows == [(0, 3), (3, 5), (5, 7), (7, 9), (9, 11), (11, 12)]
    else:
        assert producer_rows == [(0, 3), (1, 5), (3, 7), (5, 9), (7, 11), (9, 12)]
    assert {s.ofm.layout for s in stripes if s.op == 0} == {(1, 4, 6, 8)}
    artifact = compile_npu_graph(graph, EthosuTarget("ethos-u55-128"), schedule)
    assert artifact.scratch_size == 4 * 6 * 8
    _assert_exact(model, artifact)


def test_a_ring_too_small_for_a_stripe_is_refused():
    """Stripes of 2 rows under a 3x3 kernel need 4 rows of the intermediate at once; a 3-row ring cannot hold them."""
    graph = _graph(_conv_chain((1, 12, 6, 4), "SAME"))
    with pytest.raises(CodegenError, match=r"reads rows \[1, 5\) of .*, but its 3-row ring holds rows \[2, 5\)"):
        translate(graph, _annotated_cascade(graph, rows=2, ring=3, rolling=True))
