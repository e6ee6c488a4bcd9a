"""Every proposal on the cascader's frontier for factory graphs, compiled and run in the simulator: the outputs
equal those of the uncascaded command stream, whose bit-exactness with LiteRT the end-to-end tests check."""
import numpy as np
import pytest

from ethosu_tvm.codegen import compile_npu_graph
from ethosu_tvm.codegen.cascade import cascade_proposals, cascade_schedule
from ethosu_tvm.target import EthosuTarget
from ethosu_tvm.testing import models
from ethosu_tvm.testing.reference import random_inputs, run_litert

from sim_support import run_artifact
from test_tir_schedules import _graph


@pytest.mark.parametrize("name", ["resnet_block", "inverted_residual", "ds_cnn"])
def test_every_proposal_computes_the_same_outputs(name):
    model = models.make_graph(name, seed=2)
    graph = _graph(model)
    target = EthosuTarget("ethos-u55-64")
    proposals = cascade_proposals(graph, target)
    plans = [plan for p in proposals for plan in p.cascades]
    assert len(proposals) >= 3 and any(plan.interior for plan in plans)
    inputs = random_inputs(model, 1)
    expected = run_artifact(compile_npu_graph(graph, target), inputs)
    for proposal in proposals:
        artifact = compile_npu_graph(graph, target, cascade_schedule(proposal))
        for got, want in zip(run_artifact(artifact, inputs), expected):
            np.testing.assert_array_equal(got, want)


_ROWS = ((0, 0), (1, 1), (0, 0), (0, 0))


@pytest.mark.parametrize("producer", ["conv2d", "softmax"])
def test_a_cascade_ending_in_a_pad_of_rows(producer):
    """A PAD of rows last in a cascade: its one-row stripes over the padding rows compute none of the producer,
    whose predicate is then constant false (once a code generation error); every proposal equals LiteRT."""
    net = models.Net(seed=4)
    x = net.input((1, 33, 8, 16))
    x = net.conv2d(x, out_channels=16) if producer == "conv2d" else net.softmax(x)
    net.output(net.pad(x, paddings=_ROWS))
    model = net.build()
    graph = _graph(model)
    target = EthosuTarget("ethos-u55-32")
    proposals = cascade_proposals(graph, target)
    assert any(plan.output_config.shape[1] == 1 and len(plan.parts) == 2 for p in proposals for plan in p.cascades)
    inputs = random_inputs(model, 1)
    (expected,) = run_litert(model, inputs)
    for proposal in proposals:
        (got,) = run_artifact(compile_npu_graph(graph, target, cascade_schedule(proposal)), inputs)
        np.testing.assert_array_equal(got.reshape(expected.shape), expected)
