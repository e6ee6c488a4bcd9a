"""int8 and int16 SOFTMAX on the NPU, run in the simulator, equal LiteRT's reference kernels: shapes from rows of one
value to rows of thousands on every U55 configuration, every pair of int8 values and every int16 input difference
for typical input scales, sweeps, the int8 stream against the one Vela's own compiler emits, the int16 LUTs against
Vela's, and cascades ending in a softmax."""
import itertools
from pathlib import Path

import numpy as np
import pytest
from ethosu.vela.softmax import SoftMax
from hypothesis import given, settings
from hypothesis import strategies as st

from ethosu_tvm.arch import find_accelerator
from ethosu_tvm.codegen import compile_npu_graph
from ethosu_tvm.codegen.cascade import cascade_proposals, cascade_schedule
from ethosu_tvm.quantization import npu_interpolation_lut, softmax_exp_lut, softmax_int16_tables
from ethosu_tvm.sim import SimulatorError, run_vela_tflite, stream, vela_tflite
from ethosu_tvm.sim.vela_compile import compile_model as vela_compile
from ethosu_tvm.target import EthosuTarget
from ethosu_tvm.testing import models
from ethosu_tvm.testing.reference import random_inputs, run_litert

from sim_support import ACCELERATORS, compile_model, run_artifact
from test_tir_schedules import _graph

SEEDS = (0, 1, 2)
CASES = {  # name -> factory parameters
    "classifier": dict(in_shape=(1, 10), in_scale=0.1),
    "rows_of_one": dict(in_shape=(5, 1), in_scale=0.25),
    "batch_of_rows": dict(in_shape=(7, 12), in_scale=1 / 16, in_zp=-5),
    "3d": dict(in_shape=(3, 4, 9), in_scale=1 / 8, in_zp=20),
    "4d_feature_map": dict(in_shape=(1, 4, 5, 16), in_scale=0.05),
    "beta": dict(in_shape=(2, 30), in_scale=0.2, beta=0.37),
    "long_rows": dict(in_shape=(2, 1000), in_scale=0.3),
    "thousands": dict(in_shape=(1, 4000), in_scale=1 / 4, in_zp=-128),
}


def _assert_exact(model: bytes, accelerator: str, inputs_list):
    report, (artifact,) = compile_model(model, accelerator)
    assert report.counts() == {"ethos-u": 1}
    for inputs in inputs_list:
        (got,), (ref,) = run_artifact(artifact, inputs), run_litert(model, inputs)
        assert np.array_equal(got.reshape(ref.shape), ref)


@pytest.mark.parametrize("accelerator", ACCELERATORS)
@pytest.mark.parametrize("case", CASES)
def test_softmax_on_every_configuration(case, accelerator):
    model = models.make("softmax", seed=4, **CASES[case])
    _assert_exact(model, accelerator, [random_inputs(model, seed) for seed in SEEDS])


PAIRS = np.array(list(itertools.product(range(-128, 128), repeat=2)), dtype=np.int8)


@pytest.mark.parametrize("scale, beta", [(1 / 16, 1.0), (1 / 8, 1.0), (1 / 4, 1.0), (0.05, 1.0), (0.3, 1.0),
                                         (2.0, 1.0), (0.001, 1.0), (0.1, 0.5)])
def test_every_pair_of_values(scale, beta):
    """Rows of two: every (x0, x1) in int8², in two halves of 32768 rows (the NPU's height is at most 65535)."""
    model = models.make("softmax", in_shape=(32768, 2), in_scale=scale, in_zp=0, beta=beta)
    _assert_exact(model, "ethos-u55-64", [[PAIRS[:32768]], [PAIRS[32768:]]])


@settings(max_examples=15, deadline=None)
@given(rows=st.integers(1, 6), depth=st.integers(1, 300), scale=st.floats(0.002, 4.0),
       zero_point=st.integers(-128, 127), beta=st.sampled_from([1.0, 0.5, 2.5]),
       accelerator=st.sampled_from(ACCELERATORS), seed=st.integers(0, 1000))
