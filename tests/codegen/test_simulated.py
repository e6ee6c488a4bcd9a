"""Command streams from Vela's API, run in the simulator, equal LiteRT exactly: single ops on every U55
configuration, the MLPerf Tiny NPU subgraphs, and sweeps over convolution and pooling parameters."""
import numpy as np
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from ethosu_tvm.arch import ACCELERATORS as ALL_ACCELERATORS, find_accelerator
from ethosu_tvm.arch.system import PRODUCT_SYSTEM_CONFIGS
from ethosu_tvm.codegen import compile_npu_graph
from ethosu_tvm.frontend.importer import from_tflite
from ethosu_tvm.legalize import legalize
from ethosu_tvm.partition import partition_for_ethosu
from ethosu_tvm.partition.checks.pooling import MAX_INT16_AVG_TAPS
from ethosu_tvm.target import EthosuTarget
from ethosu_tvm.sim import Simulator, vela_compile, vela_tflite
from ethosu_tvm.sim.operation import decode
from ethosu_tvm.sim.quant import Rounding, apply_scale
from ethosu_tvm.sim.regfile import RegisterFile
from ethosu_tvm.sim.vela_compile import compile_model as compile_vela
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
    "relu_0_to_1": dict(in_scale=0.01, in_zp=-20),
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


# TRANSPOSE_CONV variants: strides 2 (upscaled IFM), 1 and 1x2 over one row, SAME and VALID, even and odd kernels,
# with and without bias, wide and deep feature maps, per-tensor weights, zero points away from 0
TRANSPOSE_CONVS = (
    dict(), dict(padding="VALID"), dict(kernel=(4, 4), bias=False), dict(kernel=(2, 2), padding="VALID"),
    dict(kernel=(5, 3), in_shape=(1, 5, 7, 3), out_channels=5), dict(stride=(1, 1)),
    dict(stride=(1, 1), padding="VALID", kernel=(2, 3), bias=False),
    dict(in_shape=(1, 4, 12, 24), out_channels=40, per_channel=False),
    dict(in_shape=(1, 1, 1, 16), kernel=(2, 2), out_channels=3), dict(in_zp=-60, out_zp=20),
    dict(in_shape=(1, 1, 8, 4), kernel=(1, 3), stride=(1, 2)),
    dict(in_shape=(1, 1, 8, 4), kernel=(1, 4), stride=(1, 2), padding="VALID", bias=False),
)


@pytest.mark.parametrize("accelerator", ACCELERATORS)
@pytest.mark.parametrize("params", TRANSPOSE_CONVS, ids=str)
def test_transpose_conv(params, accelerator):
    """A stride-1 convolution with the kernel reversed, over the IFM or (stride 2) the IFM the NPU upscales with
    zeros, bit-exact with LiteRT's reference TRANSPOSE_CONV."""
    assert_model_exact(models.make("transpose_conv", 6, **params), accelerator, seeds=(0, 1, 2))


def _convolutions(accelerator: str, payload) -> list[tuple]:
    """(kernel, padding, IFM upscaling, OFM shape) of each convolution command of a stream, as the simulator
    decodes them."""
    regs, found = RegisterFile(), []
    for command in Simulator(accelerator).commands(payload):
        if command.opcode.kind is not Kind.OPERATION:
            regs.set(command)
        elif command.opcode.name == "NPU_OP_CONV":
            op = decode(regs, command)
            found.append((op.kernel, op.padding, op.upscale, op.ofm.shape))
    return found


@pytest.mark.parametrize("params", (dict(), dict(kernel=(4, 4), padding="VALID"),
                                    dict(in_shape=(1, 1, 8, 4), kernel=(1, 3), stride=(1, 2))), ids=str)
