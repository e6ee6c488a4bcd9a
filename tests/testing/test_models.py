"""The model factory: every op kind and graph loads and LiteRT's reference kernels agree with TFLite Micro."""
import numpy as np
import pytest
import tflite
from hypothesis import given, settings
from hypothesis import strategies as st

from ethosu_tvm.frontend.tflite_file import input_infos, output_infos, read_model
from ethosu_tvm.testing import models
from ethosu_tvm.testing.reference import (
    LITERT_LACKS_INT8,
    REF_KERNEL_MISSING,
    REF_KERNEL_WRONG,
    random_inputs,
    run_litert,
    run_tflm,
)

SEEDS = (0, 1, 2)
# Ops for which TFLite Micro has no int8 kernel: it must refuse them, and LiteRT alone is the reference.
TFLM_LACKS = {
    "relu_n1_to_1": "TFLite Micro registers no RELU_N1_TO_1 kernel",
    "relu_0_to_1": "TFLite Micro registers no RELU_0_TO_1 kernel",
    "exp": "TFLite Micro's EXP kernel accepts float32 only",
    "log": "TFLite Micro's LOG kernel accepts float32 only",
    "sqrt": "TFLite Micro's SQRT kernel accepts float32 only",
    "neg": "TFLite Micro's NEG kernel accepts float32 only",
    "gelu": "TFLite Micro registers no GELU kernel",
    "tile": "TFLite Micro registers no TILE kernel",
}
# (op, dtype) where TFLite Micro rounds differently from LiteRT's reference kernel (by one LSB at most);
# test_int16_fully_connected_rounding shows LiteRT's result is TFLite's double-rounding requantization.
TFLM_ROUNDS_DIFFERENTLY = {("fully_connected", "int16")}
# Ops whose TFLite Micro kernel pads with a value it never sets (SPACE_TO_BATCH_ND's SpaceToBatchParams is a
# persistent buffer left as allocated); LiteRT pads with the output's zero point (real 0, as TensorFlow does).
TFLM_PADS_UNSET = {"space_to_batch_nd"}
# Ops whose output dtype is not the input's (by default).
COMPARISONS = ("equal", "not_equal", "greater", "greater_equal", "less", "less_equal")
# Ops whose first input is a bool condition.
CONDITION_FIRST = ("select_v2",)
OTHER_OUTPUT_DTYPE = {"arg_max": "int32", "arg_min": "int32", "cast": "int32", **{op: "bool" for op in COMPARISONS}}


def _litert_optimised(model, inputs):
    from ai_edge_litert.interpreter import Interpreter

    interp = Interpreter(model_content=model)
    interp.allocate_tensors()
    for detail, value in zip(interp.get_input_details(), inputs):
        interp.set_tensor(detail["index"], value)
    interp.invoke()
    return [interp.get_tensor(d["index"]) for d in interp.get_output_details()]


def _assert_same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.dtype == y.dtype and x.shape == y.shape
        np.testing.assert_array_equal(x, y)


def _variants():
    for op in models.OPS:
        yield op, "int8"
        if op in models.INT16_OPS:
            yield op, "int16"


def test_op_count():
    assert len(models.OPS) >= 29
    assert len(set(models.OPS)) == len(models.OPS)


