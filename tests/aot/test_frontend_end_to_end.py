"""Models the importer needed fixes for, compiled with `tvmc compile` and bit-exact with the reference kernels."""
from __future__ import annotations

import re

import numpy as np
import pytest
from aot_support import assert_bit_exact, compile_model, extract, members, npu_target

import ethosu_tvm
from ethosu_tvm.frontend.tflite_file import input_infos, read_model
from ethosu_tvm.host.spec import UnsupportedHostOp
from ethosu_tvm.run.host_program import HostProgram
from ethosu_tvm.testing import models
from ethosu_tvm.testing.reference import litert_tensors, random_inputs, run_litert, run_tflm


@pytest.mark.parametrize("target", [npu_target("ethos-u55-128"), "c"], ids=["npu", "host"])
@pytest.mark.parametrize("make", [lambda: models.make_graph("ds_cnn", per_tensor_axis=3),
                                  lambda: models.make("fully_connected", per_tensor_axis=3),
                                  lambda: models.make("softmax", per_tensor_axis=3)], ids=["ds_cnn", "fc", "softmax"])
def test_per_tensor_quantized_dimension_3(make, target, tmp_path):
    """TFLite Micro's person_detect writes QuantizedDimension 3 on single-scale tensors of every rank. LiteRT
    rejects such a model ("quantized_dimension must be in range [0, 2)"), TFLite Micro runs it: it is the
    reference."""
    model = make()
    with pytest.raises(ValueError, match="quantized_dimension must be in range"):
        run_litert(model, random_inputs(model, 0))
    assert_bit_exact(model, compile_model(model, tmp_path, target), tmp_path, seeds=range(3), reference=run_tflm)


@pytest.mark.parametrize("target", [npu_target("ethos-u55-256"), "c"], ids=["npu", "host"])
@pytest.mark.parametrize("op, params, placement", [
    ("conv2d", dict(per_channel=False, activation="RELU", stride=2), "CONV_2D ethos-u"),
    ("depthwise_conv2d", dict(in_shape=(1, 7, 7, 5), stride=2, activation="RELU6", padding="VALID"),
     "DEPTHWISE_CONV_2D ethos-u"),
    ("fully_connected", dict(in_shape=(2, 3, 10), keep_num_dims=True), "FULLY_CONNECTED host IFM is 3-D, expected 2-D"),
    ("fully_connected", dict(in_shape=(1, 2, 2, 8), bias=False), "FULLY_CONNECTED ethos-u"),
], ids=["conv2d", "depthwise_conv2d", "fc_keep_dims", "fc_4d_no_bias"])
def test_16x8_weighted_ops(op, params, placement, target, tmp_path):
    """int16 activations with int8 weights and an int64 bias (imported as int32): bit-exact with LiteRT as host
    kernels and on the NPU, where the offload report says which the NPU takes."""
    model = models.make(op, 1, dtype="int16", **params)
    archive = compile_model(model, tmp_path, target)
    assert_bit_exact(model, archive, tmp_path, seeds=range(3))
    if target != "c":
        line = members(archive)["./src/offload_report.txt"].decode().splitlines()[2]
        assert " ".join(line.split()) == f"0 {placement}", line


def _float_inputs(model: bytes, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.uniform(-4.0, 4.0, size=info.shape).astype(np.float32) for info in input_infos(model)]


@pytest.mark.parametrize("make", [lambda: models.make_graph("multi_io", float_io=True),
                                  lambda: models.make("fully_connected", dtype="int16", float_io=True)],
                         ids=["multi_io", "fc_int16"])
def test_stripped_float_io_is_bit_exact_inside(make, tmp_path):
    """--strip-float-io compiles the integer model between the edge QUANTIZE and DEQUANTIZE operators: given the
    integers LiteRT's QUANTIZE computes from float inputs, it gives exactly the integers LiteRT's DEQUANTIZE
    reads."""
    model = make()
    archive = compile_model(model, tmp_path, npu_target("ethos-u55-128"), "--strip-float-io")
    program = HostProgram(extract(archive, tmp_path / "mlf"), tmp_path)
    graph = read_model(model).Subgraphs(0)
    ops = [graph.Operators(i) for i in range(graph.OperatorsLength())]
    quantized = {int(op.Inputs(0)): int(op.Outputs(0)) for op in ops}  # float input → QUANTIZE output
    produced = {int(op.Outputs(0)): int(op.Inputs(0)) for op in ops}  # float output → DEQUANTIZE input
    for seed in range(3):
        inputs = _float_inputs(model, seed)
        tensors = litert_tensors(model, inputs)
        ints = [tensors[quantized[int(i)]] for i in graph.InputsAsNumpy()]
        for x, q, index in zip(inputs, ints, graph.InputsAsNumpy()):  # docs/status.md's formula for the application
            quant = graph.Tensors(quantized[int(index)]).Quantization()
            ratio = (x / np.float32(quant.Scale(0))).astype(np.float64)
            rounded = np.sign(ratio) * np.floor(np.abs(ratio) + 0.5) + quant.ZeroPoint(0)
            np.testing.assert_array_equal(np.clip(rounded, np.iinfo(q.dtype).min, np.iinfo(q.dtype).max), q)
        outputs = program.run(ints)
        for index in graph.OutputsAsNumpy():
            inner = produced[int(index)]
            np.testing.assert_array_equal(outputs[graph.Tensors(inner).Name().decode()], tensors[inner])


