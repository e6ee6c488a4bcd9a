"""Every operator and graph of the model factory, compiled by Vela for each U55 configuration and optimisation
strategy, simulated and compared bit-exactly with LiteRT's reference kernels.

Exceptions, each checked by its own test below:
* SUM: LiteRT 2.3's reference SUM disagrees with TFLite Micro's, so it is no oracle; against TFLM, Vela's
  single-axis SUM is within 1 LSB (float rounding in TFLM) and its multi-axis SUM is wrong (the stream sums one axis).
* MEAN over the channel axis: Vela leaves it on the CPU, so there is no NPU stream to simulate.
* ELU: LiteRT's reference resolver has no ELU kernel; TFLite Micro is the oracle (`reference_runner`).
* DEPTH_TO_SPACE, SPACE_TO_DEPTH, GATHER, SPACE_TO_BATCH_ND, BATCH_TO_SPACE_ND, REVERSE_V2 and BROADCAST_TO (on
  their own): Vela leaves them on the CPU.
* MIRROR_PAD: Vela writes the reflected rows through a negative OFM row stride (40-bit two's complement), which the
  simulator reads as unsigned and refuses as an access outside the region.
* SQRT, ARG_MIN, CAST, LOG_SOFTMAX, ADD_N, FILL, GATHER_ND, DIV, L2_NORMALIZATION: Vela leaves them on the CPU (it
  maps ARG_MAX).
* EQUAL, NOT_EQUAL, GREATER, GREATER_EQUAL, LESS, LESS_EQUAL (int8 to bool) and SELECT_V2: Vela fails on them.
* NEG: Vela saturates −(−128) to 127 (newer TFLite does too); LiteRT 2.3 wraps it to −128, as we do.
* The uint8_io graph: Vela folds its last QUANTIZE (int8 to uint8) into the convolution before it, keeping the
  int8 clamp's top, 127, on the uint8 OFM.
"""
import functools

import numpy as np
import pytest

from ethosu_tvm.frontend.tflite_file import input_infos, output_infos, read_model
from ethosu_tvm.sim import SimulatorError, run_vela_tflite, scales, vela_tflite
from ethosu_tvm.testing import models
from ethosu_tvm.testing.reference import REF_KERNEL_WRONG, random_inputs, reference_runner, run_litert, run_tflm
from simhelpers import ACCELERATORS, OPTIMISE

SEEDS = (0, 1)
VARIANTS = {  # name -> (op, parameters): features the default single-op models do not reach
    "conv2d_stride2": ("conv2d", dict(stride=(2, 2), in_shape=(1, 9, 9, 5))),
    "conv2d_valid_5x5": ("conv2d", dict(kernel=(5, 5), padding="VALID", in_shape=(1, 12, 12, 6))),
    "conv2d_9x10": ("conv2d", dict(kernel=(9, 10), in_shape=(1, 12, 12, 3))),  # sub-kernels
    "conv2d_dilated": ("conv2d", dict(dilation=(2, 2), in_shape=(1, 10, 10, 4))),
    "conv2d_deep": ("conv2d", dict(out_channels=40, in_shape=(1, 6, 6, 70))),  # several IFM and OFM blocks
    "conv2d_relu6_per_tensor": ("conv2d", dict(activation="RELU6", per_channel=False)),
    "conv2d_int16_stride2": ("conv2d", dict(dtype="int16", stride=(2, 2), in_shape=(1, 9, 9, 20))),
    "depthwise_stride2_mult2": ("depthwise_conv2d", dict(stride=(2, 2), depth_multiplier=2)),
    "depthwise_dilated": ("depthwise_conv2d", dict(dilation=(2, 2), in_shape=(1, 10, 10, 8))),
    "depthwise_9x9": ("depthwise_conv2d", dict(kernel=(9, 9), in_shape=(1, 12, 12, 20))),
    "depthwise_int16_5x5": ("depthwise_conv2d", dict(dtype="int16", kernel=(5, 5))),
    "fully_connected_wide": ("fully_connected", dict(units=40, in_shape=(1, 70))),
    "fully_connected_relu_int16": ("fully_connected", dict(dtype="int16", activation="RELU", units=24)),
    "avg_pool_same_3x3": ("avg_pool2d", dict(pool=(3, 3), stride=(1, 1), padding="SAME")),  # padded average
    "avg_pool_same_stride2": ("avg_pool2d", dict(pool=(3, 3), stride=(2, 2), padding="SAME", in_shape=(1, 9, 9, 8))),
    "avg_pool_int16_same": ("avg_pool2d", dict(dtype="int16", pool=(3, 3), stride=(1, 1), padding="SAME")),
    "max_pool_same": ("max_pool2d", dict(pool=(3, 3), stride=(2, 2), padding="SAME", in_shape=(1, 9, 9, 8))),
    "add_broadcast_channel": ("add", dict(in2_shape=(1, 1, 1, 8))),
    "add_broadcast_first": ("add", dict(in_shape=(1, 1, 8, 8), in2_shape=(1, 8, 8, 8))),
    "sub_broadcast_first": ("sub", dict(in_shape=(1, 8, 1, 8), in2_shape=(1, 8, 8, 8))),  # reversed operands
    "mul_broadcast": ("mul", dict(in2_shape=(1, 8, 1, 1))),
    "add_relu": ("add", dict(activation="RELU")),
    "add_int16_broadcast": ("add", dict(dtype="int16", in2_shape=(1, 1, 1, 8))),
    "transpose_conv_valid": ("transpose_conv", dict(padding="VALID")),
    "transpose_conv_4x4": ("transpose_conv", dict(kernel=(4, 4))),
    "transpose_conv_stride1": ("transpose_conv", dict(stride=(1, 1), kernel=(2, 3), bias=False)),
    "transpose_conv_5x3_odd": ("transpose_conv", dict(kernel=(5, 3), in_shape=(1, 5, 7, 3), padding="VALID")),
    "transpose_conv_one_row": ("transpose_conv", dict(kernel=(1, 3), in_shape=(1, 1, 8, 4), stride=(1, 2))),
    "resize_nearest_align": ("resize_nearest_neighbor", dict(align_corners=True, size=(15, 15))),
    "resize_bilinear_half_pixel": ("resize_bilinear", dict(half_pixel_centers=True)),
    "resize_bilinear_align": ("resize_bilinear", dict(align_corners=True, size=(15, 15))),
    "leaky_relu_half": ("leaky_relu", dict(alpha=0.5)),
    "softmax_wide": ("softmax", dict(in_shape=(1, 100))),
    "softmax_int16_wide": ("softmax", dict(dtype="int16", in_shape=(1, 100))),
    "mean_height": ("mean", dict(axis=(1,))),
    "concatenation_height": ("concatenation", dict(axis=1, num_inputs=3)),
}
VELA_LEAVES_ON_THE_CPU = ("depth_to_space", "space_to_depth", "gather", "space_to_batch_nd", "batch_to_space_nd",
                          "reverse_v2", "broadcast_to", "sqrt", "arg_min", "cast", "log_softmax", "add_n", "fill",
                          "gather_nd", "div", "l2_normalization")
