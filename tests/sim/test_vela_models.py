"""Vela-compiled MLPerf Tiny models and hello_world, simulated and compared bit-exactly with LiteRT's reference
kernels on the original model, for every U55 configuration and both Vela optimisation strategies, and the MLPerf
Tiny models for both U65 configurations in Ethos_U65_High_End with Shared_Sram and Dedicated_Sram.

Vela rounds FULLY_CONNECTED twice (TFLite's double rounding, OFM round mode TFL) where LiteRT 2.3's reference
FULLY_CONNECTED rounds once (half up). Every stream is therefore also run with the OFM round mode of its
FULLY_CONNECTED convolutions switched to NATURAL (simhelpers.patch_fc_rounding), which must match LiteRT exactly on
every input: the single register field is the whole difference. The unpatched streams match LiteRT exactly where a
softmax follows the FC (KWS, VWW, ResNet8 on these inputs) and differ by 1 LSB elsewhere (AD, hello_world); an
unpatched U65 stream gives exactly what the unpatched U55-256 stream gives.
"""
import dataclasses
import functools

import numpy as np
import pytest

from ethosu_tvm.frontend.tflite_file import input_infos
from ethosu_tvm.arch import find_accelerator
from ethosu_tvm.arch.system import FAST_SCRATCH_REGION
from ethosu_tvm.sim import Simulator, SimulatorError, run_vela_tflite, stats, vela_tflite
from ethosu_tvm.sim.stream import load
from ethosu_tvm.sim.payload import bytes_to_words, parse_driver_payload
from ethosu_tvm.testing import shared_model
from ethosu_tvm.testing.reference import random_inputs, run_litert
from simhelpers import ACCELERATORS, OPTIMISE, patch_fc_rounding

MODELS = {
    "kws": ("mlperf_tiny_kws_dscnn_int8.tflite", 1),
    "vww": ("mlperf_tiny_vww_mobilenetv1_96_int8.tflite", 1),
    "resnet8": ("mlperf_tiny_ic_resnet8_int8.tflite", 1),
    "ad": ("mlperf_tiny_ad_fc_autoencoder_int8.tflite", 10),
    "hello_world": ("tflm_hello_world_int8.tflite", 3),
}  # name -> (file, number of FULLY_CONNECTED layers)
FULL_RANGE_SEEDS = (0, 1, 2)
NARROW_SEEDS = (10, 11)  # inputs near the zero point: graded softmax outputs, so FC rounding shows