def test_transpose_conv_is_the_convolution_vela_programs(params, tmp_path):
    """A TRANSPOSE_CONV of stride 2 (or 1x2 over one row): the same kernel, stride 1, padding around the upscaled IFM,
    TRANSPOSE upscaling and OFM in our stream as in Vela's."""
    accelerator = "ethos-u55-128"
    model = models.make("transpose_conv", 0, **params)
    _, (artifact,) = compile_model(model, accelerator)
    (tmp_path / "model.tflite").write_bytes(model)
    vela_model = vela_tflite.parse(compile_vela(tmp_path / "model.tflite", accelerator, "Performance", tmp_path))
    ours = _convolutions(accelerator, artifact.driver_payload)
    assert len(ours) == 1 and ours[0][2] == "TRANSPOSE"
    assert ours == _convolutions(accelerator, vela_model.command_stream)


@pytest.mark.parametrize("accelerator", ACCELERATORS)
@pytest.mark.parametrize("name", ["resnet_block", "inverted_residual"])
def test_factory_graphs(name, accelerator):
    assert_model_exact(models.make_graph(name, seed=2), accelerator)


# (input shape, pool, stride, input zero point) of SAME-padded AVERAGE_POOL_2Ds: even and odd padding, a kernel of
# the largest padded size, a deep IFM (several depth blocks).
PADDED_AVERAGE_POOLS = (((1, 8, 8, 8), (3, 3), (1, 1), 0), ((1, 9, 9, 8), (3, 3), (2, 2), -5),
                        ((1, 6, 7, 20), (2, 5), (1, 2), 100), ((1, 10, 10, 3), (8, 8), (3, 3), -128),
                        ((1, 5, 11, 70), (4, 2), (2, 1), 17))


def _pool_registers(accelerator: str, stream) -> list[tuple[int, ...]]:
    """(POOL mode, ACTIVATION function, OFM_PRECISION scale_mode, OFM_SCALE multiplier, shift) at each POOL command."""
    regs, found = RegisterFile(), []
    for command in Simulator(accelerator).commands(stream):
        if command.opcode.kind is not Kind.OPERATION:
            regs.set(command)
        elif command.opcode.name == "NPU_OP_POOL":
            found.append((command.param, regs.field("ACTIVATION", "function"),
                          regs.field("OFM_PRECISION", "scale_mode"), regs.raw("OFM_SCALE"),
                          regs.field("OFM_SCALE", "shift")))
    return found


def _average_pool_scaling(artifact) -> list[tuple[int, int, int]]:
    """(OFM_PRECISION scale_mode, OFM_SCALE multiplier, shift) at each AVERAGE pooling command of the stream."""
    return [fields[2:] for fields in _pool_registers(artifact.accelerator, artifact.driver_payload) if fields[0] == 1]


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


# int16 pools: padded and unpadded windows, strides, a fused activation, global averages up to 22x22 = 484 taps
# (the unpadded int16 limit is 504; large windows run as depthwise convolutions on small configurations)
INT16_POOLS = (
    ("max_pool2d", dict()),
    ("max_pool2d", dict(pool=(3, 3), stride=(2, 2), padding="SAME", in_shape=(1, 9, 9, 8), activation="RELU")),
    ("avg_pool2d", dict()),
    ("avg_pool2d", dict(pool=(3, 3), stride=(1, 1), padding="SAME", in_shape=(1, 7, 9, 5))),
    ("avg_pool2d", dict(pool=(3, 2), stride=(2, 3), in_shape=(1, 11, 13, 6), activation="RELU6")),
    ("avg_pool2d", dict(pool=(16, 16), stride=(1, 1), in_shape=(1, 16, 16, 24))),
    ("avg_pool2d", dict(pool=(22, 22), stride=(1, 1), in_shape=(1, 22, 22, 3))),
)


@pytest.mark.parametrize("accelerator", ACCELERATORS)
@pytest.mark.parametrize("case", range(len(INT16_POOLS)))
def test_int16_pooling(case, accelerator):
    op, params = INT16_POOLS[case]
    assert_model_exact(models.make(op, case, dtype="int16", **params), accelerator, seeds=(0, 1, 2))


