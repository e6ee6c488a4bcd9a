"""Which host specs become CMSIS-NN calls (and the exact reason for the others), and every emitted call's arguments
against the project's reference arithmetic: zero points, strides, padding, dilation, clamps, per-channel multipliers
and shifts, kernel sums, dims and the planned context buffer. No CMSIS-NN needed."""
import dataclasses
import re

import numpy as np
import pytest

import ethosu_tvm
from ethosu_tvm.host import fuse_host_ops, spec
from ethosu_tvm.host.cmsis_nn import CmsisNn
from ethosu_tvm.host.spec_reader import host_spec
from ethosu_tvm.quantization import conv_multipliers, fully_connected_multipliers, quantize_multipliers
from ethosu_tvm.target import CmsisNnTarget
from ethosu_tvm.testing import models

M55, M7 = CmsisNnTarget("cortex-m55", "mve"), CmsisNnTarget("cortex-m7", "dsp")


def _spec(model: bytes):
    """The one host spec of a single-operator model."""
    mod = fuse_host_ops(ethosu_tvm.from_tflite(model))
    (op,) = [host_spec(f) for gv, f in mod.functions.items() if gv.name_hint != "main"]
    return op


def _declared(kernel, name: str) -> str:
    return re.search(rf"^  (?:static )?const \w+ {name} = (.*);$", kernel.c_source, re.MULTILINE).group(1)


def _constant(kernel, name: str) -> np.ndarray:
    return next(p.data for p in kernel.params if p.name == name)


def _tile(h: int, w: int) -> str:
    return f"{{{w}, {h}}}"  # cmsis_nn_tile is {w, h}


@pytest.mark.parametrize("op, params, function", [
    ("conv2d", {}, "arm_convolve_wrapper_s8"),
    ("conv2d", {"stride": (2, 2), "activation": "RELU6", "kernel": (3, 2)}, "arm_convolve_wrapper_s8"),
    ("conv2d", {"dilation": (2, 2), "padding": "VALID"}, "arm_convolve_wrapper_s8"),
    ("depthwise_conv2d", {}, "arm_depthwise_conv_wrapper_s8"),
    ("depthwise_conv2d", {"depth_multiplier": 2, "stride": (2, 2), "activation": "RELU"},
     "arm_depthwise_conv_wrapper_s8"),
])
def test_convolutions_are_calls_with_tflites_parameters(op, params, function):
    conv = _spec(models.make(op, 3, **params))
    implementation = CmsisNn(M55)
    assert implementation.refusal(conv) == ""
    kernel = implementation.build(conv, "k", None)
    assert kernel.library == "cmsis-nn" and f"  (void){function}(&ctx, &params, &quant, " in kernel.c_source
    assert '#include "arm_nnfunctions.h"' in kernel.c_source
    channels = conv.output.shape[3]
    low, high = conv.clamp or (-128, 127)
    (top, left), multiplier = conv.padding[:2], f"{channels // conv.input.shape[3]}, " if conv.depthwise else ""
    assert _declared(kernel, "params") == (f"{{{-conv.input.zero_point}, {conv.output.zero_point}, {multiplier}"
                                           f"{_tile(*conv.stride)}, {_tile(top, left)}, {_tile(*conv.dilation)}, "
                                           f"{{{low}, {high}}}}}")
    expected_multipliers, expected_shifts = quantize_multipliers(
        conv_multipliers(conv.input.scale, np.broadcast_to(conv.weight_scales, channels), conv.output.scale))
    np.testing.assert_array_equal(_constant(kernel, "multiplier"), expected_multipliers)
    np.testing.assert_array_equal(_constant(kernel, "shift"), expected_shifts)
    np.testing.assert_array_equal(_constant(kernel, "bias"), conv.bias)
    kh, kw = conv.weights.shape[1:3]
    filter_dims = (1, kh, kw, channels) if conv.depthwise else (channels, kh, kw, conv.input.shape[3])
    assert _declared(kernel, "filter_dims") == "{" + ", ".join(map(str, filter_dims)) + "}"
    assert _declared(kernel, "input_dims") == "{" + ", ".join(map(str, conv.input.shape)) + "}"
    assert _declared(kernel, "output_dims") == "{" + ", ".join(map(str, conv.output.shape)) + "}"
    assert [p.name for p in kernel.params] == ["input", "weights", "bias", "multiplier", "shift", "output"]


def test_the_context_buffer_is_the_planned_scratch():
    """The 3x3 conv of 4 channels (the factory's): 192 bytes on MVE, 144 on DSP (see test_scratch_sizes)."""
    conv = _spec(models.make("conv2d", 0))
    for cpu, size in ((M55, 192), (M7, 144)):
        kernel = CmsisNn(cpu).build(conv, "k", None)
        assert [(s.name, s.nbytes) for s in kernel.scratch] == [("context", size)]
        assert _declared(kernel, "ctx") == f"{{context, {size}}}"
        assert kernel.c_source.splitlines()[2].endswith("int8_t* output, uint8_t* context) {")
    pool = _spec(models.make("max_pool2d", 0))
    kernel = CmsisNn(M7).build(pool, "k", None)
    assert kernel.scratch == () and _declared(kernel, "ctx") == "{0, 0}"