def test_softmax_sweep(rows, depth, scale, zero_point, beta, accelerator, seed):
    model = models.make("softmax", seed=seed, in_shape=(rows, depth), in_scale=scale, in_zp=zero_point, beta=beta)
    _assert_exact(model, accelerator, [random_inputs(model, seed)])


@pytest.mark.parametrize("scale, beta", [(0.1, 1.0), (1 / 16, 1.0), (0.0713, 0.37), (8.0, 1.0)])
def test_exp_table_is_velas(scale, beta):
    """Our exp table (TFLite's integer exp per input difference) equals the one Vela's compiler builds."""
    scale = float(np.float32(scale))
    assert softmax_exp_lut(beta, scale).tolist() == SoftMax(None).generate_exp_table(beta, np.float32(scale))


# Registers a different memory layout or placement changes (Vela keeps intermediates in NHCWB16 elsewhere).
_PLACEMENT = ("BASE", "STRIDE", "REGION", "BLK", "IB_", "AB_START", "BLOCKDEP", "DMA0", "HEIGHT", "WIDTH0",
              "WAIT", "SCALE_BASE", "SCALE_LENGTH", "WEIGHT")
_NHCWB16 = 1 << 6  # the format bit of the precision registers


def _operations(command_stream, accelerator: str) -> list[tuple[str, int, dict]]:
    """(operation, parameter, registers) of each operation; placement registers and the layout bit left out."""
    found = []
    for command, regs in stream.operations(stream.load(command_stream, find_accelerator(accelerator))):
        values = {name: cmd.value & ~_NHCWB16 if name.endswith("PRECISION") else cmd.value
                  for name, cmd in regs._last.items() if not any(part in name for part in _PLACEMENT)}
        found.append((command.opcode.name, command.value, values))
    return found


def test_stream_is_velas_but_the_doubling(tmp_path: Path):
    """Operation for operation our stream programs what Vela's compiler (its legacy core, which lowers through the
    same API) does, except where Vela doubles the reciprocal by a MUL that overflows when a row's sum is a power of
    two: there we take two MINs and an ADD (saturating, as TFLite does)."""
    accelerator = "ethos-u55-128"
    model = models.make("softmax", in_shape=(3, 10), in_scale=0.25, in_zp=3)
    source = tmp_path / "softmax.tflite"
    source.write_bytes(model)
    compiled = vela_compile(source, accelerator, "Performance", tmp_path / "vela", ("--debug-force-legacy-core",),
                            fresh_process=True)
    velas = _operations(vela_tflite.parse(compiled).command_stream, accelerator)
    _, (artifact,) = compile_model(model, accelerator)
    ours = _operations(artifact.driver_payload, accelerator)
    doubling = [i for i, (name, mode, _) in enumerate(velas) if name == "NPU_OP_ELEMENTWISE" and mode == 0][-2]
    assert ours[:doubling] == velas[:doubling]
    assert [(name, mode) for name, mode, _ in ours[doubling:doubling + 3]] == [("NPU_OP_ELEMENTWISE", 3)] * 2 + [
        ("NPU_OP_ELEMENTWISE", 1)]  # MIN, MIN, ADD
    assert ours[doubling + 3:] == velas[doubling + 1:]


def _cascade_model(follower: bool) -> bytes:
    """conv → conv → softmax over the channels [→ 3x3 conv, which reads the softmax's rows from a ring buffer]."""
    net = models.Net(seed=4)
    x = net.conv2d(net.input((1, 33, 8, 4)), out_channels=16, activation="RELU")
    x = net.softmax(net.conv2d(x, out_channels=8))
    net.output(net.conv2d(x, out_channels=4) if follower else x)
    return net.build()


