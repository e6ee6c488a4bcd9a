"""`Simulator.check`, the compiler's stream check, rejects what `Simulator.run` rejects, with the same message, but
for the faults of values that it does not compute (it computes no OFM).

Corrupted streams of compiled networks (convolutions, depthwise convolutions, pooling, ADDs, fully connected layers,
weight DMAs, a table lookup): one register or wait nudged (a bit flipped, a small step) or one byte of the constants
changed (weight and scale streams), run on zeroed memory of the planned sizes with the races between DMAs and
kernels checked, as `sim.stream_check` does."""
import dataclasses
import functools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ethosu_tvm.codegen import compile_npu_graphs
from ethosu_tvm.frontend.importer import from_tflite
from ethosu_tvm.legalize import legalize
from ethosu_tvm.partition import partition_for_ethosu
from ethosu_tvm.sim import Simulator, SimulatorError
from ethosu_tvm.sim.registers import Kind
from ethosu_tvm.target import EthosuTarget
from ethosu_tvm.testing import models, shared_model

# Faults of values, which only `run` finds: on zeroed memory they say nothing about the stream.
OF_VALUES = ("the accumulators overflow", "the 32-bit OFM overflows", "the result does not fit the OFM type",
             "shift amounts must be 0..31")
# A weight or scale stream read from bytes the kernels wrote (its base moved onto them, or a kernel's output moved
# onto a weight buffer) reads values: `run` may find its contents' faults where `check`, which writes no OFM, reads
# the bytes as they were; on bytes no kernel wrote, both find the same fault.
CONTENTS = ("mlw decoder aborted", "decodes to", "non-zero values in padding", "a record sets the reserved bits")
# ... and a table lookup (a LUT DMAed into SHRAM, then read by the kernel)
NETWORKS = ("mlperf_tiny_ic_resnet8_int8", "mlperf_tiny_kws_dscnn_int8", "logistic")


@functools.lru_cache(maxsize=None)
def _artifact(name: str):
    model = models.make(name, 0) if name in models.OPS else shared_model(f"{name}.tflite")
    mod, _ = partition_for_ethosu(from_tflite(model), "ethos-u55-128")
    (artifact,) = compile_npu_graphs(legalize(mod), EthosuTarget("ethos-u55-128"))
    return artifact


def _regions(artifact, constants: bytes) -> dict:
    regions = {0: bytearray(constants), 1: bytearray(max(artifact.scratch_size, 1))}
    for binding in artifact.inputs + artifact.outputs:
        size = binding.offset + binding.size
        if len(regions.setdefault(binding.region, bytearray(size))) < size:
            regions[binding.region].extend(bytes(size - len(regions[binding.region])))
    return regions


def _outcome(method, words, artifact, constants: bytes) -> str | None:
    try:
        method(words, _regions(artifact, constants), check_hazards=True)
    except (SimulatorError, OverflowError) as err:
        return str(err)
    return None


def _nudged(command, data) -> tuple[int, ...]:
    """The command with its parameter or payload changed a little."""
    if command.payload is not None and data.draw(st.booleans()):
        step = data.draw(st.sampled_from([-64, -16, -1, 1, 16, 64, 1 << 12]))
        return dataclasses.replace(command, payload=(command.payload + step) % (1 << 32)).words()
    return dataclasses.replace(command, param=command.param ^ (1 << data.draw(st.integers(0, 15)))).words()


@pytest.mark.parametrize("name", NETWORKS)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_check_rejects_what_run_rejects(name, data):
    artifact = _artifact(name)
    simulator = Simulator(artifact.accelerator)
    commands = simulator.commands(artifact.driver_payload)
    constants = bytearray(artifact.constants)
    setters = [i for i, c in enumerate(commands)
               if c.opcode.kind is not Kind.OPERATION or c.opcode.name in ("NPU_OP_DMA_WAIT", "NPU_OP_KERNEL_WAIT")]
    words = [list(c.words()) for c in commands]
    if data.draw(st.booleans()):
        index = data.draw(st.sampled_from(setters))
        words[index] = list(_nudged(commands[index], data))
    else:
        constants[data.draw(st.integers(0, len(constants) - 1))] ^= 1 << data.draw(st.integers(0, 7))
    stream = [w for command in words for w in command]
    ran = _outcome(simulator.run, stream, artifact, bytes(constants))
    checked = _outcome(simulator.check, stream, artifact, bytes(constants))
    if ran is not None and any(fault in ran for fault in OF_VALUES):
        assert checked is None, (ran, checked)
    elif ran is not None and any(fault in ran for fault in CONTENTS):
        assert checked in (None, ran), (ran, checked)
    else:
        assert checked == ran


@pytest.mark.parametrize("name", NETWORKS)
def test_check_passes_the_compiled_stream(name):
    artifact = _artifact(name)
    simulator = Simulator(artifact.accelerator)
    assert _outcome(simulator.check, artifact.driver_payload, artifact, artifact.constants) is None


def _kws_faults() -> dict:
    """Single faults of KWS's stream, each a function editing its command words and constants in place: the first
    convolution's weight stream (read from the constants) and its scale stream, their first 16 bytes set to 0xff;
    the last weight stream 16 bytes shorter; the last DMA out of bounds; the first and the last DMA wait waiting
    for none (a race)."""
    commands = Simulator("ethos-u55-128").commands(_artifact("mlperf_tiny_kws_dscnn_int8").driver_payload)
    names = [c.opcode.name for c in commands]
    conv, first_wait = names.index("NPU_OP_CONV"), names.index("NPU_OP_DMA_WAIT")

    def last(name, before=len(commands)):
        return max(i for i, n in enumerate(names[:before]) if n == name)

    assert commands[last("WEIGHT_REGION", conv)].param == 0 and conv < first_wait < last("WEIGHT_LENGTH")

    def edit(index, **changes):
        command = dataclasses.replace(commands[index], **changes)
        return lambda words, constants: words.__setitem__(index, command.words())

    def spoil(base):
        start = commands[last(base, conv)].value
        return lambda words, constants: constants.__setitem__(slice(start, start + 16), b"\xff" * 16)

    return {"weights": spoil("WEIGHT_BASE"), "its scales": spoil("SCALE_BASE"),
            "later weights": edit(last("WEIGHT_LENGTH"), payload=commands[last("WEIGHT_LENGTH")].payload - 16),
            "later DMA": edit(last("DMA0_LEN"), payload=1 << 24),
            "race": edit(first_wait, param=1), "later race": edit(last("NPU_OP_DMA_WAIT"), param=1)}

@pytest.mark.parametrize("first,then", [("weights", "its scales"), ("weights", "later weights"),
                                        ("weights", "later DMA"), ("weights", "later race"),
                                        ("race", "later weights")])
def test_the_first_of_two_faults_around_a_weight_stream(first, then):
    """`check` waits for its weight streams' decodes after the walk, which goes on meanwhile: it still reports
    what `run` finds first, a weight stream's fault before anything after it, a race before it first."""
    artifact = _artifact("mlperf_tiny_kws_dscnn_int8")
    simulator, faults = Simulator(artifact.accelerator), _kws_faults()

    def outcomes(*names):
        words = [c.words() for c in simulator.commands(artifact.driver_payload)]
        constants = bytearray(artifact.constants)
        for name in names:
            faults[name](words, constants)
        stream = [w for command in words for w in command]
        return [_outcome(method, stream, artifact, bytes(constants)) for method in (simulator.run, simulator.check)]

    alone = outcomes(first)
    assert alone[0] is not None and outcomes(then)[0] not in (None, alone[0])
    assert outcomes(first, then) == [alone[0]] * 2