NOT_ON_NPU = {"mean_channels": ("mean", dict(axis=(3,)))} | {op: (op, {}) for op in VELA_LEAVES_ON_THE_CPU}
NEGATIVE_OFM_STRIDE = ("mirror_pad",)


def _has_int16(op: str) -> bool:
    try:
        models.make(op, dtype="int16")
    except ValueError:
        return False
    return True


VELA_DIFFERS = ("neg",)  # Vela saturates where LiteRT wraps (see above)
# op -> the operation Vela's graph has that it fails on
VELA_FAILS = {**{op: "And" for op in ("equal", "not_equal", "greater", "greater_equal", "less", "less_equal")},
              "select_v2": "NotEqual"}
# SUM: LiteRT is no oracle (see above)
ORACLE_OPS = [op for op in models.OPS if op not in REF_KERNEL_WRONG and op not in NOT_ON_NPU
              and op not in NEGATIVE_OFM_STRIDE and op not in VELA_DIFFERS and op not in VELA_FAILS]
CASES = {op: (op, {}) for op in ORACLE_OPS}
CASES |= {f"{op}_int16": (op, dict(dtype="int16")) for op in ORACLE_OPS if _has_int16(op)}
CASES |= VARIANTS
CASES |= {f"graph_{name}": (name, None) for name in models.GRAPHS if name != "uint8_io"}  # Vela clamps (see above)


@functools.lru_cache(maxsize=None)
def _model(name: str) -> bytes:
    op, params = (CASES | NOT_ON_NPU)[name]
    return models.make_graph(op) if params is None else models.make(op, **params)


@functools.lru_cache(maxsize=None)
def _reference(name: str, seed: int):
    inputs = random_inputs(_model(name), seed)
    op, _ = (CASES | NOT_ON_NPU)[name]
    return inputs, reference_runner(op)(_model(name), inputs)


def _operators(compiled: bytes) -> list[str]:
    model = read_model(compiled)
    graph = model.Subgraphs(0)
    names = []
    for i in range(graph.OperatorsLength()):
        code = model.OperatorCodes(graph.Operators(i).OpcodeIndex())
        custom = max(code.BuiltinCode(), code.DeprecatedBuiltinCode()) == 32
        names.append(code.CustomCode().decode() if custom else f"builtin {code.BuiltinCode()}")
    return names