@pytest.mark.parametrize("kind", ["avg", "max"])
def test_pools(kind):
    pool = _spec(models.make(f"{kind}_pool2d", 1, pool=(3, 3), stride=(2, 2), padding="SAME", activation="RELU"))
    kernel = CmsisNn(M7).build(pool, "k", None)
    assert f"(void)arm_{'avgpool' if kind == 'avg' else 'max_pool'}_s8(&ctx, &params, &input_dims, input, " \
           "&filter_dims, &output_dims, output);" in kernel.c_source
    low = max(-128, pool.input.zero_point)
    assert _declared(kernel, "params") == f"{{{{2, 2}}, {{{pool.padding[1]}, {pool.padding[0]}}}, {{{low}, 127}}}}"
    assert _declared(kernel, "filter_dims") == "{1, 3, 3, 1}"
    assert [s.nbytes for s in kernel.scratch] == ([8 * 4] if kind == "avg" else [])  # int32 per channel on DSP


def _exact_fully_connected():
    """An FC whose real multiplier is 1 (0.5 · 0.25 / 0.125): one and two roundings agree on every accumulator."""
    return _spec(models.make("fully_connected", 2, in_scale=0.5, in_zp=3, w_scales=[0.25], out_scale=0.125,
                             out_zp=-5))


def test_fully_connected_kernel_sums_are_constants_on_mve():
    fc = _exact_fully_connected()
    units, depth = fc.weights.shape
    kernel = CmsisNn(M55).build(fc, "k", None)
    assert CmsisNn(M55).refusal(fc) == ""
    expected = [int(fc.bias[u]) - fc.input.zero_point * sum(int(w) for w in fc.weights[u]) for u in range(units)]
    np.testing.assert_array_equal(_constant(kernel, "kernel_sums"), expected)  # arm_vector_sum_s8's, by hand
    assert _declared(kernel, "ctx") == f"{{(void*)kernel_sums, {4 * units}}}" and kernel.scratch == ()
    multiplier, shift = quantize_multipliers(fully_connected_multipliers(fc.input.scale, fc.weight_scales,
                                                                         fc.output.scale))
    assert (int(multiplier[0]), int(shift[0])) == (1 << 30, 1)
    assert _declared(kernel, "params") == f"{{{-fc.input.zero_point}, 0, {fc.output.zero_point}, {{-128, 127}}}}"
    assert _declared(kernel, "quant") == "{multiplier[0], shift[0]}"
    assert _declared(kernel, "input_dims") == f"{{1, 1, 1, {depth}}}"
    assert _declared(kernel, "filter_dims") == f"{{{depth}, 1, 1, {units}}}"
    dsp = CmsisNn(M7).build(fc, "k", None)
    assert _declared(dsp, "ctx") == "{0, 0}" and "kernel_sums" not in [p.name for p in dsp.params]


def _conv_spec(**changes):
    x = spec.QuantTensor((1, 8, 8, 4), "int8", 0.05, 3)
    y = spec.QuantTensor(changes.pop("output_shape", (1, 8, 8, 6)), "int8", 0.1, -2)
    weights = np.ones((6, 3, 3, 4), np.int8)
    return spec.Conv2D(x, y, weights, (0.01,) * 6, np.zeros(6, np.int32), None,
                       padding=changes.pop("padding", (1, 1, 1, 1)), **changes)


@pytest.mark.parametrize("op, reason", [
    (lambda: dataclasses.replace(_conv_spec(), output=spec.QuantTensor((1, 8, 8, 6), "int16", 0.1, 0)),
     "int8 to int16 activations (CMSIS-NN's kernels used take int8 to int8 or int16 to int16)"),
    (lambda: _spec(models.make("fully_connected", 0, per_channel=True)),
     "per-channel weights (arm_fully_connected_s8 is per tensor)"),
    (lambda: _spec(models.make("fully_connected", 0)),
     "LiteRT rounds once and CMSIS-NN twice: they differ for accumulator "),
    (lambda: _conv_spec(padding=(2, 2, 0, 0), output_shape=(1, 8, 8, 6)),  # a PAD of 2 before, fused
     "padding (2, 2, 0, 0) is not TFLite's SAME or VALID form"),
    (lambda: _spec(models.make("softmax", 0)), "CMSIS-NN has no kernel used for this op"),
])
def test_refusals(op, reason):
    spec_ = op()
    assert CmsisNn(M55).refusal(spec_).startswith(reason)
    assert not CmsisNn(M55).accepts(spec_, None)


M3 = CmsisNnTarget("cortex-m3", "scalar")
_ON_M7, _ON_M3 = "measured on cortex-m7 (QEMU mps2-an500)", "measured on cortex-m3 (QEMU mps2-an385)"


@pytest.mark.parametrize("kind, cpu, reason", [
    ("avg", M7, f"faster on DSP cores: 62040 vs 84800 instructions {_ON_M7}"),
    ("max", M7, f"faster on DSP cores: 59920 vs 79200 instructions {_ON_M7}"),
    ("avg", M3, f"faster on scalar cores: 62040 vs 219640 instructions {_ON_M3}"),
    ("max", M3, f"faster on scalar cores: 59920 vs 79200 instructions {_ON_M3}"),
])
def test_pools_stay_ours_where_ours_is_faster(kind, cpu, reason):
    pool = _spec(models.make(f"{kind}_pool2d", 0))
    assert CmsisNn(cpu).refusal(pool) == reason and not CmsisNn(cpu).accepts(pool, None)
    assert CmsisNn(M55).refusal(pool) == "" and CmsisNn(M55).accepts(pool, None)