@pytest.mark.parametrize("target", [npu_target("ethos-u55-128"), "c"], ids=["npu", "host"])
@pytest.mark.parametrize("make", [lambda: models.make_graph("multi_io", float_io=True),
                                  lambda: models.make("fully_connected", dtype="int16", float_io=True),
                                  lambda: models.make("conv2d", in_scale=0.25, in_zp=3, float_io=True)],
                         ids=["multi_io", "fc_int16", "conv2d_quarter_scale"])
def test_float_io_is_bit_exact(make, target, tmp_path):
    """By default a model with float32 I/O compiles as it is: its QUANTIZE and DEQUANTIZE run as host kernels and
    the interface takes and gives float32, bit-exact with LiteRT; also on halfway cases (x / scale = k + 0.5,
    exact with scale 1/4: TFLite rounds them away from zero) and on values far outside the integer range (up to
    where x / scale leaves int32: TFLite's conversion is undefined there, x86 gives INT_MIN; the kernel saturates)."""
    model = make()
    halfway = [np.resize(np.arange(-40.5, 40.5, 0.125, dtype=np.float32), info.shape) for info in input_infos(model)]
    far = [np.resize(np.float32([1e6, -1e6, 3e4, -3e4]), info.shape) for info in input_infos(model)]
    archive = compile_model(model, tmp_path, target)
    assert_bit_exact(model, archive, tmp_path, seeds=range(3), more_inputs=(halfway, far))


@pytest.mark.parametrize("new_shape", [(1, -1), (1, 16, 8)])
def test_reshape_to_a_computed_shape(new_shape, tmp_path):
    """The new shape comes from SHAPE → STRIDED_SLICE → PACK over a dynamic-batch signature, folded at import."""
    model = models.make("reshape", 0, batch_from_shape=True, new_shape=new_shape)
    assert_bit_exact(model, compile_model(model, tmp_path, npu_target("ethos-u55-128")), tmp_path)


@pytest.mark.parametrize("target", [npu_target("ethos-u55-128"), "c"], ids=["npu", "host"])
@pytest.mark.parametrize("op, params", [
    ("conv2d", dict(dilation=2)),
    ("conv2d", dict(dilation=(2, 3), padding="VALID", in_shape=(1, 9, 10, 4), activation="RELU")),
    ("depthwise_conv2d", dict(dilation=3, in_shape=(1, 7, 8, 4), kernel=(3, 2))),
    ("depthwise_conv2d", dict(dilation=2, in_shape=(1, 9, 9, 3), activation="RELU6")),
], ids=["conv2d", "conv2d_valid", "depthwise", "depthwise_relu6"])
def test_space_to_batch_dilated_convolution(op, params, target, tmp_path):
    """SPACE_TO_BATCH_ND → convolution → BATCH_TO_SPACE_ND, TensorFlow's dilated convolution, compiles as one
    dilated convolution. TFLite Micro's SPACE_TO_BATCH_ND differs from LiteRT's on padded inputs; LiteRT agrees
    with the model written with the dilation on the convolution itself."""
    model = models.make(op, 2, space_to_batch=True, **params)
    archive = compile_model(model, tmp_path, target)
    assert_bit_exact(model, archive, tmp_path, seeds=range(3))
    (row,) = members(archive)["./src/offload_report.txt"].decode().splitlines()[2:-1]
    on_npu = target != "c" and max(np.atleast_1d(params["dilation"])) <= 2
    assert row.split()[:3] == ["1", op.upper().replace("2D", "_2D"), "ethos-u" if on_npu else "host"], row
    if target != "c" and not on_npu:
        assert row.endswith("each must be 1 or 2"), row


@pytest.mark.parametrize("target", [npu_target("ethos-u55-64"), "c"], ids=["npu", "host"])
@pytest.mark.parametrize("copy", ["tile", "broadcast_to"])
def test_copies_of_a_constant_are_folded(copy, target, tmp_path):
    """A TILE or BROADCAST_TO of a constant (TFLite's converter folds them; a host kernel took only feature maps)
    becomes the constant it computes, in its output's quantization: the ADD that reads it is all that runs."""
    net, x, copied = _copy_of_a_constant(copy)
    net.output(net.add(copied, x))
    model = net.build()
    archive = compile_model(model, tmp_path, target)
    assert_bit_exact(model, archive, tmp_path, seeds=range(2))
    rows = members(archive)["./src/offload_report.txt"].decode().splitlines()[2:-1]
    assert [row.split()[1] for row in rows] == ["ADD"], rows


@pytest.mark.parametrize("copy", ["tile", "broadcast_to"])
def test_a_copy_of_a_constant_as_a_model_output_is_refused(copy):
    """Not folded (a model output stays computed): no kernel computes constants, which the refusal says."""
    net, x, copied = _copy_of_a_constant(copy)
    net.output(net.relu(x))
    net.output(copied)
    message = (f"operator #0 {copy.upper()}: every operand is a constant (TFLite's converter folds such an operator; "
               "no kernel computes constants)")
    with pytest.raises(UnsupportedHostOp, match=f"^{re.escape(message)}$"):
        ethosu_tvm.build(ethosu_tvm.from_tflite(net.build()), target="c")


def _copy_of_a_constant(copy: str):
    """A net with an input (1, 2, 6, 4) and a TILE or BROADCAST_TO of a constant into that shape."""
    net = models.Net(1)
    x = net.input((1, 2, 6, 4))
    data = np.random.default_rng(1).integers(-128, 128, (1, 2, 3, 1) if copy == "tile" else (6, 1), dtype=np.int8)
    constant = net._activation(data.shape, np.int8, 0.03, 5, data=data)
    return net, x, net.tile(constant, (1, 1, 2, 4)) if copy == "tile" else net.broadcast_to(constant, (1, 2, 6, 4))
