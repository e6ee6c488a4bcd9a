"""Command streams from Vela's API, run in the simulator, equal LiteRT exactly: single ops on every U55
configuration, the MLPerf Tiny NPU subgraphs, and sweeps over convolution and pooling parameters."""
import numpy as np
import pytest
import tflite
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ethosu_tvm.testing import models, shared_model
from ethosu_tvm.testing.reference import litert_tensors, random_inputs

from sim_support import ACCELERATORS, assert_model_exact, compile_model, run_artifact

NPU_OPS = {
    "conv2d": dict(activation="RELU6", per_channel=True),
    "depthwise_conv2d": dict(stride=(2, 2), activation="RELU"),
    "fully_connected": dict(in_shape=(1, 2, 2, 8), units=6),
    "avg_pool2d": dict(pool=(3, 3), stride=(1, 1), padding="SAME"),
    "max_pool2d": dict(pool=(3, 3), stride=(2, 2), padding="SAME"),
    "add": dict(in2_shape=(1, 1, 1, 8), activation="RELU"),
    "sub": dict(in2_scale=0.07, in2_zp=9),
    "mul": dict(in_shape=(1, 8, 1, 8), in2_shape=(1, 8, 8, 8)),
    "minimum": {},
    "maximum": dict(in2_shape=(1, 8, 1, 8)),
    "reshape": dict(in_shape=(1, 3, 5, 7), new_shape=(1, 105)),
    "squeeze": {},
    "expand_dims": {},
    "mean": dict(in_shape=(1, 16, 16, 4), in_zp=7, out_zp=-9),
    "abs": {},
    "leaky_relu": {},
    "relu": {},
    "relu6": {},
    "relu_n1_to_1": {},
    "quantize": {},
    "tanh": {},
    "logistic": dict(in_zp=40),
    "hard_swish": dict(in_scale=0.05),
}


@pytest.mark.parametrize("accelerator", ACCELERATORS)
@pytest.mark.parametrize("op", NPU_OPS)
def test_single_op_on_every_configuration(op, accelerator):
    assert_model_exact(models.make(op, seed=11, **NPU_OPS[op]), accelerator)


@pytest.mark.parametrize("accelerator", ACCELERATORS)
@pytest.mark.parametrize("name", ["resnet_block", "inverted_residual"])
def test_factory_graphs(name, accelerator):
    assert_model_exact(models.make_graph(name, seed=2), accelerator)


def _softmax_input(model: bytes) -> int:
    root = tflite.Model.GetRootAsModel(model, 0)
    graph = root.Subgraphs(0)
    last = graph.Operators(graph.OperatorsLength() - 1)
    if root.OperatorCodes(last.OpcodeIndex()).BuiltinCode() == tflite.BuiltinOperator.SOFTMAX:
        return int(last.InputsAsNumpy()[0])
    return int(graph.OutputsAsNumpy()[0])


@pytest.mark.parametrize("accelerator", ACCELERATORS)
@pytest.mark.parametrize("name", [
    "mlperf_tiny_kws_dscnn_int8.tflite",
    "mlperf_tiny_vww_mobilenetv1_96_int8.tflite",
    "mlperf_tiny_ic_resnet8_int8.tflite",
    "mlperf_tiny_ad_fc_autoencoder_int8.tflite",
])
def test_mlperf_npu_subgraph(name, accelerator):
    """The NPU subgraph (everything but the softmax) against LiteRT's tensor at the same place."""
    model = shared_model(name)
    _, (artifact,) = compile_model(model, accelerator)
    reference = _softmax_input(model)
    for seed in (0, 1):
        (x,) = random_inputs(model, seed)
        expected = litert_tensors(model, [x])[reference]
        (got,) = run_artifact(artifact, [x])
        assert np.array_equal(got.reshape(expected.shape), expected), f"seed {seed}"


SWEEP = settings(max_examples=40, deadline=None)
accelerators = st.sampled_from(ACCELERATORS)


@SWEEP
@given(op=st.sampled_from(["conv2d", "depthwise_conv2d"]), h=st.integers(1, 10), w=st.integers(1, 10),
       c=st.integers(1, 12), kernel=st.tuples(st.integers(1, 4), st.integers(1, 4)),
       stride=st.tuples(st.integers(1, 3), st.integers(1, 3)), dilation=st.tuples(st.integers(1, 2),
                                                                                   st.integers(1, 2)),
       padding=st.sampled_from(["SAME", "VALID"]), in_zp=st.integers(-128, 127), out_zp=st.integers(-128, 127),
       accelerator=accelerators, seed=st.integers(0, 1000))
def test_convolution_sweep(op, h, w, c, kernel, stride, dilation, padding, in_zp, out_zp, accelerator, seed):
    if padding == "VALID":
        assume(h >= dilation[0] * (kernel[0] - 1) + 1 and w >= dilation[1] * (kernel[1] - 1) + 1)
    extra = dict(out_channels=c + 3) if op == "conv2d" else {}
    model = models.make(op, seed=seed, in_shape=(1, h, w, c), kernel=kernel, stride=stride, dilation=dilation,
                        padding=padding, in_zp=in_zp, out_zp=out_zp, **extra)
    assert_model_exact(model, accelerator)


@SWEEP
@given(op=st.sampled_from(["avg_pool2d", "max_pool2d"]), h=st.integers(1, 12), w=st.integers(1, 12),
       c=st.integers(1, 20), pool=st.tuples(st.integers(1, 5), st.integers(1, 5)),
       stride=st.tuples(st.integers(1, 3), st.integers(1, 3)), padding=st.sampled_from(["SAME", "VALID"]),
       in_zp=st.integers(-128, 127), accelerator=accelerators, seed=st.integers(0, 1000))
def test_pooling_sweep(op, h, w, c, pool, stride, padding, in_zp, accelerator, seed):
    if padding == "VALID":
        assume(h >= pool[0] and w >= pool[1])
    model = models.make(op, seed=seed, in_shape=(1, h, w, c), pool=pool, stride=stride, padding=padding,
                        in_zp=in_zp)
    assert_model_exact(model, accelerator)
