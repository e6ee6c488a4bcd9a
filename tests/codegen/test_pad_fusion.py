"""PADs folded into the convolutions that read them (legalize.pad_fusion): the convolution takes the summed padding,
the PAD's copy goes, and the outputs stay equal to LiteRT's, with and without the cascader; PADs the NPU's
padding cannot stand for stay copies."""
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import ethosu_tvm
from ethosu_tvm.codegen import compile_npu_graph
from ethosu_tvm.codegen.cascade import cascade_proposals, cascade_schedule
from ethosu_tvm.layer_report import layer_rows
from ethosu_tvm.legalize.ops import Conv2D, DepthwiseConv2D, Pad, Padding
from ethosu_tvm.target import EthosuTarget
from ethosu_tvm.testing import models
from ethosu_tvm.testing.reference import random_inputs, run_litert

from sim_support import ACCELERATORS, assert_model_exact, compile_model, run_artifact
from test_tir_schedules import _graph


def _pad_operations(model: bytes, accelerator: str) -> list[str]:
    """The PADs left among the NPU operations (each copy names the PAD it comes from)."""
    _, artifacts = compile_model(model, accelerator)
    return sorted({op.source for artifact in artifacts for op in artifact.ops if op.source.startswith("pad:")})


def test_pads_become_the_convolutions_padding():
    """PAD (top 2, left 0, bottom 1, right 2) before a VALID 5x5 conv, PAD (top 1, left 1) before a stride-2 SAME
    depthwise conv of an even IFM (its own padding: bottom 1, right 1): each reads the PAD's IFM."""
    graph = _graph(models.make_graph("padded_convolutions"))
    conv, depthwise = graph.ops
    assert type(conv) is Conv2D and type(depthwise) is DepthwiseConv2D
    assert conv.ifm.tensor == graph.inputs[0] and conv.padding == Padding(2, 0, 1, 2)
    assert depthwise.ifm.tensor == conv.ofm.tensor and depthwise.padding == Padding(1, 1, 1, 1)


def test_unfoldable_pads_stay():
    """A pad beyond half the kernel, a PAD two convolutions read, a PAD before a pool: all three stay PADs."""
    graph = _graph(models.make_graph("unfolded_pads"))
    assert sum(isinstance(op, Pad) for op in graph.ops) == 3
    assert all(op.padding == Padding() for op in graph.ops if isinstance(op, Conv2D))


@pytest.mark.parametrize("accelerator", ["ethos-u55-64", "ethos-u55-128"])
def test_a_pad_of_another_value_stays(accelerator):
    """PADV2 of a value other than the IFM zero point (the NPU pads with the zero point) before a conv whose
    padding it would fit: it stays a copy, and the result equals LiteRT's (Vela leaves PADV2 to the CPU)."""
    net = models.Net(seed=5)
    x = net.padv2(net.input((1, 6, 7, 3)), paddings=((0, 0), (1, 1), (1, 1), (0, 0)), value=20)
    net.output(net.conv2d(x, out_channels=4, padding="VALID"))
    model = net.build()
    assert_model_exact(model, accelerator)
    assert len(_pad_operations(model, accelerator)) == 1


@pytest.mark.parametrize("accelerator", ACCELERATORS)
@pytest.mark.parametrize("name,pads", [("padded_convolutions", 0), ("unfolded_pads", 3)])
def test_pad_graphs_equal_litert(name, pads, accelerator):
    model = models.make_graph(name, seed=2)
    assert_model_exact(model, accelerator)
    assert len(_pad_operations(model, accelerator)) == pads