@pytest.mark.parametrize("op,dtype", list(_variants()))
def test_litert_and_tflm_agree(op, dtype):
    model = models.make(op, seed=3, dtype=dtype)
    read_model(model)
    for info in input_infos(model):
        assert info.dtype == np.dtype("bool" if op in CONDITION_FIRST and info.name == "input_0" else dtype)
    for info in output_infos(model):
        assert info.dtype == np.dtype(OTHER_OUTPUT_DTYPE.get(op, dtype))
    for seed in SEEDS:
        inputs = random_inputs(model, seed)
        if op in REF_KERNEL_MISSING:
            with pytest.raises(ValueError, match="Didn't find op for builtin opcode"):
                run_litert(model, inputs)
            _assert_same(run_tflm(model, inputs), _litert_optimised(model, inputs))
            continue
        if op in LITERT_LACKS_INT8:
            with pytest.raises(RuntimeError, match=LITERT_LACKS_INT8[op]):
                run_litert(model, inputs)
            assert any(out.max() != out.min() for out in run_tflm(model, inputs))
            continue
        expected = run_litert(model, inputs)
        if op == "fill":  # the input value everywhere
            assert np.all(expected[0] == inputs[0])
        else:
            assert any(out.max() != out.min() for out in expected), "the output does not depend on the data"
        if op in TFLM_LACKS or (dtype == "int16" and op in models.INT16_TFLM_LACKS):
            with pytest.raises(RuntimeError):
                run_tflm(model, inputs)
        elif op in TFLM_PADS_UNSET:
            micro = run_tflm(model, inputs)[0]
            differ = micro != expected[0]
            assert set(expected[0][differ].tolist()) == {output_infos(model)[0].zero_point}
            assert len(set(micro[differ].tolist())) == 1
        elif (op, dtype) in TFLM_ROUNDS_DIFFERENTLY:
            micro = run_tflm(model, inputs)[0]
            assert np.abs(micro.astype(np.int32) - expected[0]).max() <= 1
        elif op in REF_KERNEL_WRONG:
            micro = run_tflm(model, inputs)
            _assert_same(micro, _litert_optimised(model, inputs))
            assert not np.array_equal(expected[0], micro[0])
        else:
            _assert_same(expected, run_tflm(model, inputs))


@pytest.mark.parametrize("op,dtype", [(op, dtype) for op in ("add", "sub", "mul", "minimum", "maximum",
                                                               "squared_difference")
                                      for dtype in ("int8", "int16") if dtype == "int8" or op in models.INT16_OPS])
@pytest.mark.parametrize("side,shape", [("lhs", ()), ("rhs", (8,)), ("lhs", (1, 8, 1, 1))])
def test_constant_operand(op, dtype, side, shape):
    """A constant operand is a buffer of the model, not an input; both runtimes agree on it."""
    model = models.make(op, seed=3, dtype=dtype, **{f"constant_{side}": shape})
    assert len(input_infos(model)) == 1
    subgraph = read_model(model).Subgraphs(0)
    operands = subgraph.Operators(0).InputsAsNumpy()
    constant = subgraph.Tensors(int(operands[0 if side == "lhs" else 1]))
    assert tuple(constant.Shape(i) for i in range(constant.ShapeLength())) == shape
    assert read_model(model).Buffers(constant.Buffer()).DataLength() == int(np.prod(shape)) * np.dtype(dtype).itemsize
    for seed in SEEDS:
        inputs = random_inputs(model, seed)
        _assert_same(run_litert(model, inputs), run_tflm(model, inputs))


def test_sum_reference_divergence_against_float():
    """Evidence for REF_KERNEL_WRONG: TFLite Micro's SUM equals the rounded float result, BUILTIN_REF does not."""
    model = models.make("sum", seed=1)
    (x,) = random_inputs(model, 0)
    (inp,), (out,) = input_infos(model), output_infos(model)
    real = (inp.scale * (x.astype(np.float64) - inp.zero_point)).sum(axis=(1, 2), keepdims=True)
    expected = np.clip(np.round(real / out.scale) + out.zero_point, -128, 127).astype(np.int8)
    np.testing.assert_array_equal(run_tflm(model, [x])[0], expected)
    assert not np.array_equal(run_litert(model, [x])[0], expected)


def test_sum_reference_is_tflm_on_ties():
    """Why TFLite Micro, not LiteRT's optimised kernel, is SUM's reference: on a non-negative int8 input (which
    BUILTIN_REF's uint8 reading leaves unchanged) BUILTIN_REF and TFLite Micro agree, rounding the tie
    65 · 0.5 = 32.5 up as TFLite's requantization does; the optimised kernel gives 32."""
    model = models.make("sum", seed=0, in_shape=(1,), axis=(0,), keep_dims=False, in_scale=0.5, in_zp=0,
                        out_scale=1.0, out_zp=0)
    x = np.array([65], np.int8)
    assert run_litert(model, [x])[0] == run_tflm(model, [x])[0] == 33
    assert _litert_optimised(model, [x])[0] == 32


def _const(model, index, dtype):
    tflite_model = read_model(model)
    tensor = tflite_model.Subgraphs(0).Tensors(index)
    data = tflite_model.Buffers(tensor.Buffer()).DataAsNumpy().view(dtype)
    return data.reshape(tensor.ShapeAsNumpy()), tensor.Quantization()


