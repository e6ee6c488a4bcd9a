"""Bit-exactness of whole NPU subgraphs: MLPerf Tiny models, factory graphs, and a model split by a host op."""
import numpy as np
import pytest
import tflite

from ethosu_tvm.testing import models, shared_model
from ethosu_tvm.testing.reference import litert_tensors, random_inputs

from te_support import SEEDS, compile_npu

MLPERF = [
    "mlperf_tiny_kws_dscnn_int8.tflite",
    "mlperf_tiny_vww_mobilenetv1_96_int8.tflite",
    "mlperf_tiny_ic_resnet8_int8.tflite",
    "mlperf_tiny_ad_fc_autoencoder_int8.tflite",
    "tflm_hello_world_int8.tflite",
]


def _graph_io(model: bytes) -> tuple[list[int], list[int]]:
    """TFLite tensors at the NPU subgraph's boundary: the model inputs and outputs (SOFTMAX runs on the NPU too)."""
    graph = tflite.Model.GetRootAsModel(model, 0).Subgraphs(0)
    return [int(i) for i in graph.InputsAsNumpy()], [int(i) for i in graph.OutputsAsNumpy()]


def _assert_exact(model: bytes, run, inputs_ids, output_ids):
    for seed in SEEDS:
        tensors = litert_tensors(model, random_inputs(model, seed))
        got = run([tensors[i] for i in inputs_ids])
        for out, tensor_id in zip(got, output_ids):
            ref = tensors[tensor_id]
            assert np.array_equal(out.reshape(ref.shape), ref), f"seed {seed}, tensor {tensor_id}"


@pytest.mark.parametrize("name", MLPERF)
def test_mlperf_npu_subgraph_bit_exact(name):
    model = shared_model(name)
    _, graphs, (run,) = compile_npu(model)
    _assert_exact(model, run, *_graph_io(model))


@pytest.mark.parametrize("name", models.GRAPHS)
def test_factory_graph_bit_exact(name):
    """Each NPU subgraph reads model inputs (by name); together they produce exactly LiteRT's boundary tensors."""
    model = models.make_graph(name, seed=5)
    _, graphs, compiled = compile_npu(model)
    input_ids, output_ids = _graph_io(model)
    by_name = {tflite.Model.GetRootAsModel(model, 0).Subgraphs(0).Tensors(i).Name().decode(): i for i in input_ids}
    for seed in SEEDS:
        tensors = litert_tensors(model, random_inputs(model, seed))
        expected = [tensors[i] for i in output_ids]
        produced = []
        for graph, run in zip(graphs, compiled):
            produced += run([tensors[by_name[t.name]] for t in graph.inputs])
        assert len(produced) == len(expected)
        for ref in expected:
            assert any(out.size == ref.size and np.array_equal(out.reshape(ref.shape), ref) for out in produced)


def test_subgraphs_around_a_host_op_bit_exact():
    """conv → log_softmax (host) → conv: each NPU subgraph fed with LiteRT's own intermediate tensors."""
    net = models.Net(seed=3)
    x = net.input((1, 8, 8, 4))
    first = net.conv2d(x, out_channels=8, activation="RELU")
    squashed = net.log_softmax(first)
    out = net.conv2d(squashed, out_channels=4)
    net.output(out)
    model = net.build()
    _, graphs, compiled = compile_npu(model)
    assert len(compiled) == 2
    _assert_exact(model, compiled[0], [x.index], [first.index])
    _assert_exact(model, compiled[1], [squashed.index], [out.index])