@pytest.mark.parametrize("accelerator", ["ethos-u55-32", "ethos-u55-256"])
def test_int16_pads_fold(accelerator):
    """16x8 convolutions (IFM zero point 0) take their PADs too."""
    net = models.Net(seed=1)
    x = net.pad(net.input((1, 8, 9, 6), dtype="int16"), paddings=((0, 0), (1, 1), (1, 0), (0, 0)))
    x = net.depthwise_conv2d(x, padding="VALID", stride=(2, 2))
    x = net.pad(x, paddings=((0, 0), (0, 1), (1, 1), (0, 0)))
    net.output(net.conv2d(x, out_channels=5, padding="VALID"))
    model = net.build()
    assert [op.padding for op in _graph(model).ops] == [Padding(1, 1, 1, 0), Padding(0, 1, 1, 1)]
    assert_model_exact(model, accelerator)


@pytest.mark.parametrize("accelerator", ["ethos-u55-32", "ethos-u55-256"])
def test_every_cascade_of_folded_pads_equals_litert(accelerator):
    """The cascader's stripes of a convolution that reads the PAD's IFM with offsets at its borders."""
    model = models.make_graph("padded_convolutions", seed=3)
    graph = _graph(model)
    target = EthosuTarget(accelerator)
    proposals = cascade_proposals(graph, target)
    assert any(len(plan.parts) == 2 for p in proposals for plan in p.cascades)
    inputs = random_inputs(model, 1)
    (expected,) = run_litert(model, inputs)
    for proposal in proposals:
        (got,) = run_artifact(compile_npu_graph(graph, target, cascade_schedule(proposal)), inputs)
        np.testing.assert_array_equal(got.reshape(expected.shape), expected)


def _padded(op, h, w, c, pads, kernel, stride, dilation, padding, in_zp, seed) -> bytes:
    net = models.Net(seed=seed)
    x = net.input((1, h, w, c), zero_point=in_zp)
    x = net.pad(x, paddings=((0, 0), pads[:2], pads[2:], (0, 0)))
    extra = dict(out_channels=5) if op == "conv2d" else {}
    net.output(getattr(net, op)(x, kernel=kernel, stride=stride, dilation=dilation, padding=padding,
                                     **extra))
    return net.build()


# Pads up to 2 and kernels from 3 fold in about one case of five (each side within half the dilated kernel).
@settings(max_examples=30, deadline=None)
@given(op=st.sampled_from(["conv2d", "depthwise_conv2d"]), h=st.integers(1, 9), w=st.integers(1, 9),
       c=st.integers(1, 6), pads=st.tuples(*[st.integers(0, 2)] * 4),
       kernel=st.tuples(st.integers(3, 6), st.integers(3, 6)), stride=st.tuples(st.integers(1, 2), st.integers(1, 2)),
       dilation=st.tuples(st.integers(1, 2), st.integers(1, 2)), padding=st.sampled_from(["SAME", "VALID"]),
       in_zp=st.integers(-128, 127), accelerator=st.sampled_from(ACCELERATORS), seed=st.integers(0, 1000))
def test_padded_convolution_sweep(op, h, w, c, pads, kernel, stride, dilation, padding, in_zp, accelerator, seed):
    """Folded or not, a PAD and the convolution after it equal LiteRT."""
    extent = [d * (k - 1) + 1 for k, d in zip(kernel, dilation)]
    if padding == "VALID":
        assume(h + pads[0] + pads[1] >= extent[0] and w + pads[2] + pads[3] >= extent[1])
    assert_model_exact(_padded(op, h, w, c, pads, kernel, stride, dilation, padding, in_zp, seed), accelerator)


def test_the_layer_report_says_where_a_folded_pad_went():
    model = models.make_graph("padded_convolutions")
    module = ethosu_tvm.build(ethosu_tvm.from_tflite(model), target="ethos-u -accelerator-config=ethos-u55-128,c")
    rows = layer_rows(module)
    assert [row.operator for row in rows] == ["PAD", "CONV_2D", "PAD", "DEPTHWISE_CONV_2D"]
    assert [row.became for row in rows[::2]] == ["no operation: the padding of the convolution that reads it"] * 2
    assert all(row.cycles > 0 for row in rows[1::2])