def _narrow_inputs(model: bytes, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [np.clip(np.round(rng.normal(i.zero_point or 0, 24, i.shape)), -128, 127).astype(i.dtype)
            for i in input_infos(model)]


@functools.lru_cache(maxsize=None)
def _case(name: str, seed: int):
    """(inputs, LiteRT outputs) for a model and seed; shared by all accelerator configurations."""

    model = shared_model(MODELS[name][0])
    inputs = random_inputs(model, seed) if seed in FULL_RANGE_SEEDS else _narrow_inputs(model, seed)
    return inputs, run_litert(model, inputs)


def _patched(parsed: vela_tflite.VelaModel, expected_fc: int, at_least: bool = False) -> vela_tflite.VelaModel:
    """The stream with LiteRT's FC rounding; `expected_fc` FC convolutions (at least, if Vela splits them)."""
    words, count = patch_fc_rounding(parse_driver_payload(bytes_to_words(parsed.command_stream)).words)
    assert count >= expected_fc if at_least else count == expected_fc
    return dataclasses.replace(parsed, command_stream=words)


def _exact(outputs, references) -> bool:
    return all(o.dtype == r.dtype and np.array_equal(o, r) for o, r in zip(outputs, references))


@pytest.mark.parametrize("optimise", OPTIMISE)
@pytest.mark.parametrize("accelerator", ACCELERATORS)
@pytest.mark.parametrize("name", ["kws", "vww", "resnet8", "ad"])
def test_mlperf_tiny_bit_exact(name, accelerator, optimise, vela):
    model = shared_model(MODELS[name][0])
    parsed = vela_tflite.parse(vela(name, model, accelerator, optimise))
    single_rounding = _patched(parsed, MODELS[name][1])
    unpatched_exact = []
    for seed in FULL_RANGE_SEEDS + NARROW_SEEDS:
        inputs, references = _case(name, seed)
        assert _exact(vela_tflite.execute(single_rounding, inputs, accelerator)[0], references), seed
        unpatched_exact.append(_exact(vela_tflite.execute(parsed, inputs, accelerator)[0], references))
    if name == "ad":  # all ten layers are FULLY_CONNECTED: Vela's double rounding shows on every input
        assert not any(unpatched_exact)
    else:  # the 1-LSB logit differences, if any, vanish in the int8 softmax on these inputs
        assert all(unpatched_exact)


@pytest.mark.parametrize("memory_mode", ["Shared_Sram", "Dedicated_Sram"])
@pytest.mark.parametrize("accelerator", ["ethos-u65-256", "ethos-u65-512"])
@pytest.mark.parametrize("name", ["kws", "vww", "resnet8", "ad"])
def test_u65_mlperf_tiny_bit_exact(name, accelerator, memory_mode, vela):
    """Vela's U65 streams: the U65-512's two cores each with their share of the weights and scales, and under
    Dedicated_Sram a fast scratch of its own beside feature maps in the (DRAM) arena."""
    model = shared_model(MODELS[name][0])
    parsed = vela_tflite.parse(vela(name, model, accelerator, "Performance",
                                    system=("Ethos_U65_High_End", memory_mode)))
    commands = load(parsed.command_stream, find_accelerator(accelerator))
    dual_core = accelerator == "ethos-u65-512"
    assert {c.param for c in commands if c.opcode.name == "PARALLEL_MODE"} == {int(dual_core)}
    assert any(c.payload for c in commands if c.opcode.name == "WEIGHT1_LENGTH") == dual_core
    fast_scratch = {c.param for c in commands if c.opcode.name in ("IFM_REGION", "OFM_REGION")} >= {FAST_SCRATCH_REGION}
    assert fast_scratch == (parsed.regions[FAST_SCRATCH_REGION].offset == -1) == (memory_mode == "Dedicated_Sram")
    single_rounding = _patched(parsed, MODELS[name][1], at_least=True)
    u55 = vela_tflite.parse(vela(name, model, "ethos-u55-256", "Performance"))
    for seed in FULL_RANGE_SEEDS + NARROW_SEEDS:
        inputs, references = _case(name, seed)
        assert _exact(vela_tflite.execute(single_rounding, inputs, accelerator)[0], references), seed
        assert _exact(vela_tflite.execute(parsed, inputs, accelerator)[0],
                      vela_tflite.execute(u55, inputs, "ethos-u55-256")[0]), seed


@pytest.mark.parametrize("optimise", OPTIMISE)
@pytest.mark.parametrize("accelerator", ACCELERATORS)
def test_hello_world_every_input(accelerator, optimise, vela):
    """All 256 int8 inputs: exact with LiteRT's FC rounding; Vela's own rounding differs on 23 of them."""
    model = shared_model(MODELS["hello_world"][0])
    parsed = vela_tflite.parse(vela("hello_world", model, accelerator, optimise))
    single_rounding = _patched(parsed, 3)
    references = _hello_world_references(model)
    mismatches = 0
    for value, reference in zip(range(-128, 128), references):
        inputs = [np.array([[value]], np.int8)]
        assert np.array_equal(vela_tflite.execute(single_rounding, inputs, accelerator)[0][0], reference), value
        mismatches += not np.array_equal(vela_tflite.execute(parsed, inputs, accelerator)[0][0], reference)
    assert mismatches == 23


@functools.lru_cache(maxsize=1)
def _hello_world_references_cached(model: bytes):
    return [run_litert(model, [np.array([[v]], np.int8)])[0] for v in range(-128, 128)]


def _hello_world_references(model: bytes):
    return _hello_world_references_cached(model)


def test_fc_rounding_modes_explain_the_difference(vela):
    """The AD model's mismatches all disappear with NATURAL rounding and none appear with TFL rounding patched in
    explicitly: the OFM round mode of the FC layers is the only difference to LiteRT."""
    model = shared_model(MODELS["ad"][0])
    parsed = vela_tflite.parse(vela("ad", model, "ethos-u55-128", "Performance"))
    words = parse_driver_payload(bytes_to_words(parsed.command_stream)).words
    tfl, _ = patch_fc_rounding(words, rounding_bits=0)
    inputs, references = _case("ad", 0)
    vela_out = vela_tflite.execute(parsed, inputs, "ethos-u55-128")[0][0]
    assert np.array_equal(vela_tflite.execute(dataclasses.replace(parsed, command_stream=tfl), inputs,
                                              "ethos-u55-128")[0][0], vela_out)
    difference = vela_out.astype(int) - references[0].astype(int)
    assert 0 < np.count_nonzero(difference) and np.abs(difference).max() == 1


@pytest.mark.parametrize("accelerator", ACCELERATORS)
def test_static_statistics_match_execution(accelerator, vela):
    """Traffic and cycles derived from the registers equal what a run measures at the memory interface."""
    for name in ("kws", "vww", "resnet8", "ad"):
        model = shared_model(MODELS[name][0])
        compiled = vela(name, model, accelerator, "Size")
        inputs, _ = _case(name, 0)
        measured = vela_tflite.run(compiled, inputs, accelerator)[1]
        simulator = Simulator(accelerator)
        estimated = stats.estimate(simulator.commands(vela_tflite.parse(compiled).command_stream),
                                   simulator.accelerator)
        assert measured == estimated
        assert measured.macs == sum(op.macs for op in measured.ops) > 0


def test_person_detect_vela_artefact():
    """A Vela 3.11 artefact for U55-256 (no source model): it runs, deterministically, and its stream is checked
    against the configuration it was compiled for."""
    model = shared_model("tflm_person_detect_vela_u55_256.tflite")
    parsed = vela_tflite.parse(model)
    inputs = vela_tflite.seeded_inputs(parsed, 0)
    first, result = vela_tflite.execute(parsed, inputs, "ethos-u55-256")
    again = run_vela_tflite(model, inputs, "ethos-u55-256")
    assert first[0].shape == (1, 2) and first[0].dtype == np.int8
    assert np.array_equal(first[0], again[0])
    assert result.macs > 7_000_000 and {op.kind for op in result.ops} >= {"CONV", "DEPTHWISE"}
    outputs = {tuple(run_vela_tflite(model, vela_tflite.seeded_inputs(parsed, s), "ethos-u55-256")[0].ravel())
               for s in range(1, 4)}
    assert len(outputs) > 1  # the output depends on the input
    with pytest.raises(SimulatorError, match="compiled for Ethos-U55 with 256 MACs/cycle"):
        run_vela_tflite(model, inputs, "ethos-u55-128")


@pytest.mark.parametrize("accelerator", ["ethos-u55-64", "ethos-u65-256"])
def test_every_wait_vela_emits_is_needed(accelerator, vela):
    """Vela places a wait only where its model of the queues sees a conflict; with any one removed, the race check
    (sim/hazards.py, which every execution here applies) must see the race: its model is no weaker than Vela's."""
    model = shared_model(MODELS["kws"][0])
    parsed = vela_tflite.parse(vela("kws", model, accelerator, "Performance"))
    commands = load(parsed.command_stream, find_accelerator(accelerator))
    waits = [c.index for c in commands if c.opcode.name in ("NPU_OP_DMA_WAIT", "NPU_OP_KERNEL_WAIT")]
    assert len(waits) >= 2
    inputs, _ = _case("kws", 0)
    for index in waits:
        words = [word for c in commands if c.index != index for word in c.words()]
        with pytest.raises(SimulatorError, match=r"may still be (reading|writing) \(no wait completes it\)"):
            vela_tflite.execute(dataclasses.replace(parsed, command_stream=words), inputs, accelerator)