def _tfl_requantize(acc, real_multiplier):
    """TFLite's QuantizeMultiplier + MultiplyByQuantizedMultiplier: a rounding doubling high multiply at bit 31,
    then a rounding right shift (half away from zero), written independently with Python integers."""
    mantissa, exponent = np.frexp(real_multiplier)
    multiplier = int(round(mantissa * (1 << 31)))
    if multiplier == 1 << 31:
        multiplier, exponent = multiplier // 2, exponent + 1
    right = max(-exponent, 0)
    out = []
    for value in acc.ravel().tolist():
        product = (value << max(exponent, 0)) * multiplier
        high = (abs(product) + (1 << 30)) >> 31
        high = high if product >= 0 else -high
        rounded = (abs(high) + ((1 << right) >> 1)) >> right
        out.append(rounded if high >= 0 else -rounded)
    return np.array(out, dtype=np.int64).reshape(acc.shape)


def test_int16_fully_connected_rounding():
    model = models.make("fully_connected", seed=3, dtype="int16")
    graph = read_model(model).Subgraphs(0)
    x_index, w_index, b_index = (int(i) for i in graph.Operators(0).InputsAsNumpy())
    weights, w_quant = _const(model, w_index, np.int8)
    bias, _ = _const(model, b_index, np.int64)
    (inp,), (out,) = input_infos(model), output_infos(model)
    real_multiplier = float(np.float32(inp.scale) * np.float32(w_quant.Scale(0))) / float(np.float32(out.scale))
    differs = 0
    for seed in SEEDS:
        (x,) = random_inputs(model, seed)
        acc = x.astype(np.int64) @ weights.astype(np.int64).T + bias
        expected = np.clip(_tfl_requantize(acc, real_multiplier), -32768, 32767)
        np.testing.assert_array_equal(run_litert(model, [x])[0], expected)
        differs += int(np.count_nonzero(run_tflm(model, [x])[0] != expected))
    assert differs > 0  # the documented TFLite Micro divergence is real for this model


@pytest.mark.parametrize("name", models.GRAPHS)
def test_graphs(name):
    model = models.make_graph(name, seed=0)
    for seed in SEEDS:
        inputs = random_inputs(model, seed)
        _assert_same(run_litert(model, inputs), run_tflm(model, inputs))


@pytest.mark.parametrize("name", [name for name in models.EDGES if name != "float_to_uint8"])
def test_edges(name):
    """LiteRT, the edge tests' reference, agrees with TFLite Micro on every edge form TFLite Micro runs."""
    model = models.make_edge(name)
    for seed in SEEDS:
        inputs = random_inputs(model, seed)
        _assert_same(run_litert(model, inputs), run_tflm(model, inputs))


@pytest.mark.parametrize("params,output", [
    (dict(dtype="uint8"), ("int8", 0.02, -3)),  # the converter's uint8 input: one scale, zero points 128 apart
    (dict(dtype="int8", in_zp=-128, out_dtype="uint8"), ("uint8", 0.02, 0)),
    (dict(dtype="uint8", in_scale=0.5, in_zp=7, out_scale=0.013, out_zp=-20), ("int8", 0.013, -20)),
    (dict(dtype="int8", in_scale=0.004, out_dtype="uint8", out_scale=0.1, out_zp=200), ("uint8", 0.1, 200)),
])
def test_uint8_quantize(params, output):
    """QUANTIZE between uint8 and int8 at several scales; LiteRT and TFLite Micro agree on every one."""
    model = models.make("quantize", 4, **params)
    (info,), (out,) = input_infos(model), output_infos(model)
    assert info.dtype == np.dtype(params["dtype"])
    assert (out.dtype, out.scale, out.zero_point) == (np.dtype(output[0]), np.float32(output[1]), output[2])
    for seed in SEEDS:
        inputs = random_inputs(model, seed)
        _assert_same(run_litert(model, inputs), run_tflm(model, inputs))


