"""Partitioning: offload reports of the MLPerf Tiny models, and U55 constraints sending ops to the host."""
import pytest

import ethosu_tvm
from ethosu_tvm.frontend.importer import from_tflite
from ethosu_tvm.partition import OffloadReport, partition_for_ethosu
from ethosu_tvm.partition.patterns import npu_functions
from ethosu_tvm.testing import models, shared_model

MUST_OFFLOAD = {"CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "AVERAGE_POOL_2D", "ADD", "RESHAPE", "SOFTMAX"}
MLPERF_COUNTS = {
    "mlperf_tiny_kws_dscnn_int8.tflite": {"ethos-u": 13},
    "mlperf_tiny_vww_mobilenetv1_96_int8.tflite": {"ethos-u": 31},
    "mlperf_tiny_ic_resnet8_int8.tflite": {"ethos-u": 16},
    "mlperf_tiny_ad_fc_autoencoder_int8.tflite": {"ethos-u": 10},
}


def _partition(model: bytes, accelerator: str = "ethos-u55-128"):
    return partition_for_ethosu(from_tflite(model), accelerator)


@pytest.mark.parametrize("name, counts", MLPERF_COUNTS.items())
def test_mlperf_offload(name, counts):
    mod, report = _partition(shared_model(name))
    assert report.counts() == counts
    for entry in report.ops:
        assert entry.op in MUST_OFFLOAD and (entry.target, entry.reason) == ("ethos-u", ""), entry
    assert len(npu_functions(mod)) == 1  # the whole network, its softmax included, is one NPU subgraph


def test_report_table_and_package_export():
    assert ethosu_tvm.partition_for_ethosu is partition_for_ethosu
    _, report = _partition(shared_model("mlperf_tiny_kws_dscnn_int8.tflite"), "ethos-u55-32")
    text = str(report).splitlines()
    assert text[0] == "Offload report for ethos-u55-32"
    assert text[1].split() == ["#", "operator", "target", "reason"]
    assert text[2].split() == ["0", "CONV_2D", "ethos-u"]
    assert text[-2].split() == ["12", "SOFTMAX", "ethos-u"]
    assert text[-1] == "ethos-u: 13, host: 0"
    assert isinstance(report, OffloadReport) and report.accelerator == "ethos-u55-32"


def test_data_movement_is_reported_on_the_npu():
    """A model of every data-movement operator the NPU copies: each on the NPU in the report, in one subgraph."""
    net = models.Net(seed=1)
    x = net.input((1, 8, 8, 6))
    a, b = net.split(x, num_splits=2, axis=3)
    y = net.concatenation([net.pad(a), net.padv2(b, paddings=((0, 0), (1, 1), (0, 0), (0, 0)))], axis=2)
    net.output(net.resize_nearest_neighbor(net.transpose(y, perm=(0, 2, 1, 3)), size=(38, 20)))
    c, d = net.split_v(y, size_splits=(6, 4), axis=1)
    net.output(net.slice(c, begin=(0, 0, 0, 0), size=(1, 6, 8, 3)))
    rows = net.strided_slice(d, begin=(0, 1, 0, 0), end=(1, 2, 19, 3), strides=(1, 1, 1, 1), shrink_axis_mask=2)
    net.output(net.unpack(rows, axis=1)[0])
    mod, report = _partition(net.build())
    assert [(e.op, e.target, e.reason) for e in report.ops] == [
        (op, "ethos-u", "") for op in ("SPLIT", "PAD", "PADV2", "CONCATENATION", "TRANSPOSE",
                                       "RESIZE_NEAREST_NEIGHBOR", "SPLIT_V", "SLICE", "STRIDED_SLICE", "UNPACK")]
    assert len(npu_functions(mod)) == 1


def test_reductions_are_reported_on_the_npu():
    """SUM, REDUCE_MAX, REDUCE_MIN, ARG_MAX and MEAN of other forms than an average pool (over axes that are not
    adjacent too): each on the NPU."""
    net = models.Net(seed=1)
    x = net.input((1, 6, 8, 10))
    net.output(net.sum(x, axis=(3,), keep_dims=False))
    net.output(net.reduce_max(x, axis=(2, 3)))
    net.output(net.reduce_min(x, axis=(1,)))
    net.output(net.arg_max(x))
    net.output(net.mean(x, axis=(1, 2), out_scale=0.05, out_zp=3))
    net.output(net.mean(x, axis=(0, 1), keep_dims=False))
    net.output(net.sum(x, axis=(1, 3)))
    _, report = _partition(net.build())
    assert [(e.op, e.target, e.reason) for e in report.ops] == [
        (op, "ethos-u", "") for op in ("SUM", "REDUCE_MAX", "REDUCE_MIN", "ARG_MAX", "MEAN", "MEAN", "SUM")]


def test_constant_weights_stay_with_their_operator():
    """A 16x8 FULLY_CONNECTED the NPU cannot match LiteRT on stays on the host whole: the NPU's TRANSPOSE does not
    take its weights' transpose."""
    mod, report = _partition(models.make("fully_connected", 0, dtype="int16", in_shape=(1, 4096)))
    assert [(e.op, e.target, e.reason) for e in report.ops] == [
        ("FULLY_CONNECTED", "host",
         "the accumulators times the output multiplier could overflow LiteRT's 64-bit product")]
    assert npu_functions(mod) == []


CONSTRAINT_CASES = {
    "softmax with too many rows": (
        models.make("softmax", in_shape=(1, 300, 300, 2)),
        "IFM has 90000 rows (product of all but the last dimension); softmax rows must be at most 65535",
    ),
    "int16 softmax whose rescale overflows": (
        models.make("softmax", dtype="int16", in_scale=4.0, beta=2.0),
        "input scale · beta is 8; int16 softmax needs it below 5 (the rescaled input differences must fit 32 bits)",
    ),

    "conv stride 4": (
        models.make("conv2d", in_shape=(1, 16, 16, 4), stride=(4, 4)),
        "stride HxW is 4x4; stride values must be in the range [1, 3]",
    ),
    "dilated kernel too tall": (
        models.make("conv2d", in_shape=(1, 70, 4, 2), kernel=(3, 1), dilation=(33, 1), padding="VALID"),
        "dilated kernel height is 67; it must be in the range [1, 64]",
    ),
    "dilation beyond 2": (
        models.make("depthwise_conv2d", in_shape=(1, 9, 9, 4), dilation=(1, 3)),
        "dilation 1x3; each must be 1 or 2",
    ),
    "depthwise stride 4": (
        models.make("depthwise_conv2d", in_shape=(1, 16, 16, 4), stride=(4, 4)),
        "stride HxW is 4x4; stride values must be in the range [1, 3]",
    ),
    "padded avg pool over 8": (
        models.make("avg_pool2d", in_shape=(1, 12, 12, 4), pool=(9, 9), stride=(1, 1), padding="SAME"),
        "padded average pool kernel HxW is 9x9; it must be in the range [1, 8]",
    ),
    "int16 average pool over 504 taps": (
        models.make("avg_pool2d", dtype="int16", in_shape=(1, 23, 23, 2), pool=(23, 23), stride=(1, 1)),
        "int16 average pool of 23x23 taps; the NPU's 1/N scale is exact for int16 up to 504 taps",
    ),
    "int16 requantization by 2^15 or more": (
        models.make("quantize", dtype="int16", in_scale=1.0, out_scale=1e-5),
        "effective scale 100000; int16 requantization needs it below 2^15",
    ),
    "int16 tanh input multiplier of 2^16 or more": (
        models.make("tanh", dtype="int16", in_scale=6.0),
        "input scale 6; the int16 function's input multiplier must stay below 2^16",
    ),
    "int16 mean shifting its sum out of 32 bits": (
        models.make("mean", dtype="int16", in_scale=1.0, out_scale=1e-5),
        "MEAN of 64 values with effective scale 100000; TFLite's left shift of the sum by 11 could overflow 32 bits",
    ),
    "int16 mean over width only": (
        models.make("mean", dtype="int16", axis=(2,)),
        "MEAN over axes [2] of a 4-D tensor; only height and width of a 4-D one",
    ),
    "max pool stride 4": (
        models.make("max_pool2d", in_shape=(1, 16, 16, 4), pool=(4, 4), stride=(4, 4)),
        "stride HxW is 4x4; stride values must be in the range [1, 3]",
    ),
    "average pool kernel over 64 high": (
        models.make("avg_pool2d", in_shape=(1, 70, 2, 4), pool=(70, 1), stride=(1, 1)),
        "average pool kernel HxW is 70x1; at most 64 high and 4096 taps are supported",
    ),
    "sum window over 64 high": (
        models.make("sum", in_shape=(1, 70, 2, 4)),
        "reduction window HxW is 70x2; at most 64 high and 4096 elements are supported",
    ),
    "sum of a batch": (
        models.make("sum", dtype="int16", in_shape=(2, 4, 4, 8), axis=(3,)),
        "IFM has batch size 2; the IFM batch size must be 1",
    ),
    "sum beyond the shift range": (
        models.make("sum", in_scale=1.0, out_scale=1e-12),
        "SUM multiplier 1953125008 · 2^(40 − 31); the NPU's right shift must be in the range [0, 63]",
    ),
    "reduce_max view over 65535": (
        models.make("reduce_max", in_shape=(300, 300, 2), axis=(2,)),
        "REDUCE_MAX viewed as (1, 90000, 2, 1); each extent must be in the range [1, 65535]",
    ),
    "reduce_min window over 256 high": (
        models.make("reduce_min", in_shape=(1, 300, 2, 4)),
        "pool kernel height is 300; it must be in the range [1, 256]",
    ),
    "arg_max over 128 values": (
        models.make("arg_max", in_shape=(1, 4, 4, 128)),
        "ARG_MAX over 128 values; the IFM depth must be at most 127",
    ),
    "arg_max over another axis": (
        models.make("arg_max", axis=1),
        "ARG_MAX over axis 1 of a 4-D tensor; only over the last (depth) axis",
    ),
    "batch 2": (
        models.make("add", in_shape=(2, 4, 4, 8)),
        "IFM has batch size 2; the IFM batch size must be 1",
    ),
    "transpose conv stride 3": (
        models.make("transpose_conv", stride=(3, 3)),
        "TRANSPOSE_CONV stride HxW is 3x3; it must be 1x1 or 2x2, or 1x2 with an IFM and kernel height of 1",
    ),
    "transpose conv stride 2x1": (  # Vela's one-row exception is for 1x2 (rows upscaled, but only one read)
        models.make("transpose_conv", in_shape=(1, 8, 1, 4), kernel=(3, 1), stride=(2, 1)),
        "TRANSPOSE_CONV stride HxW is 2x1; it must be 1x1 or 2x2, or 1x2 with an IFM and kernel height of 1",
    ),
    "transpose conv stride 1x2 over two rows": (
        models.make("transpose_conv", in_shape=(1, 2, 8, 4), kernel=(1, 3), stride=(1, 2)),
        "TRANSPOSE_CONV stride HxW is 1x2; it must be 1x1 or 2x2, or 1x2 with an IFM and kernel height of 1",
    ),
    "transpose conv kernel below the stride": (  # VALID: 15x15, not Vela's 16x16, so no bottom row of padding
        models.make("transpose_conv", kernel=(1, 1), padding="VALID"),
        "TRANSPOSE_CONV from 8x8 to 15x15 with kernel 1x1 and stride 2x2 needs IFM padding (top, left, bottom,"
        " right) (0, 0, -1, -1); each must be in the range [0, kernel size - 1]",
    ),
    "narrowing cast": (
        models.make("cast", dtype="int16", out_type="int8"),
        "CAST from int16 to int8; the NPU saturates where narrowing wraps",
    ),
    "conv scale beyond the shift range": (
        models.make("conv2d", in_scale=1.0, w_scales=[1.0] * 8, out_scale=1e-12),
        "effective output scale 1e+12 is outside what the NPU's 32-bit scale and 6-bit shift can represent",
    ),
    "mul scale beyond the shift range": (  # benchmarks/fuzz.py: a flipped byte gave an LSTM's MUL a left shift
        models.make("mul", in_scale=1.0, in2_scale=1.0, out_scale=1e-12),
        "effective output scale 1e+12 is outside what the NPU's 32-bit scale and 6-bit shift can represent",
    ),
    "add scale of 1 or more": (  # the sum's multiplier, 2·max(s1, s2) / (2^20 · s_out)
        models.make("add", in_scale=1.0, in2_scale=1.0, out_scale=1e-17),
        "effective output scale 1.91e+11; TFLite's kernel needs one below 1 (it refuses the model)",
    ),
    "output scale beyond Vela's float32 clamp": (  # benchmarks/fuzz.py: a flipped byte gave 1.66e38 (Vela overflowed)
        models.make("conv2d", out_scale=1.66e38),
        "OFM has scale 1.66e+38; the NPU's clamps are given to Vela as real values in float32, which overflow "
        "above a scale of 5.19e+33",
    ),
}


@pytest.mark.parametrize("case", CONSTRAINT_CASES)
def test_constraint_keeps_op_on_host(case):
    model, reason = CONSTRAINT_CASES[case]
    mod, report = _partition(model)
    (entry,) = report.ops
    assert (entry.target, entry.reason) == ("host", reason)
    assert npu_functions(mod) == []


def conv_log_softmax_conv() -> bytes:
    """conv → log_softmax (no NPU pattern) → conv: two NPU subgraphs around a host op."""
    net = models.Net(seed=3)
    x = net.input((1, 8, 8, 4))
    x = net.conv2d(x, out_channels=8, activation="RELU")
    x = net.log_softmax(x)
    net.output(net.conv2d(x, out_channels=4))
    return net.build()


def test_host_op_splits_the_npu_subgraph():
    mod, report = _partition(conv_log_softmax_conv())
    assert [(e.op, e.target) for e in report.ops] == [("CONV_2D", "ethos-u"), ("LOG_SOFTMAX", "host"),
                                                      ("CONV_2D", "ethos-u")]
    assert report.ops[1].reason == "no NPU pattern for LOG_SOFTMAX"
    functions = npu_functions(mod)
    assert len(functions) == 2
    assert all(func.attrs["Codegen"] == "ethos-u" for _, func in functions)


def test_patterns_need_only_operators_every_match_contains():
    """FuseOpsByPattern is given only the patterns whose required operators the module calls; a requirement must
    hold for every alternative of the pattern, or a pattern that could match would be left out."""
    from tvm.relax.dpl import is_const, is_op, wildcard

    from ethosu_tvm.partition.patterns import npu_patterns
    from ethosu_tvm.qdq.patterns import required_ops

    add, multiply = is_op("relax.add"), is_op("relax.multiply")
    assert required_ops(add(wildcard(), multiply(wildcard(), is_const()))) == {"relax.add", "relax.multiply"}
    assert required_ops(add(wildcard(), wildcard()) | add(multiply(wildcard(), wildcard()), wildcard())) == \
        {"relax.add"}
    assert required_ops(add(wildcard(), wildcard()).has_dtype("int8")) == {"relax.add"}
    assert required_ops(wildcard() | add(wildcard(), wildcard())) == frozenset()
    by_kind = {p.kind: required_ops(p.pattern) for p in npu_patterns()}
    assert {"relax.nn.conv2d", "relax.quantize", "relax.dequantize"} <= by_kind["conv2d"]
    assert "relax.nn.avg_pool2d" in by_kind["avg_pool2d"]