def test_int16_average_scale_limit():
    """The 32-bit 1/N scale of an unpadded average pool equals TFLite's rounded division on every int16 window
    sum up to MAX_INT16_AVG_TAPS taps, and no longer one tap beyond (why partitioning stops there)."""

    def exact(taps: int) -> bool:
        k = (taps - 1).bit_length()
        sums = np.arange(-32768 * taps, 32767 * taps + 1, dtype=np.int64)
        divided = np.where(sums > 0, (sums + taps // 2) // taps, -((taps // 2 - sums) // taps))
        scale = ((1 << (31 + k)) + (1 << k)) // taps
        return np.array_equal(apply_scale(sums, scale, 31 + k, Rounding.TFL), divided)

    assert exact(MAX_INT16_AVG_TAPS) and exact(484) and not exact(MAX_INT16_AVG_TAPS + 1)


@pytest.mark.parametrize("accelerator", ACCELERATORS)
@pytest.mark.parametrize("out_scale", (3e-3, 1e-5, 7.7e-7, 2.0))
def test_int16_quantize_every_value(out_scale, accelerator):
    """int16 QUANTIZE (a scaled 1x1 average pool) on all 65536 inputs, from an effective scale of 5e-4 (TFLite's
    right shift) to 1299 (its left shift by 11)."""
    every = np.arange(-32768, 32768, dtype=np.int16).reshape(1, 256, 256, 1)
    model = models.make("quantize", 0, dtype="int16", in_shape=every.shape, in_scale=1e-3, out_scale=out_scale)
    report, (artifact,) = compile_model(model, accelerator)
    assert report.counts() == {"ethos-u": 1}
    assert np.array_equal(run_artifact(artifact, [every])[0].reshape(every.shape), run_litert(model, [every])[0])


@pytest.mark.parametrize("accelerator", ACCELERATORS)
@pytest.mark.parametrize("op", ("tanh", "logistic"))
def test_int16_tanh_logistic_every_value(op, accelerator):
    """int16 TANH and LOGISTIC (the NPU's built-in functions) on all 65536 inputs, for power-of-two input scales
    (TFLite's special case for tanh at 2^-12 and 2^-11) and others, up to a multiplier just below 2^16."""
    every = np.arange(-32768, 32768, dtype=np.int16).reshape(1, 256, 256, 1)
    for in_scale in (2.0**-12, 2.0**-11, 2.0**-8, 1e-4, 3.1e-4, 1e-3, 0.05, 5.3):
        model = models.make(op, 0, dtype="int16", in_shape=every.shape, in_scale=in_scale)
        report, (artifact,) = compile_model(model, accelerator)
        assert report.counts() == {"ethos-u": 1}
        got = run_artifact(artifact, [every])[0].reshape(every.shape)
        assert np.array_equal(got, run_litert(model, [every])[0]), in_scale


# int16 MEAN over height and width: equal and unequal scales (TFLite requantizes either way), right and left shifts,
# a 64x64 window (4096 values), no kept dimensions
INT16_MEANS = (dict(), dict(in_shape=(1, 7, 9, 5), out_scale=0.05), dict(in_shape=(1, 23, 23, 3), in_scale=2.0**-11),
               dict(in_shape=(1, 64, 64, 2), out_scale=1e-5), dict(in_shape=(1, 6, 6, 4), in_scale=2.0**-11,
                                                                   out_scale=1e-7),
               dict(in_shape=(1, 5, 7, 3), keep_dims=False))


@pytest.mark.parametrize("accelerator", ACCELERATORS)
@pytest.mark.parametrize("case", range(len(INT16_MEANS)))
def test_int16_mean(case, accelerator):
    """A depthwise sum into 32 bits, then a MUL by TFLite's multiplier with 1/count folded in."""
    assert_model_exact(models.make("mean", case, dtype="int16", **INT16_MEANS[case]), accelerator, seeds=(0, 1, 2))


@pytest.mark.parametrize("op, in_scale", (("tanh", 2.0**-11), ("tanh", 3.1e-4), ("logistic", 2.0**-12),
                                          ("logistic", 0.05), ("quantize", 2e-4)))
def test_int16_function_encoding_is_velas(op, in_scale, tmp_path):
    """int16 TANH, LOGISTIC and QUANTIZE: the same AVERAGE pool, function and global OFM_SCALE as Vela's compiler
    emits for the model."""
    model = models.make(op, 0, dtype="int16", in_scale=in_scale)
    path = tmp_path / f"{op}.tflite"
    path.write_bytes(model)
    velas = vela_tflite.parse(vela_compile.compile_model(path, "ethos-u55-128", "Performance", tmp_path / "out"))
    _, (artifact,) = compile_model(model, "ethos-u55-128")
    ours = _pool_registers("ethos-u55-128", artifact.driver_payload)
    assert len(ours) == 1 and ours == _pool_registers("ethos-u55-128", velas.command_stream)


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


# DEPTHWISE_CONV_2D with a depth multiplier over several channels: up to 8, one convolution with block-diagonal
# weights; beyond, the channels repeated by a 1x1 convolution, then a depthwise convolution. Per-channel scales far
# apart (output channel c·M + m keeps its own), strides, dilation, VALID, int16.
DEPTH_MULTIPLIERS = {
    "block-diagonal": dict(in_shape=(1, 7, 6, 4), depth_multiplier=2),
    "block-diagonal-scales": dict(in_shape=(1, 6, 6, 3), depth_multiplier=4, stride=(2, 2), activation="RELU6",
                                  w_scales=np.geomspace(0.001, 0.05, 12)),
    "block-diagonal-8": dict(in_shape=(1, 5, 9, 8), depth_multiplier=3, kernel=(3, 5), in_zp=-60, out_zp=30),
    "block-diagonal-per-tensor": dict(in_shape=(1, 6, 5, 5), depth_multiplier=2, per_channel=False),
    "repeated": dict(in_shape=(1, 7, 6, 9), depth_multiplier=2),
    "repeated-scales": dict(in_shape=(1, 8, 8, 12), depth_multiplier=3, w_scales=np.geomspace(0.05, 0.0005, 36)),
    "repeated-dilated-valid": dict(in_shape=(1, 11, 10, 16), depth_multiplier=2, dilation=(2, 2), padding="VALID"),
    "int16-block-diagonal": dict(dtype="int16", in_shape=(1, 6, 7, 3), depth_multiplier=3, stride=(2, 1)),
    "int16-repeated": dict(dtype="int16", in_shape=(1, 5, 6, 10), depth_multiplier=2, activation="RELU"),
}


@pytest.mark.parametrize("accelerator", ACCELERATORS)
@pytest.mark.parametrize("case", DEPTH_MULTIPLIERS)
def test_depth_multiplier_on_several_channels(case, accelerator):
    assert_model_exact(models.make("depthwise_conv2d", 7, **DEPTH_MULTIPLIERS[case]), accelerator)


SWEEP = settings(max_examples=40, deadline=None)
accelerators = st.sampled_from(tuple(ALL_ACCELERATORS))


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


@settings(max_examples=30, deadline=None)
@given(h=st.integers(1, 9), w=st.integers(1, 9), c=st.integers(2, 20), multiplier=st.integers(2, 4),
       kernel=st.tuples(st.integers(1, 4), st.integers(1, 4)), stride=st.tuples(st.integers(1, 3), st.integers(1, 3)),
       dilation=st.tuples(st.integers(1, 2), st.integers(1, 2)), padding=st.sampled_from(["SAME", "VALID"]),
       dtype=st.sampled_from(["int8", "int16"]), per_channel=st.booleans(), in_zp=st.integers(-128, 127),
       out_zp=st.integers(-128, 127), accelerator=accelerators, seed=st.integers(0, 1000))
def test_depth_multiplier_sweep(h, w, c, multiplier, kernel, stride, dilation, padding, dtype, per_channel, in_zp,
                                out_zp, accelerator, seed):
    """Both forms (block-diagonal up to 8 channels, repeated beyond), int8 and 16x8 (zero points 0)."""
    if padding == "VALID":
        assume(h >= dilation[0] * (kernel[0] - 1) + 1 and w >= dilation[1] * (kernel[1] - 1) + 1)
    zero_points = dict(in_zp=in_zp, out_zp=out_zp) if dtype == "int8" else {}
    model = models.make("depthwise_conv2d", seed=seed, dtype=dtype, in_shape=(1, h, w, c), kernel=kernel,
                        stride=stride, dilation=dilation, padding=padding, depth_multiplier=multiplier,
                        per_channel=per_channel, **zero_points)
    assert_model_exact(model, accelerator)


@settings(max_examples=20, deadline=None)
@given(h=st.integers(1, 9), w=st.integers(1, 9), c=st.integers(1, 12), out_channels=st.integers(1, 12),
       kernel=st.tuples(st.integers(2, 5), st.integers(2, 5)), stride=st.sampled_from([(1, 1), (2, 2)]),
       padding=st.sampled_from(["SAME", "VALID"]), bias=st.booleans(), in_zp=st.integers(-128, 127),
       out_zp=st.integers(-128, 127), accelerator=accelerators, seed=st.integers(0, 1000))
def test_transpose_conv_sweep(h, w, c, out_channels, kernel, stride, padding, bias, in_zp, out_zp, accelerator,
                              seed):
    """Kernels no smaller than the stride: every SAME and VALID shape is one the NPU takes."""
    model = models.make("transpose_conv", seed=seed, in_shape=(1, h, w, c), out_channels=out_channels,
                        kernel=kernel, stride=stride, padding=padding, bias=bias, in_zp=in_zp, out_zp=out_zp)
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


@settings(max_examples=20, deadline=None)
@given(op=st.sampled_from(["avg_pool2d", "max_pool2d", "mean"]), h=st.integers(1, 22), w=st.integers(1, 22),
       c=st.integers(1, 20), pool=st.tuples(st.integers(1, 8), st.integers(1, 8)),
       stride=st.tuples(st.integers(1, 3), st.integers(1, 3)), window=st.sampled_from(["SAME", "VALID", "GLOBAL"]),
       out_scale=st.floats(1e-5, 1e-2), accelerator=accelerators, seed=st.integers(0, 1000))
def test_int16_pooling_sweep(op, h, w, c, pool, stride, window, out_scale, accelerator, seed):
    """int16 pools (padded windows up to 8x8, unpadded ones up to 22x22 = 484 taps) and MEAN."""
    if op == "mean":
        model = models.make(op, seed=seed, dtype="int16", in_shape=(1, h, w, c), out_scale=out_scale)
    else:
        if window == "VALID":
            assume(h >= pool[0] and w >= pool[1])
        model = models.make(op, seed=seed, dtype="int16", in_shape=(1, h, w, c),
                            pool=(h, w) if window == "GLOBAL" else pool, stride=stride,
                            padding="SAME" if window == "SAME" else "VALID")
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
       ratio=st.one_of(st.just(1.0), st.floats(0.05, 20.0)), accelerator=accelerators, seed=st.integers(0, 1000))
@example(op="reduce_min", shape_axes=((2, 1), (1,)), keep_dims=False, in_zp=0, out_zp=0, ratio=1.0,
         accelerator="ethos-u55-32", seed=0)  # a table copy that reshapes: (1, 1, 2, 1) → (1, 1, 1, 2)
def test_reduction_sweep(op, shape_axes, keep_dims, in_zp, out_zp, ratio, accelerator, seed):
    """Reductions over any axes, each one NPU subgraph, equal to TFLite's kernels (SUM: TFLite Micro's, see
    `reference_runner`); SUM and MEAN with output scales `ratio` times the input's (multipliers above and below 1)."""
    op, _, dtype = op.partition("-")
    shape, axes = shape_axes
    params = dict(in_shape=shape, axis=axes, keep_dims=keep_dims)
    if dtype:  # TFLite's int16 reductions take zero points 0
        params.update(dtype=dtype, in_scale=1 / 4096, out_scale=ratio / 4096)
    elif op in ("sum", "mean"):
        params.update(in_scale=0.05, in_zp=in_zp, out_scale=0.05 * ratio, out_zp=out_zp)
    else:
        params.update(in_zp=in_zp)
    assert_model_exact(models.make(op, seed=seed, **params), accelerator, reference=reference_runner(op))


# A global average as PyTorch exports it: MEAN over height and width keeping the input's quantization. TFLite
# requantizes the centred sum with 1/count folded into its multiplier and rounds twice, so one rounding of
# sum / count (an average pool) differs where the count is no power of two (MobileNetV2's 7x7: 1 LSB in 25 of 1280).
MOBILENET_V2_MEAN = dict(in_shape=(1, 7, 7, 64), in_scale=0.07054788619279861, in_zp=-9,
                         out_scale=0.07054788619279861, out_zp=-9)


@pytest.mark.parametrize("accelerator", ACCELERATORS)
def test_mean_keeping_quantization_on_every_configuration(accelerator):
    assert_model_exact(models.make("mean", seed=3, **MOBILENET_V2_MEAN), accelerator, seeds=(0, 1, 2))


@REDUCTION_SWEEP
@given(h=st.integers(1, 16), w=st.integers(1, 16), c=st.integers(1, 40), zp=st.integers(-128, 127),
       scale=st.floats(1e-3, 1.0), keep_dims=st.booleans(), accelerator=accelerators, seed=st.integers(0, 1000))
def test_mean_keeping_quantization_sweep(h, w, c, zp, scale, keep_dims, accelerator, seed):
    """MEAN over height and width of any window, zero point and scale, the output quantized as the input."""
    model = models.make("mean", seed=seed, in_shape=(1, h, w, c), in_scale=scale, in_zp=zp, out_scale=scale,
                        out_zp=zp, keep_dims=keep_dims)
    assert_model_exact(model, accelerator, seeds=(0, 1, 2))


@REDUCTION_SWEEP
@given(shape=st.lists(st.integers(1, 9), min_size=0, max_size=3), depth=st.integers(1, 127),
       accelerator=accelerators, seed=st.integers(0, 1000))
@pytest.mark.parametrize("op", ("arg_max", "arg_min"))
def test_arg_max_sweep(op, shape, depth, accelerator, seed):
    """ARG_MAX and ARG_MIN over the last axis of 1- to 4-D inputs (batch 1), int32 indices, equal to LiteRT's."""
    in_shape = ((1,) + tuple(shape[1:]) if len(shape) == 3 else tuple(shape)) + (depth,)
    assert_model_exact(models.make(op, seed=seed, in_shape=in_shape), accelerator)


@pytest.mark.parametrize("accelerator", ["ethos-u55-128", "ethos-u55-256", "ethos-u65-256"])
def test_system_config_steers_block_choice_and_stays_exact(accelerator):
    """A weight-heavy 32x32x16 convolution streaming its weights: from a slow flash or DRAM (Shared_Sram, under 4
    bytes per cycle) the block choice re-reads them from fewer OFM blocks than with constants in SRAM (Sram_Only),
    where compute decides, as it does from the U65's faster DRAMs; in every system config of the accelerator's
    product every build, and the default ones (which may copy the weights to SRAM first), is exact."""
    model = models.make("conv2d", seed=4, in_shape=(1, 32, 32, 16), out_channels=16)
    mod, _ = partition_for_ethosu(from_tflite(model), accelerator)
    (graph,) = legalize(mod)
    blocks_hw = {}
    system_configs = PRODUCT_SYSTEM_CONFIGS[find_accelerator(accelerator).product]
    for system_config in system_configs:
        for memory_mode in ("Shared_Sram", "Sram_Only"):
            target = EthosuTarget(accelerator, system_config=system_config, memory_mode=memory_mode)
            streaming = compile_npu_graph(graph, target, buffered=frozenset())
            (op,) = streaming.ops
            blocks_hw[system_config, memory_mode] = -(-32 // op.block_config[0]) * -(-32 // op.block_config[1])
            for artifact in (streaming, compile_npu_graph(graph, target)):
                for seed in (0, 1):
                    inputs = random_inputs(model, seed)
                    (got,), (ref,) = run_artifact(artifact, inputs), run_litert(model, inputs)
                    assert np.array_equal(got.reshape(ref.shape), ref)
    for system_config in system_configs:
        shared, sram_only = blocks_hw[system_config, "Shared_Sram"], blocks_hw[system_config, "Sram_Only"]
        slow = EthosuTarget(accelerator, system_config=system_config).system.bytes_per_cycle(0) < 4
        assert shared < sram_only if slow else shared == sram_only, system_config