def test_uint8_io_graph_has_uint8_io_around_int8():
    model = models.make_graph("uint8_io")
    assert [i.dtype for i in input_infos(model) + output_infos(model)] == [np.dtype(np.uint8)] * 2
    graph = read_model(model).Subgraphs(0)
    kinds = [read_model(model).OperatorCodes(graph.Operators(i).OpcodeIndex()).BuiltinCode()
             for i in range(graph.OperatorsLength())]
    assert kinds[0] == kinds[-1] == tflite.BuiltinOperator.QUANTIZE
    last = graph.Operators(graph.OperatorsLength() - 1)
    assert graph.Tensors(graph.Operators(0).Outputs(0)).Type() == tflite.TensorType.INT8
    assert graph.Tensors(last.Inputs(0)).Type() == tflite.TensorType.INT8


def test_graph_outputs_depend_on_inputs():
    model = models.make_graph("ds_cnn")
    first, second = (run_litert(model, random_inputs(model, seed))[0] for seed in (0, 1))
    assert not np.array_equal(first, second)


def test_multi_io_and_names():
    model = models.make_graph("multi_io")
    assert [i.name for i in input_infos(model)] == ["input_0", "input_1"]
    assert [o.name for o in output_infos(model)] == ["output_0", "output_1"]
    from ai_edge_litert.interpreter import Interpreter

    signature = Interpreter(model_content=model).get_signature_list()["serving_default"]
    assert signature == {"inputs": ["input_0", "input_1"], "outputs": ["output_0", "output_1"]}


def _tensor_by_name(model, name):
    graph = read_model(model).Subgraphs(0)
    for i in range(graph.TensorsLength()):
        if graph.Tensors(i).Name().decode() == name:
            return graph.Tensors(i)
    raise KeyError(name)


def test_explicit_quantization_is_written():
    scales = [0.01, 0.02, 0.03, 0.04]
    model = models.make("conv2d", in_shape=(1, 6, 6, 3), out_channels=4, w_scales=scales, in_scale=0.5, in_zp=7,
                        out_scale=0.25, out_zp=-9, activation="RELU6")
    graph = read_model(model).Subgraphs(0)
    op = graph.Operators(0)
    ifm, weights, bias = (graph.Tensors(int(i)) for i in op.InputsAsNumpy())
    ofm = graph.Tensors(int(op.OutputsAsNumpy()[0]))
    assert (ifm.Quantization().Scale(0), ifm.Quantization().ZeroPoint(0)) == (0.5, 7)
    assert (ofm.Quantization().Scale(0), ofm.Quantization().ZeroPoint(0)) == (0.25, -9)
    np.testing.assert_array_equal(weights.Quantization().ScaleAsNumpy(), np.float32(scales))
    assert weights.Quantization().QuantizedDimension() == 0
    assert weights.Type() == tflite.TensorType.INT8 and bias.Type() == tflite.TensorType.INT32
    np.testing.assert_array_equal(bias.Quantization().ScaleAsNumpy(), np.float32(0.5) * np.float32(scales))
    options = tflite.Conv2DOptions()
    options.Init(op.BuiltinOptions().Bytes, op.BuiltinOptions().Pos)
    assert options.FusedActivationFunction() == tflite.ActivationFunctionType.RELU6


def test_per_tensor_and_depthwise_axis():
    model = models.make("depthwise_conv2d", in_shape=(1, 5, 5, 3), depth_multiplier=2, per_channel=True)
    graph = read_model(model).Subgraphs(0)
    weights = graph.Tensors(int(graph.Operators(0).InputsAsNumpy()[1]))
    assert tuple(weights.ShapeAsNumpy()) == (1, 3, 3, 6)
    assert weights.Quantization().QuantizedDimension() == 3 and weights.Quantization().ScaleLength() == 6
    model = models.make("conv2d", per_channel=False)
    graph = read_model(model).Subgraphs(0)
    assert graph.Tensors(int(graph.Operators(0).InputsAsNumpy()[1])).Quantization().ScaleLength() == 1


def test_int16_uses_64bit_bias_and_zero_points():
    model = models.make("conv2d", dtype="int16")
    graph = read_model(model).Subgraphs(0)
    bias = graph.Tensors(int(graph.Operators(0).InputsAsNumpy()[2]))
    assert bias.Type() == tflite.TensorType.INT64
    assert all(info.zero_point == 0 for info in input_infos(model) + output_infos(model))


