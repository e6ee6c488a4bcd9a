"""Command streams from Vela's API, run in the simulator, equal LiteRT exactly: single ops on every U55
configuration, the MLPerf Tiny NPU subgraphs, and sweeps over convolution and pooling parameters."""
import numpy as np
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from ethosu_tvm.codegen import compile_npu_graph
from ethosu_tvm.frontend.importer import from_tflite
from ethosu_tvm.legalize import legalize
from ethosu_tvm.partition import partition_for_ethosu
from ethosu_tvm.target import EthosuTarget
from ethosu_tvm.sim import Simulator
from ethosu_tvm.sim.regfile import RegisterFile
from ethosu_tvm.sim.registers import Kind
from ethosu_tvm.testing import models, shared_model
from ethosu_tvm.testing.reference import random_inputs, reference_runner, run_litert

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
    "prelu": dict(in_zp=20, out_zp=-7),
    "squared_difference": dict(in2_scale=0.05, in2_zp=9),
}


@pytest.mark.parametrize("accelerator", ACCELERATORS)
@pytest.mark.parametrize("op", NPU_OPS)
def test_single_op_on_every_configuration(op, accelerator):
    assert_model_exact(models.make(op, seed=11, **NPU_OPS[op]), accelerator)


@pytest.mark.parametrize("accelerator", ACCELERATORS)
@pytest.mark.parametrize("name", ["resnet_block", "inverted_residual"])
def test_factory_graphs(name, accelerator):
    assert_model_exact(models.make_graph(name, seed=2), accelerator)


# (input shape, pool, stride, input zero point) of SAME-padded AVERAGE_POOL_2Ds: even and odd padding, a kernel of
# the largest padded size, a deep IFM (several depth blocks).
PADDED_AVERAGE_POOLS = (((1, 8, 8, 8), (3, 3), (1, 1), 0), ((1, 9, 9, 8), (3, 3), (2, 2), -5),
                        ((1, 6, 7, 20), (2, 5), (1, 2), 100), ((1, 10, 10, 3), (8, 8), (3, 3), -128),
                        ((1, 5, 11, 70), (4, 2), (2, 1), 17))


def _average_pool_scaling(artifact) -> list[tuple[int, int, int]]:
    """(OFM_PRECISION scale_mode, OFM_SCALE multiplier, shift) at each AVERAGE pooling command of the stream."""
    regs, found = RegisterFile(), []
    for command in Simulator(artifact.accelerator).commands(artifact.driver_payload):
        if command.opcode.kind is not Kind.OPERATION:
            regs.set(command)
        elif command.opcode.name == "NPU_OP_POOL" and command.param == 1:
            found.append((regs.field("OFM_PRECISION", "scale_mode"), regs.raw("OFM_SCALE"),
                          regs.field("OFM_SCALE", "shift")))
    return found


@pytest.mark.parametrize("accelerator", ACCELERATORS)
@pytest.mark.parametrize("in_shape,pool,stride,in_zp", PADDED_AVERAGE_POOLS, ids=str)
def test_padded_average_pool_uses_global_scaling(in_shape, pool, stride, in_zp, accelerator):
    """Encoded as Vela's compiler does (global scale mode, OFM_SCALE 1: the NPU divides by the valid taps), not as
    Vela's API would (per-channel mode without a scale stream, which the simulator refuses)."""
    model = models.make("avg_pool2d", seed=5, in_shape=in_shape, pool=pool, stride=stride, padding="SAME",
                        in_zp=in_zp)
    assert_model_exact(model, accelerator)
    _, (artifact,) = compile_model(model, accelerator)
    scaling = _average_pool_scaling(artifact)
    assert scaling and set(scaling) == {(1, 1, 0)}


BINARY_OPS = ("add", "sub", "mul", "minimum", "maximum")
# (feature map, constant) shapes: per channel, per row, rank 3, whole, one element; constants the feature map
# broadcasts against (the constant is then the IFM)
CONSTANT_SHAPES = (((1, 8, 8, 8), (8,)), ((1, 8, 8, 8), (1, 8, 1, 1)), ((1, 8, 8, 8), (8, 1, 8)),
                   ((1, 8, 8, 8), (1, 8, 8, 8)), ((1, 8, 8, 8), (1, 1, 1, 1)), ((1, 1, 1, 8), (1, 8, 8, 8)),
                   ((1, 8, 1, 8), (1, 8, 8, 8)), ((8,), (4, 6, 8)))