@pytest.mark.parametrize("follower", [False, True], ids=["softmax_last", "softmax_inside"])
def test_cascades_through_a_softmax_bit_exactly(follower):
    """Every proposal on the cascader's frontier (cascades of three and more parts included, the softmax computed
    row stripe by row stripe, its IFM and OFM in rolling buffers whose stripes wrap) equals LiteRT."""
    _assert_every_proposal_exact(_cascade_model(follower), parts=3)


def _assert_every_proposal_exact(model: bytes, parts: int):
    """Every proposal on ethos-u55-32's frontier, some with cascades of `parts` parts, equals LiteRT."""
    graph = _graph(model)
    target = EthosuTarget("ethos-u55-32")
    proposals = cascade_proposals(graph, target)
    assert any(len(plan.parts) >= parts for proposal in proposals for plan in proposal.cascades)
    inputs = random_inputs(model, 1)
    (expected,) = run_litert(model, inputs)
    for proposal in proposals:
        (got,) = run_artifact(compile_npu_graph(graph, target, cascade_schedule(proposal)), inputs)
        assert np.array_equal(got.reshape(expected.shape), expected), proposal.memory


def test_a_dominant_value_overflows_velas_doubling_but_not_ours(tmp_path: Path):
    """One value far above the rest: the row's exp sum is exactly 2^19, the reciprocal reaches 2.0, and Vela's
    legacy stream doubles it into 2^31, which the 32-bit OFM cannot hold; ours saturates, as TFLite does."""
    model = models.make("softmax", in_shape=(3, 10), in_scale=0.25, in_zp=3)
    inputs = [np.array([[127] + [-128] * 9] * 3, dtype=np.int8)]
    source = tmp_path / "softmax.tflite"
    source.write_bytes(model)
    compiled = vela_compile(source, "ethos-u55-128", "Performance", tmp_path / "vela", ("--debug-force-legacy-core",),
                            fresh_process=True)
    with pytest.raises(SimulatorError, match=r"the 32-bit OFM overflows: value 2147483648"):
        run_vela_tflite(compiled, inputs, "ethos-u55-128")
    _assert_exact(model, "ethos-u55-128", [inputs])


INT16_CASES = {  # name -> factory parameters (int16: zero point 0, output scale 1/32768)
    "classifier": dict(in_shape=(1, 10), in_scale=1 / 1024),
    "rows_of_one": dict(in_shape=(5, 1), in_scale=1 / 256),
    "batch_of_rows": dict(in_shape=(7, 12), in_scale=1 / 2048),
    "3d": dict(in_shape=(3, 4, 9), in_scale=1 / 512),
    "4d_feature_map": dict(in_shape=(1, 4, 5, 16), in_scale=0.001),
    "beta": dict(in_shape=(2, 30), in_scale=1 / 256, beta=0.37),
    "long_rows": dict(in_shape=(2, 1000), in_scale=1 / 2048),
    "thousands": dict(in_shape=(1, 4000), in_scale=1 / 4096),
    "coarse_scale": dict(in_shape=(3, 50), in_scale=0.1, beta=2.0),
}


@pytest.mark.parametrize("accelerator", ACCELERATORS)
@pytest.mark.parametrize("case", INT16_CASES)
def test_int16_softmax_on_every_configuration(case, accelerator):
    model = models.make("softmax", seed=4, dtype="int16", **INT16_CASES[case])
    _assert_exact(model, accelerator, [random_inputs(model, seed) for seed in SEEDS])


DIFFERENCES = np.stack([np.full(65536, 32767), 32767 - np.arange(65536)], axis=1).astype(np.int16)


@pytest.mark.parametrize("scale, beta", [(1 / 2048, 1.0), (1 / 1024, 1.0), (1 / 512, 1.0), (1 / 256, 1.0),
                                         (1 / 4096, 1.0), (0.0137, 1.0), (1 / 1024, 0.5), (1 / 32768, 1.0),
                                         (4.99, 1.0)])  # the largest rescale the NPU takes (left shift 15)