def test_fully_connected_options():
    model = models.make("fully_connected", in_shape=(1, 2, 3, 8), units=5, keep_num_dims=True, bias=False)
    assert output_infos(model)[0].shape == (1, 2, 3, 5)
    assert int(read_model(model).Subgraphs(0).Operators(0).InputsAsNumpy()[2]) == -1
    inputs = random_inputs(model, 0)
    _assert_same(run_litert(model, inputs), run_tflm(model, inputs))
    assert output_infos(models.make("fully_connected", in_shape=(2, 3, 8), units=5))[0].shape == (6, 5)


def test_deterministic_and_seeded():
    assert models.make("conv2d", seed=4) == models.make("conv2d", seed=4)
    assert models.make("conv2d", seed=4) != models.make("conv2d", seed=5)
    assert models.make_graph("resnet_block", seed=1) == models.make_graph("resnet_block", seed=1)


@pytest.mark.parametrize("op,params,message", [
    ("conv3d", {}, "unknown op kind 'conv3d'"),
    ("conv2d", {"kernal": 3}, "unknown parameter(s) kernal for op 'conv2d'"),
    ("conv2d", {"bias": False}, "unknown parameter(s) bias for op 'conv2d'"),
    ("conv2d", {"padding": "FULL"}, "padding must be one of SAME, VALID"),
    ("conv2d", {"activation": "GELU"}, "activation must be one of"),
    ("conv2d", {"kernel": (9, 9), "padding": "VALID"}, "kernel extent 9 does not fit an input of size 8"),
    ("conv2d", {"stride": 0}, "stride must be a positive int"),
    ("conv2d", {"w_scales": [0.1, 0.2]}, "w_scales needs 8 positive values"),
    ("conv2d", {"dtype": "int4"}, "dtype must be 'int8', 'int16' or 'uint8', got 'int4'"),
    ("add", {"dtype": "uint8"}, "op 'add' has no uint8 variant here; only quantize takes uint8 (into int8)"),
    ("conv2d", {"in_zp": 200}, "zero point 200 is outside the int8 range"),
    ("conv2d", {"dtype": "int16", "in_zp": 3}, "int16 activations must have zero point 0"),
    ("conv2d", {"in_scale": -1.0}, "scales must be positive"),
    ("relu6", {"out_scale": 0.0}, "scales must be positive"),
    ("depthwise_conv2d", {"dilation": (4, 4), "padding": "VALID"}, "kernel extent 9 does not fit"),
    ("pad", {"dtype": "int16"}, "op 'pad' has no int16 variant"),
    ("add", {"in2_shape": (1, 3, 8, 8)}, "do not broadcast"),
    ("minimum", {"in2_scale": 0.5}, "minimum needs both operands to share one scale"),
    ("add", {"constant_lhs": (8,), "constant_rhs": (8,)}, "give constant_lhs or constant_rhs, not both"),
    ("mul", {"constant_rhs": (8,), "in2_shape": (8,)}, "constant_rhs gives the constant's shape"),
    ("add", {"constant_rhs": (3,)}, "do not broadcast"),
    ("conv2d", {"constant_rhs": (3,)}, "unknown parameter(s) constant_rhs"),
    ("reshape", {"new_shape": (3, -1)}, "cannot reshape"),
    ("split", {"num_splits": 3}, "cannot be split into 3 equal parts"),
    ("strided_slice", {"begin": (0, 0)}, "begin, end and strides differ in length"),
    ("squeeze", {"axis": (1,)}, "not all of size 1"),
    ("transpose", {"perm": (0, 1, 1, 3)}, "is not a permutation"),
    ("resize_bilinear", {"align_corners": True, "half_pixel_centers": True}, "cannot both be set"),
    ("concatenation", {"num_inputs": 0}, "num_inputs must be at least 1"),
    ("depth_to_space", {"block_size": 3}, "8 channels do not divide into blocks of 3x3"),
    ("space_to_depth", {"block_size": 3}, "8x8 does not divide into blocks of 3x3"),
    ("mirror_pad", {"paddings": ((0, 0), (8, 0), (0, 0), (0, 0))}, "REFLECT paddings"),
    ("padv2", {"value": 200}, "value 200 does not fit int8"),
    ("reverse_v2", {"axis": (4,)}, "out of range for rank 4"),
    ("gather", {"indices": (6,)}, "out of range for dimension 6"),
    ("broadcast_to", {"shape": (1, 8, 3, 4)}, "cannot broadcast"),
    ("tile", {"multiples": (1, 0, 2, 1)}, "multiples must be 4 positive ints"),
    ("tile", {"multiples": (2, 2)}, "multiples must be 4 positive ints"),
    ("space_to_batch_nd", {"paddings": ((0, 0), (0, 1))}, "does not divide into 2x2 blocks"),
    ("batch_to_space_nd", {"crops": ((8, 0), (0, 0))}, "do not fit 8x8"),
])
def test_bad_parameters(op, params, message):
    with pytest.raises(ValueError) as err:
        models.make(op, **params)
    assert message in str(err.value)