@pytest.mark.parametrize("accelerator", ACCELERATORS)
@pytest.mark.parametrize("side", ("lhs", "rhs"))
@pytest.mark.parametrize("op", BINARY_OPS)
def test_binary_op_with_a_constant_operand(op, side, accelerator):
    """A constant operand: a tensor in the constant region (IFM2, broadcast by the NPU; the IFM when the feature map
    is the operand that broadcasts) or the IFM2 scalar, operands reversed as needed; ADD/SUB/MUL rescale it from its
    own quantization."""
    quant = {} if op in ("minimum", "maximum") else dict(in2_scale=0.037, in2_zp=11)
    for seed, (in_shape, shape) in enumerate(CONSTANT_SHAPES):
        assert_model_exact(models.make(op, seed, in_shape=in_shape, **{f"constant_{side}": shape}, **quant),
                            accelerator)


# int16 forms against the (1, 8, 8, 8) default: equal shapes, broadcast IFM2, broadcast first operand (reversed),
# a constant tensor, a scalar on the left
INT16_BINARY = (dict(), dict(in2_shape=(1, 1, 1, 8)), dict(in_shape=(1, 8, 1, 8), in2_shape=(1, 8, 8, 8)),
                dict(constant_rhs=(8,)), dict(constant_lhs=()))


@pytest.mark.parametrize("accelerator", ACCELERATORS)
@pytest.mark.parametrize("op", BINARY_OPS)
def test_int16_binary_op(op, accelerator):
    """int16 ADD/SUB (TFLite's 15-bit operand shift), MUL (its float32 multiplier), MINIMUM, MAXIMUM."""
    quant = {} if op in ("minimum", "maximum") else dict(in2_scale=3e-4)
    for seed, params in enumerate(INT16_BINARY):
        assert_model_exact(models.make(op, seed, dtype="int16", **quant, **params), accelerator)


# PRELU variants: input zero points at both ends (no negative branch / no positive branch), rank 2, odd shapes
PRELUS = (dict(in_zp=-128), dict(in_zp=127, out_zp=30), dict(in_shape=(1, 16)),
          dict(in_shape=(1, 5, 7, 3), alpha_scale=0.02, out_scale=0.01), dict(in_shape=(1, 3, 9, 40), in_zp=-60))


@pytest.mark.parametrize("accelerator", ACCELERATORS)
@pytest.mark.parametrize("params", PRELUS, ids=str)
def test_prelu(params, accelerator):
    """PRELU as a table, MIN, MUL by the alpha constant and MAX, bit-exact with LiteRT's reference."""
    assert_model_exact(models.make("prelu", 8, **params), accelerator)


# SQUARED_DIFFERENCE variants: broadcasting either operand, a coarse output, rank 2, a deep IFM
SQUARED_DIFFERENCES = (dict(in_shape=(1, 8, 1, 8), in2_shape=(1, 8, 8, 8)), dict(in2_shape=(1, 1, 1, 8)),
                       dict(in_zp=-100, in2_zp=90, out_scale=0.5, out_zp=-100), dict(in_shape=(1, 16), in2_scale=0.007),
                       dict(in_shape=(1, 3, 5, 70), in_scale=0.1, in2_scale=0.001))


@pytest.mark.parametrize("accelerator", ACCELERATORS)
@pytest.mark.parametrize("params", SQUARED_DIFFERENCES, ids=str)
def test_squared_difference(params, accelerator):
    """Five operations on 32-bit intermediates, each a step of TFLite's arithmetic, bit-exact with LiteRT."""
    assert_model_exact(models.make("squared_difference", 9, **params), accelerator)


@pytest.mark.parametrize("accelerator", ACCELERATORS)
@pytest.mark.parametrize("name", [
    "mlperf_tiny_kws_dscnn_int8.tflite",
    "mlperf_tiny_vww_mobilenetv1_96_int8.tflite",
    "mlperf_tiny_ic_resnet8_int8.tflite",
    "mlperf_tiny_ad_fc_autoencoder_int8.tflite",
])
def test_mlperf_model_on_the_npu(name, accelerator):
    """The whole model, its SOFTMAX included, is one NPU subgraph, bit-exact with LiteRT."""
    assert_model_exact(shared_model(name), accelerator)


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


REDUCTION_SWEEP = settings(max_examples=20, deadline=None)


