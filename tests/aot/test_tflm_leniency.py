"""Models TFLite Micro runs though LiteRT or our earlier checks refuse them (docs/references.md, "Model checks
against TFLite Micro"): each compiles and its C equals TFLite Micro, the reference for what it alone accepts."""
from __future__ import annotations

import json

import numpy as np
import pytest

import ethosu_tvm
from ethosu_tvm.testing import shared_model
from ethosu_tvm.testing.layer_compare import compare_layers
from ethosu_tvm.testing.models.net import Net
from ethosu_tvm.testing.reference import random_inputs, run_tflm
from ethosu_tvm.testing.tflite_builder import Quantization

from aot_support import assert_bit_exact, compile_model, members, npu_target

TARGETS = {"ethos-u55-128": npu_target("ethos-u55-128"), "c": "c"}


@pytest.mark.parametrize("target", TARGETS)
def test_person_detect_equals_tflite_micro(target, tmp_path):
    """Its depthwise biases carry one scale per channel along dimension 3 of their 1-D shape: LiteRT refuses the
    file, TFLite Micro never reads a bias's scales."""
    model = shared_model("tflm_person_detect_int8.tflite")
    archive = compile_model(model, tmp_path, TARGETS[target])
    assert_bit_exact(model, archive, tmp_path, range(3), reference=run_tflm)


def _net() -> Net:
    """input → DEPTHWISE_CONV_2D → CONV_2D → ADD (with the depthwise output) → output."""
    net = Net(0, "leniency")
    x = net.input((1, 8, 8, 4))
    y = net.depthwise_conv2d(x, activation="RELU")
    net.output(net.add(y, net.conv2d(y, out_channels=4, kernel=(1, 1))))
    return net


def _unnamed() -> Net:
    """:func:`_net` with no tensor names."""
    net = _net()
    for index in range(len(net.builder._tensors)):
        net.builder.rename_tensor(index, "")
    return net


def _tensors(net: Net, dtype) -> list[int]:
    return [i for i, t in enumerate(net.builder._tensors) if t.dtype == np.dtype(dtype)]


def _check(net: Net | bytes, tmp_path, target: str = TARGETS["ethos-u55-128"]) -> list[str]:
    """Compile and compare with TFLite Micro; returns the names of the compiled interface's inputs and outputs."""
    model = net.build() if isinstance(net, Net) else net
    archive = compile_model(model, tmp_path, target)
    assert_bit_exact(model, archive, tmp_path, range(2), reference=run_tflm)
    interface = json.loads(members(archive)["./src/interface.json"])
    return [io["name"] for io in interface["inputs"] + interface["outputs"]]


@pytest.mark.parametrize("target", TARGETS)
def test_unnamed_tensors_are_named_by_index(target, tmp_path):
    """The schema makes names optional (TFLite Micro's keyword_scrambled.tflite has none): each unnamed tensor is
    `tensor_<index>`, in the interface and `tvmc run`'s .npz keys too."""
    net = _unnamed()
    assert _check(net, tmp_path, TARGETS[target]) == ["tensor_0", f"tensor_{len(net.builder._tensors) - 1}"]


def test_unnamed_tensors_in_layer_dumps(tmp_path):
    """A layer dump names each operator's output as the interface does, and layer_compare finds LiteRT's tensor of
    that name."""
    net = _unnamed()
    model = net.build()
    inputs = random_inputs(model, 0)
    ethosu_tvm.build(ethosu_tvm.from_tflite(model), target="c").run(inputs, debug_layers=tmp_path)
    comparison = compare_layers(model, inputs, tmp_path)
    outputs = [i for i, t in enumerate(net.builder._tensors) if t.data is None][1:]  # all but the model input
    assert comparison.first_difference is None
    assert sorted(comparison.compared) == sorted(f"tensor_{i}" for i in outputs)


def test_repeated_and_clashing_names_stay_apart(tmp_path):
    """Every tensor called "t" (the first keeps it, the others become t_<index>: TVM's expression table would have
    read one tensor for another), one unnamed tensor whose generated name another tensor already has and one name
    that is not UTF-8."""
    net = _net()
    count = len(net.builder._tensors)
    for index in range(count):
        net.builder.rename_tensor(index, "t")
    net.builder.rename_tensor(count - 1, "")
    net.builder.rename_tensor(count - 2, f"tensor_{count - 1}")
    net.builder.rename_tensor(1, b"\xff")  # not UTF-8: decoded with a replacement character
    assert _check(net, tmp_path) == ["t", f"tensor_{count - 1}_"]


def test_one_zero_point_for_many_scales(tmp_path):
    """TFLite Micro gives every channel the first zero point when the counts differ."""
    net = _net()
    for index in _tensors(net, np.int8):
        quant = net.builder._tensors[index].quantization
        if len(quant.scales) > 1:
            net.builder._tensors[index].quantization = Quantization(quant.scales, (0,), quant.axis)
    _check(net, tmp_path)


def test_bias_scales_along_an_axis_it_lacks(tmp_path):
    """As in person_detect: the biases' per-channel scales written along dimension 3 of their 1-D shape."""
    net = _net()
    for index in _tensors(net, np.int32):
        quant = net.builder._tensors[index].quantization
        net.builder._tensors[index].quantization = Quantization(quant.scales, quant.zero_points, 3)
    _check(net, tmp_path)


@pytest.mark.parametrize("quant", [Quantization(None, (0,)), Quantization((), ()), Quantization((0.5, 0.5), ())],
                         ids=["zero points only", "empty scales", "no zero points"])
def test_incomplete_quantization_is_none(quant, tmp_path):
    """TFLite Micro takes a tensor as quantized only with both scales and zero points: here the constant shape
    of a RESHAPE, which nothing dequantizes."""
    net = Net(0, "leniency")
    x = net.input((1, 4, 4, 2))
    net.output(net.reshape(x, (1, 16, 2)))
    (shape,) = _tensors(net, np.int32)
    net.builder._tensors[shape].quantization = quant
    _check(net, tmp_path)


def test_no_file_identifier(tmp_path):
    """The identifier is optional in a flatbuffer and TFLite Micro does not read it (LiteRT refuses the file)."""
    model = _net().build()
    _check(model[:4] + bytes(4) + model[8:], tmp_path)


@pytest.mark.parametrize("target", TARGETS)
def test_strides_and_dilations_beyond_the_input(target, tmp_path):
    """Strides and dilations of any size: the output size formula takes them (they were limited to 2^16)."""
    net = Net(0, "leniency")
    x = net.input((1, 8, 8, 4))
    y = net.conv2d(x, out_channels=4, stride=(70000, 1), dilation=(1, 70000))
    net.output(net.max_pool2d(y, pool=(2, 2), stride=(1, 70000), padding="SAME"))
    _check(net, tmp_path, TARGETS[target])


@pytest.mark.parametrize("target", TARGETS)
def test_tensors_without_a_shape_are_scalars(target, tmp_path):
    """TFLite Micro takes a tensor without a shape vector as a scalar (a model input was refused)."""
    net = Net(0, "leniency")
    x = net.input(())
    net.output(net.relu(x))
    for tensor in net.builder._tensors:
        tensor.shape = None
    _check(net, tmp_path, TARGETS[target])
