"""Streams from Vela's legacy Python code generator (`--debug-force-legacy-core`), a second, independent producer
of command streams: per-channel pooling, HEIGHT1 = 0xffff tiles, the C weight encoder, other softmax lowering.
Compared bit-exactly with LiteRT like the Regor streams (FC rounding patched as in test_vela_models)."""
import dataclasses
import functools

import numpy as np
import pytest

from ethosu_tvm.sim import SimulatorError, vela_tflite
from ethosu_tvm.sim.payload import bytes_to_words, parse_driver_payload
from ethosu_tvm.testing import models, shared_model
from ethosu_tvm.testing.reference import random_inputs, run_litert
from simhelpers import patch_fc_rounding

MLPERF = ("mlperf_tiny_kws_dscnn_int8", "mlperf_tiny_vww_mobilenetv1_96_int8", "mlperf_tiny_ic_resnet8_int8",
          "mlperf_tiny_ad_fc_autoencoder_int8", "tflm_hello_world_int8")
# the legacy core leaves these on the CPU
NOT_ON_NPU = ("sum", "pack", "reduce_max", "reduce_min", "elu", "log", "padv2", "depth_to_space", "space_to_depth",
              "gather", "space_to_batch_nd", "batch_to_space_nd", "reverse_v2", "broadcast_to", "neg", "sqrt",
              "batch_matmul", "arg_min", "cast", "log_softmax", "add_n", "equal", "not_equal", "greater",
              "greater_equal", "less", "less_equal", "select_v2", "fill",
              "gather_nd", "div", "l2_normalization", "gelu", "tile")
KEEPS_AXIS = ("arg_max",)  # the legacy core's output keeps the reduced axis (its own test below)
# The legacy core writes MIRROR_PAD's reflection through a negative OFM row stride, which the simulator refuses (as
# test_factory_models shows for Regor's stream).
# Its RESIZE_BILINEAR averages padded windows in per-channel scale mode without a scale stream, which the simulator
# refuses as an independent interpreter does (Regor emits global mode with OFM_SCALE).
PER_CHANNEL_AVERAGE = ("resize_bilinear",)
CASES = (sorted(set(models.OPS) - set(NOT_ON_NPU) - set(KEEPS_AXIS) - {"mirror_pad"} - set(PER_CHANNEL_AVERAGE))
         + [f"graph_{g}" for g in models.GRAPHS] + list(MLPERF))


@functools.lru_cache(maxsize=None)
def _model(name: str) -> bytes:
    if name in MLPERF:
        return shared_model(f"{name}.tflite")
    return models.make_graph(name[6:]) if name.startswith("graph_") else models.make(name)


@functools.lru_cache(maxsize=None)
def _reference(name: str, seed: int):
    inputs = random_inputs(_model(name), seed)
    return inputs, run_litert(_model(name), inputs)


@pytest.mark.parametrize("accelerator", ["ethos-u55-32", "ethos-u55-256"])  # both ublock depths, smallest/largest
@pytest.mark.parametrize("name", CASES)
def test_legacy_core_bit_exact(name, accelerator, vela):
    parsed = vela_tflite.parse(vela(name, _model(name), accelerator, "Performance", legacy=True))
    words, _ = patch_fc_rounding(parse_driver_payload(bytes_to_words(parsed.command_stream)).words)
    single_rounding = dataclasses.replace(parsed, command_stream=words)
    for seed in (0, 1):
        inputs, references = _reference(name, seed)
        outputs = vela_tflite.execute(single_rounding, inputs, accelerator)[0]
        assert all(np.array_equal(o, r) for o, r in zip(outputs, references)), seed


@pytest.mark.parametrize("name", NOT_ON_NPU)
def test_legacy_core_leaves_some_operators_on_the_cpu(name, vela):
    compiled = vela(name, models.make(name), "ethos-u55-128", "Performance", legacy=True)
    with pytest.raises(SimulatorError, match="must consist of one ethos-u operator"):
        vela_tflite.parse(compiled)


@pytest.mark.parametrize("name", PER_CHANNEL_AVERAGE)
def test_legacy_core_per_channel_average_is_refused(name, vela):
    parsed = vela_tflite.parse(vela(name, _model(name), "ethos-u55-128", "Performance", legacy=True))
    inputs, _ = _reference(name, 0)
    with pytest.raises(SimulatorError, match=r"NPU_OP_POOL\): NPU_SET_SCALE_LENGTH = 0x0 \(reset value\): "
                                             r"per-channel AVERAGE pooling reads a scale stream: 0 < \d+ bytes"):
        vela_tflite.execute(parsed, inputs, "ethos-u55-128")


@pytest.mark.parametrize("name", KEEPS_AXIS)
def test_legacy_core_keeps_the_reduced_axis(name, vela):
    """ARG_MAX over the last axis: the legacy core's output has that axis as size 1; the values are LiteRT's."""
    parsed = vela_tflite.parse(vela(name, _model(name), "ethos-u55-128", "Performance", legacy=True))
    for seed in (0, 1):
        inputs, (reference,) = _reference(name, seed)
        (output,) = vela_tflite.execute(parsed, inputs, "ethos-u55-128")[0]
        assert output.shape == reference.shape + (1,)
        np.testing.assert_array_equal(output[..., 0], reference)