@pytest.mark.parametrize("optimise", OPTIMISE)
@pytest.mark.parametrize("accelerator", ACCELERATORS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_factory_model_bit_exact(name, accelerator, optimise, vela):
    compiled = vela(name, _model(name), accelerator, optimise)
    assert _operators(compiled) == ["ethos-u"], "Vela no longer maps the whole model to the NPU"
    for seed in SEEDS:
        inputs, references = _reference(name, seed)
        outputs = run_vela_tflite(compiled, inputs, accelerator)
        assert len(outputs) == len(references)
        for output, reference in zip(outputs, references):
            assert output.dtype == reference.dtype and np.array_equal(output, reference), seed


@pytest.mark.parametrize("name", sorted(NOT_ON_NPU))
def test_models_vela_leaves_on_the_cpu(name, vela):
    compiled = vela(name, _model(name), "ethos-u55-128", "Performance")
    assert "ethos-u" not in _operators(compiled)


@pytest.mark.parametrize("op", NEGATIVE_OFM_STRIDE)
def test_negative_ofm_stride_is_refused(op, vela):
    model = models.make(op)
    compiled = vela(op, model, "ethos-u55-128", "Performance")
    assert _operators(compiled) == ["ethos-u"]
    with pytest.raises(SimulatorError, match=r"NPU_SET_OFM_BASE0 .* is outside region 1"):
        run_vela_tflite(compiled, random_inputs(model, 0), "ethos-u55-128")


@pytest.mark.parametrize("op", VELA_FAILS)
def test_vela_fails_on_comparisons_and_select(op, vela):
    with pytest.raises(RuntimeError, match=rf"Non-passthrough operation \({VELA_FAILS[op]}\) could not run on NPU"):
        vela(op, models.make(op), "ethos-u55-128", "Performance")


@pytest.mark.parametrize("in_zp", [-3, 60])
def test_vela_neg_saturates_where_litert_wraps(in_zp, vela):
    model = models.make("neg", 0, in_shape=(1, 16, 16, 1), in_zp=in_zp)
    compiled = vela(f"neg_every_value_{in_zp}", model, "ethos-u55-128", "Performance")
    x = np.arange(-128, 128, dtype=np.int8).reshape(1, 16, 16, 1)
    npu, litert = run_vela_tflite(compiled, [x], "ethos-u55-128")[0], run_litert(model, [x])[0]
    assert npu.flat[0] == 127 and litert.flat[0] == -128
    np.testing.assert_array_equal(npu.flat[1:], litert.flat[1:])


def test_vela_clamps_the_uint8_output_of_a_folded_quantize_at_127(vela):
    model = models.make_graph("uint8_io")
    compiled = vela("graph_uint8_io", model, "ethos-u55-128", "Performance")
    for seed in SEEDS:
        inputs = random_inputs(model, seed)
        npu, litert = run_vela_tflite(compiled, inputs, "ethos-u55-128")[0], run_litert(model, inputs)[0]
        assert litert.max() > 127
        np.testing.assert_array_equal(npu, np.minimum(litert, 127))


def _sum_model(**params) -> bytes:
    return models.make("sum", **params)


def test_litert_sum_reference_is_not_an_oracle():
    model = _sum_model(axis=(3,))
    inputs = random_inputs(model, 0)
    assert not np.array_equal(run_litert(model, inputs)[0], run_tflm(model, inputs)[0])


@pytest.mark.parametrize("axis", [(1,), (2,), (3,)])
def test_single_axis_sum_within_tflm_float_rounding(axis, vela):
    model = _sum_model(axis=axis)
    compiled = vela(f"sum_axis{axis[0]}", model, "ethos-u55-128", "Performance")
    for seed in SEEDS:
        inputs = random_inputs(model, seed)
        difference = run_vela_tflite(compiled, inputs, "ethos-u55-128")[0].astype(int) - run_tflm(model, inputs)[0]
        assert np.abs(difference).max() <= 1


def test_multi_axis_sum_stream_sums_only_the_first_axis(vela):
    """Vela lowers SUM over (H, W) to a transpose and a 1x1 convolution that only adds up H (at W = 0). The
    simulated output equals that partial sum requantised with the stream's own scale record, while the full sum
    with the same scale is what TFLite Micro returns."""
    model = _sum_model()
    compiled = vela("sum_hw", model, "ethos-u55-128", "Performance")
    parsed = vela_tflite.parse(compiled)
    record = scales.parse_records(parsed.regions[0].data[:10], 1)
    multiplier, shift = int(record.multiplier[0]), int(record.shift[0])
    inputs = random_inputs(model, 0)
    centred = inputs[0][0].astype(np.int64) - input_infos(model)[0].zero_point  # (H, W, C)

    def requantise(total):  # the stream's per-channel record, NATURAL rounding, output zero point, int8 clamp
        scaled = (total * multiplier + (1 << (shift - 1))) >> shift
        return np.clip(scaled + output_infos(model)[0].zero_point, -128, 127)

    simulated = run_vela_tflite(compiled, inputs, "ethos-u55-128")[0].ravel()
    assert np.array_equal(simulated, requantise(centred[:, 0, :].sum(axis=0)))
    assert np.array_equal(run_tflm(model, inputs)[0].ravel(), requantise(centred.sum(axis=(0, 1))))
    assert not np.array_equal(simulated, run_tflm(model, inputs)[0].ravel())