def test_int16_every_input_difference(scale, beta):
    """Rows (32767, 32767 − d) for every difference d in 0..65535, in two halves of 32768 rows: every input of the
    exp table and row sums from 32767 to twice that."""
    model = models.make("softmax", dtype="int16", in_shape=(32768, 2), in_scale=scale, in_zp=0, beta=beta)
    _assert_exact(model, "ethos-u55-128", [[DIFFERENCES[:32768]], [DIFFERENCES[32768:]]])


def test_int16_every_row_sum_normalisation():
    """Row n holds n values at the maximum and the rest at −32768 (whose exps are tiny but not 0): sums of about
    32767·n for n = 1..2000, every CLZ they reach and the reciprocal table across its input range."""
    depth = 2000
    model = models.make("softmax", dtype="int16", in_shape=(depth, depth), in_scale=1 / 2048, in_zp=0)
    lengths = np.arange(1, depth + 1)
    equal = np.where(np.arange(depth)[None, :] < lengths[:, None], 7, -32768).astype(np.int16)
    _assert_exact(model, "ethos-u55-256", [[equal]])


@settings(max_examples=15, deadline=None)
@given(rows=st.integers(1, 6), depth=st.integers(1, 3000), scale=st.floats(1 / 40000, 1.9),
       beta=st.sampled_from([1.0, 0.5, 2.5]), spread=st.integers(1, 32767),
       accelerator=st.sampled_from(ACCELERATORS), seed=st.integers(0, 1000))
def test_int16_softmax_sweep(rows, depth, scale, beta, spread, accelerator, seed):
    """Random rows whose values lie within ± `spread` (narrow spreads make many exps count in the sum); input scale ·
    beta below 5, the constraint's limit."""
    model = models.make("softmax", seed=seed, dtype="int16", in_shape=(rows, depth), in_scale=scale, in_zp=0,
                        beta=beta)
    values = np.random.default_rng(seed).integers(-spread, spread + 1, size=(rows, depth)).astype(np.int16)
    _assert_exact(model, accelerator, [[values]])


def test_int16_luts_are_velas():
    """TFLite's two int16 tables as NPU LUT words (base, slope) are the words Vela's compiler loads for its own
    int16 softmax: the encoding the hardware interpolates."""
    exps, reciprocals = softmax_int16_tables()
    assert npu_interpolation_lut(exps).tolist() == SoftMax.EXP_LUT
    assert npu_interpolation_lut(reciprocals).tolist() == SoftMax.ONE_OVER_ONE_PLUS_X_LUT


def test_int16_matches_velas_stream(tmp_path: Path):
    """Vela's own int16 softmax stream and ours, both in the simulator, give LiteRT's output on the same rows."""
    model = models.make("softmax", dtype="int16", in_shape=(4, 300), in_scale=1 / 1024)
    source = tmp_path / "softmax.tflite"
    source.write_bytes(model)
    compiled = vela_compile(source, "ethos-u55-128", "Performance", tmp_path / "vela", (), fresh_process=True)
    inputs = [random_inputs(model, seed) for seed in SEEDS]
    for each in inputs:
        (velas,), (expected,) = run_vela_tflite(compiled, each, "ethos-u55-128"), run_litert(model, each)
        assert np.array_equal(velas.reshape(expected.shape), expected)
    _assert_exact(model, "ethos-u55-128", inputs)


def test_int16_cascades_through_a_softmax_bit_exactly():
    """int16 PAD → SOFTMAX: every proposal on the cascader's frontier (the softmax computed row stripe by row stripe
    from a rolling buffer in the cascades) equals LiteRT."""
    net = models.Net(seed=4)
    net.output(net.softmax(net.pad(net.input((1, 33, 8, 16), dtype="int16"),
                                   paddings=((0, 0), (1, 1), (0, 0), (0, 0)))))
    _assert_every_proposal_exact(net.build(), parts=2)