def test_unknown_graph():
    with pytest.raises(ValueError, match="unknown graph 'vgg'; known: ds_cnn"):
        models.make_graph("vgg")


def _check_against_tflm(model):
    inputs = random_inputs(model, 0)
    _assert_same(run_litert(model, inputs), run_tflm(model, inputs))


_spatial = st.tuples(st.integers(1, 3), st.integers(1, 3))
_common = dict(
    size=st.tuples(st.integers(3, 12), st.integers(3, 12)),
    padding=st.sampled_from(["SAME", "VALID"]),
    stride=_spatial,
)


@settings(max_examples=100)
@given(kernel=_spatial, dilation=_spatial, channels=st.integers(1, 9), out_channels=st.integers(1, 9),
       activation=st.sampled_from(["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]), per_channel=st.booleans(),
       in_zp=st.integers(-128, 127), seed=st.integers(0, 1000), **_common)
def test_conv2d_sweep(size, kernel, stride, dilation, padding, channels, out_channels, activation, per_channel,
                      in_zp, seed):
    try:
        model = models.make("conv2d", seed, in_shape=(1, *size, channels), kernel=kernel, stride=stride,
                            dilation=dilation, padding=padding, out_channels=out_channels, activation=activation,
                            per_channel=per_channel, in_zp=in_zp)
    except ValueError as err:
        assert "does not fit" in str(err)
        return
    _check_against_tflm(model)


@settings(max_examples=100)
@given(kernel=_spatial, dilation=_spatial, channels=st.integers(1, 9), multiplier=st.integers(1, 3),
       dtype=st.sampled_from(["int8", "int16"]), seed=st.integers(0, 1000), **_common)
def test_depthwise_sweep(size, kernel, stride, dilation, padding, channels, multiplier, dtype, seed):
    try:
        model = models.make("depthwise_conv2d", seed, in_shape=(1, *size, channels), kernel=kernel, stride=stride,
                            dilation=dilation, padding=padding, depth_multiplier=multiplier, dtype=dtype)
    except ValueError as err:
        assert "does not fit" in str(err)
        return
    _check_against_tflm(model)


@settings(max_examples=100)
@given(kind=st.sampled_from(["avg_pool2d", "max_pool2d"]), pool=_spatial, channels=st.integers(1, 9),
       dtype=st.sampled_from(["int8", "int16"]), seed=st.integers(0, 1000), **_common)
def test_pool_sweep(kind, size, pool, stride, padding, channels, dtype, seed):
    try:
        model = models.make(kind, seed, in_shape=(1, *size, channels), pool=pool, stride=stride, padding=padding,
                            dtype=dtype)
    except ValueError as err:
        assert "does not fit" in str(err)
        return
    _check_against_tflm(model)


def test_per_tensor_axis_is_written_on_single_scale_tensors_only():
    model = models.make("conv2d", per_tensor_axis=3, per_channel=True)
    graph = read_model(model).Subgraphs(0)
    ifm, weights, bias = (graph.Tensors(int(i)) for i in graph.Operators(0).InputsAsNumpy())
    ofm = graph.Tensors(int(graph.Operators(0).Outputs(0)))
    assert [t.Quantization().QuantizedDimension() for t in (ifm, ofm)] == [3, 3]
    assert [t.Quantization().QuantizedDimension() for t in (weights, bias)] == [0, 0]  # per-channel: their axis


@pytest.mark.parametrize("op", ["conv2d", "depthwise_conv2d"])
@pytest.mark.parametrize("params", [dict(dilation=2), dict(dilation=(3, 2), in_shape=(1, 10, 7, 4), padding="VALID"),
                                    dict(dilation=3, in_shape=(1, 7, 8, 4), kernel=(3, 2), activation="RELU")])
def test_space_to_batch_equals_the_dilated_convolution(op, params):
    """TensorFlow's form of a dilated convolution computes what the dilated convolution does in LiteRT."""
    reshuffled, direct = models.make(op, 1, space_to_batch=True, **params), models.make(op, 1, **params)
    graph = read_model(reshuffled).Subgraphs(0)
    assert graph.OperatorsLength() == 3
    for seed in SEEDS:
        inputs = random_inputs(direct, seed)
        _assert_same(run_litert(reshuffled, inputs), run_litert(direct, inputs))


@pytest.mark.parametrize("dtype", ["int8", "int16"])
def test_float_io_wraps_the_integer_model(dtype):
    """float_io adds a QUANTIZE per input and a DEQUANTIZE per output around the same integer model; LiteRT and
    TFLite Micro agree on it."""
    model = models.make("add", 2, dtype=dtype, float_io=True)
    assert [i.dtype for i in input_infos(model) + output_infos(model)] == [np.dtype(np.float32)] * 3
    rng = np.random.default_rng(0)
    inputs = [rng.uniform(-3, 3, size=i.shape).astype(np.float32) for i in input_infos(model)]
    _assert_same(run_litert(model, inputs), run_tflm(model, inputs))


def test_batch_from_shape_reshape():
    model = models.make("reshape", batch_from_shape=True, new_shape=(1, -1))
    graph = read_model(model).Subgraphs(0)
    assert graph.OperatorsLength() == 4  # SHAPE, STRIDED_SLICE, PACK, RESHAPE
    assert tuple(graph.Tensors(0).ShapeSignatureAsNumpy()) == (-1, 4, 4, 8)
    inputs = random_inputs(model, 0)
    _assert_same(run_litert(model, inputs), [inputs[0].reshape(1, -1)])


def _lstm(shape=(1, 20, 10), units=16, seed=0) -> bytes:
    net = models.Net(seed=seed)
    net.output(net.lstm(net.input(shape), units=units))
    return net.build()


def test_lstm_is_written_as_the_integer_kernels_need_it():
    """UNIDIRECTIONAL_SEQUENCE_LSTM with its 24 inputs (peepholes, projection and layer norm omitted), the output and
    cell states as variable tensors, and five intermediates of shape [0] (TFLite Micro refuses others); both
    runtimes run it."""
    model = _lstm(shape=(2, 6, 5), units=4)
    graph = read_model(model).Subgraphs(0)
    (op,) = [graph.Operators(i) for i in range(graph.OperatorsLength())]
    inputs = [int(i) for i in op.InputsAsNumpy()]
    assert len(inputs) == 24 and [i for i, t in enumerate(inputs) if t < 0] == [9, 10, 11, 16, 17, 20, 21, 22, 23]
    states = [graph.Tensors(inputs[i]) for i in (18, 19)]
    assert [t.IsVariable() for t in states] == [True, True]
    assert [t.Type() for t in states] == [tflite.TensorType.INT8, tflite.TensorType.INT16]
    assert states[1].Quantization().Scale(0) == 2.0 ** -11
    intermediates = [graph.Tensors(int(i)) for i in op.IntermediatesAsNumpy()]
    assert [tuple(t.ShapeAsNumpy()) for t in intermediates] == [(0,)] * 5
    x = random_inputs(model, 0)
    (tflm,), (litert,) = run_tflm(model, x), run_litert(model, x)
    assert tflm.shape == litert.shape == (2, 6, 4) and tflm.dtype == np.int8
    assert not np.array_equal(tflm, run_tflm(model, random_inputs(model, 1))[0])


def test_lstm_reference_is_tflm():
    """LiteRT's integer LSTM (gemmlowp's fixed-point sigmoid and tanh) and TFLite Micro's (the lookup-table int16
    LOGISTIC and TANH, which the U55's activation functions compute and Vela's LSTM follows) differ by one LSB in
    a few outputs: TFLite Micro, the runtime of Ethos-U systems, is the reference for an LSTM."""
    model = _lstm()
    differing = 0
    for seed in range(5):
        x = random_inputs(model, seed)
        (tflm,), (litert,) = run_tflm(model, x), run_litert(model, x)
        assert np.abs(tflm.astype(np.int32) - litert).max() <= 1
        differing += int(np.count_nonzero(tflm != litert))
    assert 0 < differing < 5 * tflm.size // 10