@st.composite
def reduced_axes(draw):
    """A shape (4-D ones of batch 1) and some of its axes, maybe negative, maybe repeated."""
    rank = draw(st.integers(1, 4))
    shape = tuple(draw(st.lists(st.integers(1, 7), min_size=rank, max_size=rank)))
    shape = (1,) + shape[1:] if rank == 4 else shape
    axes = draw(st.lists(st.integers(-rank, rank - 1), min_size=1, max_size=rank))
    return shape, tuple(axes)


@REDUCTION_SWEEP
@given(op=st.sampled_from(["sum", "sum-int16", "mean", "reduce_max", "reduce_min"]), shape_axes=reduced_axes(),
       keep_dims=st.booleans(), in_zp=st.integers(-128, 127), out_zp=st.integers(-128, 127),
       ratio=st.floats(0.05, 20.0), accelerator=accelerators, seed=st.integers(0, 1000))
@example(op="reduce_min", shape_axes=((2, 1), (1,)), keep_dims=False, in_zp=0, out_zp=0, ratio=1.0,
         accelerator="ethos-u55-32", seed=0)  # a table copy that reshapes: (1, 1, 2, 1) → (1, 1, 1, 2)
def test_reduction_sweep(op, shape_axes, keep_dims, in_zp, out_zp, ratio, accelerator, seed):
    """Reductions over any axes, each one NPU subgraph, equal to TFLite's kernels (SUM: TFLite Micro's, see
    `reference_runner`); SUM and MEAN with output scales `ratio` times the input's (multipliers above and below 1)."""
    op, _, dtype = op.partition("-")
    (shape, axes), params = shape_axes, dict(in_shape=shape_axes[0], axis=shape_axes[1], keep_dims=keep_dims)
    if dtype:  # TFLite's int16 reductions take zero points 0
        params.update(dtype=dtype, in_scale=1 / 4096, out_scale=ratio / 4096)
    elif op in ("sum", "mean"):
        params.update(in_scale=0.05, in_zp=in_zp, out_scale=0.05 * ratio, out_zp=out_zp)
    else:
        params.update(in_zp=in_zp)
    assert_model_exact(models.make(op, seed=seed, **params), accelerator, reference=reference_runner(op))


@REDUCTION_SWEEP
@given(shape=st.lists(st.integers(1, 9), min_size=0, max_size=3), depth=st.integers(1, 127),
       accelerator=accelerators, seed=st.integers(0, 1000))
def test_arg_max_sweep(shape, depth, accelerator, seed):
    """ARG_MAX over the last axis of 1- to 4-D inputs (batch 1), int32 indices, equal to LiteRT's."""
    in_shape = ((1,) + tuple(shape[1:]) if len(shape) == 3 else tuple(shape)) + (depth,)
    assert_model_exact(models.make("arg_max", seed=seed, in_shape=in_shape), accelerator)


@pytest.mark.parametrize("accelerator", ["ethos-u55-128", "ethos-u55-256"])
def test_system_config_steers_block_choice_and_stays_exact(accelerator):
    """A weight-heavy 32x32x16 convolution: with its weights in flash (Shared_Sram) the block choice re-reads them
    from fewer OFM blocks than with constants in SRAM (Sram_Only), where compute decides; every build is exact."""
    model = models.make("conv2d", seed=4, in_shape=(1, 32, 32, 16), out_channels=16)
    mod, _ = partition_for_ethosu(from_tflite(model), accelerator)
    (graph,) = legalize(mod)
    blocks_hw = {}
    for system_config in ("Ethos_U55_High_End_Embedded", "Ethos_U55_Deep_Embedded"):
        for memory_mode in ("Shared_Sram", "Sram_Only"):
            target = EthosuTarget(accelerator, system_config=system_config, memory_mode=memory_mode)
            artifact = compile_npu_graph(graph, target)
            (op,) = artifact.ops
            blocks_hw[system_config, memory_mode] = -(-32 // op.block_config[0]) * -(-32 // op.block_config[1])
            for seed in (0, 1):
                inputs = random_inputs(model, seed)
                (got,), (ref,) = run_artifact(artifact, inputs), run_litert(model, inputs)
                assert np.array_equal(got.reshape(ref.shape), ref)
    for system_config in ("Ethos_U55_High_End_Embedded", "Ethos_U55_Deep_Embedded"):
        assert blocks_hw[system_config, "Shared_Sram"] < blocks_hw[system_config, "Sram_Only"]
