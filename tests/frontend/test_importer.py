"""Import: the MLPerf Tiny models, the source-operator and quantization maps, the fixes around TVM's converters
(FC on N-D inputs, SOFTMAX beta, QuantizedDimension of per-tensor tensors, 16x8 biases), the rewrites before them
(float I/O stripped, shape arithmetic folded, space-to-batch dilated convolutions) and the typed rejections."""
import re

import numpy as np
import pytest
import tflite

from ethosu_tvm.frontend.attributes import State, model_io_names, model_states, source_ops, tensor_quant
from ethosu_tvm.frontend.errors import DynamicShapeError, FloatModelError, ModelImportError, UnsupportedModelError
from ethosu_tvm.frontend.importer import from_tflite
from ethosu_tvm.frontend.tflite_file import ModelFormatError
from ethosu_tvm.testing import models, shared_model
from ethosu_tvm.testing.invalid_models import dynamic_shape_model, float_model, misdeclared_output_model

MLPERF = {
    "mlperf_tiny_kws_dscnn_int8.tflite": 13,
    "mlperf_tiny_vww_mobilenetv1_96_int8.tflite": 31,
    "mlperf_tiny_ic_resnet8_int8.tflite": 16,
    "mlperf_tiny_ad_fc_autoencoder_int8.tflite": 10,
}


@pytest.mark.parametrize("name, n_ops", MLPERF.items())
def test_mlperf_models_import_with_one_entry_per_operator(name, n_ops):
    mod = from_tflite(shared_model(name))
    ops = source_ops(mod)
    assert [op.index for op in ops] == list(range(n_ops))
    # Every binding of main belongs to exactly one source operator (the final output alias aside).
    names = [b.var.name for block in mod["main"].body.blocks for b in block.bindings]
    owned = [n for op in ops for n in op.bindings]
    assert len(owned) == len(set(owned)) and set(owned) <= set(names)
    assert len(set(names) - set(owned)) <= 1


def test_source_ops_name_tflite_builtins(tmp_path):
    path = tmp_path / "kws.tflite"
    path.write_bytes(shared_model("mlperf_tiny_kws_dscnn_int8.tflite"))
    ops = source_ops(from_tflite(path))  # a path works as well as bytes
    assert [op.op for op in ops[:2]] == ["CONV_2D", "DEPTHWISE_CONV_2D"]
    assert [op.op for op in ops[-4:]] == ["AVERAGE_POOL_2D", "RESHAPE", "FULLY_CONNECTED", "SOFTMAX"]
    # The conv owns its input dequantize, the convolution, bias, requantize and clip.
    assert len(ops[0].bindings) == 7


def _out_shape(mod) -> tuple[int, ...]:
    return tuple(int(d) for d in mod["main"].body.body.ty.shape)


def test_fully_connected_on_4d_input_is_flattened_first():
    """TFLite flattens an N-D FC input to [-1, inputs]; TVM's converter feeds it to matmul as it is."""
    from tvm.relax.frontend.tflite import from_tflite as tvm_from_tflite

    model = models.make("fully_connected", in_shape=(1, 2, 2, 8), units=6)
    assert _out_shape(tvm_from_tflite(tflite.Model.GetRootAsModel(model, 0))) == (1, 2, 2, 6)  # wrong
    mod = from_tflite(model)
    assert _out_shape(mod) == (4, 6)  # TFLite's output shape
    (fc,) = source_ops(mod)
    assert fc.op == "FULLY_CONNECTED"
    shapes = {b.var.name: tuple(int(d) for d in b.var.ty.shape) for b in mod["main"].body.blocks[0].bindings}
    assert shapes[fc.bindings[0]] == (4, 8)  # the reshape to [-1, inputs] comes first


def test_one_channel_depthwise_weights_import():
    """TFLite writes QuantizedDimension 3 on a single-scale depthwise weight; TVM's converter refuses that."""
    from tvm.relax.frontend.tflite import from_tflite as tvm_from_tflite

    model = models.make("depthwise_conv2d", in_shape=(1, 5, 5, 1))
    with pytest.raises(Exception, match="Per-tensor DepthwiseConv2D weight QuantizedDimension"):
        tvm_from_tflite(tflite.Model.GetRootAsModel(model, 0))
    assert [op.op for op in source_ops(from_tflite(model))] == ["DEPTHWISE_CONV_2D"]


def test_float_model_is_rejected():
    with pytest.raises(FloatModelError, match="^tensor 'a' is floating point: only int8/int16-quantized models can be "
                                               "compiled$"):
        from_tflite(float_model())


def test_dynamic_shape_is_rejected():
    with pytest.raises(DynamicShapeError, match=r"^tensor 'x' has a dynamic shape \(1, -1, 8\): only static "
                                                 r"shapes can be compiled$"):
        from_tflite(dynamic_shape_model())


@pytest.mark.parametrize("kind, in_shape, out_shape", [("RELU", (), (1, 4)), ("RELU", (1, 4), (1, 8)),
                                                       ("ADD", (1, 4), (1, 8))])
def test_misdeclared_output_shape_is_refused(kind, in_shape, out_shape):
    """TFLite Micro's ADD aborts, its RELU writes the computed elements alone (the rest is uninitialised). The same
    number of elements in another shape is what TFLite Micro writes (`test_reduction_sweep`: SUM to a scalar
    declared (1,))."""
    message = (f"operator #0 {kind}: output 'y' is declared with shape {out_shape}, but the operator computes shape "
               f"{in_shape}")
    with pytest.raises(UnsupportedModelError, match=f"^{re.escape(message)}$"):
        from_tflite(misdeclared_output_model(kind, in_shape, out_shape))


def test_empty_tensor_is_refused_as_empty():
    with pytest.raises(UnsupportedModelError, match=r"^tensor 'x' is empty: its shape \(1, 0, 8\) has a zero "
                                                     r"dimension$"):
        from_tflite(dynamic_shape_model((1, 0, 8)))


def _square_model() -> bytes:
    """An int8 SQUARE, which TVM's TFLite frontend does not convert for quantized models (nor do we: TFLite's
    SQUARE is float only)."""
    net = models.Net(0)
    x = net.input((1, 4, 4, 8))
    y = net._same_quant(x, x.shape)
    net.builder.add_operator(tflite.BuiltinOperator.SQUARE, [x.index], [y.index])
    net.output(y)
    return net.build()


def test_unsupported_operator_and_bad_bytes():
    with pytest.raises(UnsupportedModelError,
                       match="^the TFLite frontend cannot convert operator #0 SQUARE: .*'SQUARE'"):
        from_tflite(_square_model())
    with pytest.raises(ModelFormatError):
        from_tflite(b"not a model at all")
    assert issubclass(UnsupportedModelError, ModelImportError) and issubclass(ModelImportError, ValueError)


@pytest.mark.parametrize("op", ["pad", "squeeze", "expand_dims", "transpose", "slice", "strided_slice", "split",
                                "split_v", "pack", "unpack", "resize_nearest_neighbor"])
def test_value_moving_ops_import_exactly(op):
    """TVM refuses these on quantized models although its converters are exact for them (EXPAND_DIMS, PACK,
    STRIDED_SLICE, SPLIT, SPLIT_V and UNPACK are converted here): the imported module, run on the host, equals
    LiteRT."""
    import tvm
    from tvm import relax

    from ethosu_tvm.testing.reference import random_inputs, run_litert

    model = models.make(op)
    vm = relax.VirtualMachine(relax.build(from_tflite(model), "llvm"), tvm.cpu())
    for seed in (0, 1):
        inputs = random_inputs(model, seed)
        result = vm["main"](*[tvm.runtime.tensor(x) for x in inputs])
        outputs = [result] if hasattr(result, "numpy") else list(result)
        for out, ref in zip(outputs, run_litert(model, inputs)):
            assert np.array_equal(out.numpy().reshape(ref.shape), ref)


def _op_of(binding) -> str:
    return getattr(getattr(binding.value, "op", None), "name", "")


def _main_ops(mod) -> list[str]:
    return [_op_of(b) for block in mod["main"].body.blocks for b in block.bindings if _op_of(b)]


def _max_lsb_diff(mod, model: bytes) -> int:
    """Largest difference between the module run on the host VM (float QDQ emulation) and LiteRT."""
    import tvm
    from tvm import relax

    from ethosu_tvm.testing.reference import random_inputs, run_litert

    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    inputs = random_inputs(model, 0)
    (expected,) = run_litert(model, inputs)
    out = vm["main"](*[tvm.runtime.tensor(x) for x in inputs]).numpy()
    return int(np.max(np.abs(out.astype(np.int32) - expected.astype(np.int32))))


def test_softmax_keeps_its_beta():
    """TVM's converter drops SOFTMAX's beta; the import scales the dequantized input by it (beta 1 stays as TVM
    writes it)."""
    from tvm.relax.frontend.tflite import from_tflite as tvm_from_tflite

    model = models.make("softmax", beta=0.5, in_scale=0.1)
    assert _max_lsb_diff(tvm_from_tflite(tflite.Model.GetRootAsModel(model, 0)), model) > 10  # beta ignored
    mod = from_tflite(model)
    assert _main_ops(mod) == ["relax.dequantize", "relax.multiply", "relax.nn.softmax", "relax.quantize"]
    (beta,) = [b.value.args[1] for b in mod["main"].body.blocks[0].bindings if _op_of(b) == "relax.multiply"]
    assert beta.value.numpy().dtype == np.float32 and float(beta.value.numpy()) == 0.5
    assert _max_lsb_diff(mod, model) <= 1  # float emulation of TFLite's integer kernel
    assert _main_ops(from_tflite(models.make("softmax", beta=1.0))) == [
        "relax.dequantize", "relax.nn.softmax", "relax.quantize"]


@pytest.mark.parametrize("op, name, channels", [("conv2d", "CONV_2D", 8), ("depthwise_conv2d", "DEPTHWISE_CONV_2D", 8),
                                                ("fully_connected", "FULLY_CONNECTED", 16)])
def test_16x8_ops_import_with_an_int32_bias(op, name, channels):
    """Relax cannot dequantize the int64 bias of a 16x8 op: it is imported as int32 while it fits (the host kernel
    widens it back); a bias beyond int32 is a one-line error naming the operator."""
    mod = from_tflite(models.make(op, dtype="int16"))
    (bias,) = [b.value.args[0] for b in mod["main"].body.blocks[0].bindings
               if _op_of(b) == "relax.dequantize" and len(b.value.args[0].ty.shape) == 1]
    assert str(bias.ty.dtype) == "int32" and bias.value.numpy().shape == (channels,)
    big = np.full(channels, 2**31, dtype=np.int64)
    with pytest.raises(UnsupportedModelError, match=f"^the TFLite frontend cannot convert operator #0 {name}: int64 "
                                                    "bias values up to 2147483648 exceed the int32 range$"):
        from_tflite(models.make(op, dtype="int16", bias_values=big))


def test_tensor_quantization_map_covers_raw_integer_ops():
    """MAX_POOL_2D imports without QDQ; the map keeps the quantization of its input and output by var name."""
    mod = from_tflite(models.make("max_pool2d", in_scale=0.25, in_zp=7))
    (pool,) = source_ops(mod)
    assert tensor_quant(mod) == {"input_0": (0.25, 7), pool.bindings[-1]: (0.25, 7)}
    assert tensor_quant(mod.without_attr("ethosu.tensor_quant")) == {}


def test_float_io_edges_are_kept_or_stripped_on_request():
    """QUANTIZE after a float input and DEQUANTIZE before a float output: imported by default (float32 params and
    results), left out with strip_float_io; the source-op map keeps the model's operator indices."""
    from ethosu_tvm.frontend.attributes import model_io_names

    model = models.make_graph("multi_io", float_io=True)
    mod = from_tflite(model)
    assert [op.op for op in source_ops(mod)] == ["QUANTIZE", "QUANTIZE", "CONV_2D", "ADD", "DEQUANTIZE", "MUL",
                                                 "MAX_POOL_2D", "DEQUANTIZE"]
    assert model_io_names(mod) == (["input_0", "input_1"], ["output_0", "output_1"])
    assert [str(p.ty.dtype) for p in mod["main"].params] == ["float32", "float32"]
    mod = from_tflite(model, strip_float_io=True)
    assert [(op.index, op.op) for op in source_ops(mod)] == [(2, "CONV_2D"), (3, "ADD"), (5, "MUL"),
                                                             (6, "MAX_POOL_2D")]
    assert model_io_names(mod) == (["input_0_int", "input_1_int"], ["output_0_int", "output_1_int"])
    assert [str(p.ty.dtype) for p in mod["main"].params] == ["int8", "int8"]


def test_shape_arithmetic_folds_to_a_constant_reshape():
    """SHAPE → STRIDED_SLICE → PACK → RESHAPE over a -1 batch signature (Keras' tf.reshape(x, [tf.shape(x)[0],
    -1])): TVM refuses SHAPE on a quantized model; the import folds the chain and keeps only the RESHAPE."""
    from tvm.relax.frontend.tflite import from_tflite as tvm_from_tflite

    model = models.make("reshape", batch_from_shape=True, new_shape=(1, 16, -1))
    with pytest.raises(Exception, match="not supported in frontend TFLite yet: 'SHAPE'"):
        tvm_from_tflite(tflite.Model.GetRootAsModel(model, 0))
    mod = from_tflite(model)
    assert [(op.index, op.op) for op in source_ops(mod)] == [(3, "RESHAPE")]
    assert _main_ops(mod) == ["relax.reshape"] and _out_shape(mod) == (1, 16, 8)


def test_space_to_batch_convolution_imports_as_one_dilated_convolution():
    """TensorFlow's dilated convolution: the reshuffles are hidden, the VALID convolution between them gets the
    dilation and the padding less the crops (SAME for a 3x3 kernel at dilation 3 on 7 rows: 3 and 3; the phases
    pad to 9 rows and crop 2 of them)."""
    model = models.make("conv2d", space_to_batch=True, dilation=3, in_shape=(1, 7, 8, 4))
    mod = from_tflite(model)
    assert [(op.index, op.op) for op in source_ops(mod)] == [(1, "CONV_2D")]
    (conv,) = [b.value for b in mod["main"].body.blocks[0].bindings if _op_of(b) == "relax.nn.conv2d"]
    assert [int(d) for d in conv.attrs.dilation] == [3, 3]
    assert [int(p) for p in conv.attrs.padding] == [3, 3, 3, 3]
    assert _out_shape(mod) == (1, 7, 8, 8)


@pytest.mark.parametrize("op, failure", [("softmax", "relax.dequantize: axis param is out of range (3)"),
                                         ("fully_connected", "FC weight QuantizedDimension() must be 0")])
def test_per_tensor_quantization_ignores_quantized_dimension(op, failure):
    """TFLite Micro's person_detect writes QuantizedDimension 3 on single-scale tensors of every rank: TVM's
    frontend takes it for an axis; one scale is per-tensor whatever the dimension says."""
    from tvm.relax.frontend.tflite import from_tflite as tvm_from_tflite

    model = models.make(op, per_tensor_axis=3)
    with pytest.raises(Exception, match=re.escape(failure)):
        tvm_from_tflite(tflite.Model.GetRootAsModel(model, 0))
    assert [o.op for o in source_ops(from_tflite(model))] == [op.upper()]


def test_vela_compiled_model_is_named():
    """A model Vela already compiled holds one CUSTOM 'ethos-u' operator: one line saying so (TVM's frontend fails
    with a NotImplementedError)."""
    with pytest.raises(UnsupportedModelError, match=r"^operator #0 CUSTOM 'ethos-u' cannot be compiled: the model "
                                                    r"was already compiled by Vela; compile the model Vela was given$"):
        from_tflite(shared_model("tflm_person_detect_vela_u55_256.tflite"))


def test_lstm_states_become_the_last_inputs_and_outputs():
    """An LSTM's variable tensors (output state, cell state) are main's last parameters (their values before the
    inference) and results (after), recorded with the byte TFLite resets them to; the model's own I/O is unchanged.
    Each step's gates are two int8 → int16 fully connected ops at the gates' scale 2^-12 and their sum."""
    net = models.Net()
    net.output(net.lstm(net.input((2, 3, 5)), units=4, state_zp=-2))
    mod = from_tflite(net.build())
    assert model_io_names(mod) == (["input_0"], ["output_0"])
    assert model_states(mod) == [State("output_state_13", 0xFE), State("cell_state_14", 0)]
    main = mod["main"]
    assert [(p.name, tuple(p.ty.shape), p.ty.dtype) for p in main.params] == [
        ("input_0", (2, 3, 5), "int8"), ("output_state_13", (2, 4), "int8"), ("cell_state_14", (2, 4), "int16")]
    assert [(tuple(f.shape), f.dtype) for f in main.body.body.ty.fields] == [((2, 3, 4), "int8"), ((2, 4), "int8"),
                                                                         ((2, 4), "int16")]
    matmuls = [line for line in main.script().splitlines() if "R.matmul(" in line]
    assert len(matmuls) == 3 * 8 and all('dtype="float32") = R.matmul' in line for line in matmuls)
    assert str(main).count('R.const(0.000244140625, "float32"), R.const(0, "int32"), out_dtype="int16"') >= 3 * 12


def test_lstm_variants_the_kernel_lacks_are_refused():
    net = models.Net()
    net.output(net.lstm(net.input((1, 3, 5)), units=4, cell_scale_log2=-11.5))
    with pytest.raises(UnsupportedModelError, match=r"operator #0 UNIDIRECTIONAL_SEQUENCE_LSTM: the cell state's "
                                                    r"scale 0\.000345267 is not a power of two$"):
        from_tflite(net.build())


def test_lstm_shapes_are_checked_and_steps_bounded():
    """Shapes as TFLite Micro's kernel checks them (met by benchmarks/fuzz.py: a mutated time axis of 14,942,211
    steps, unrolled, took all the memory), and at most MAX_STEPS steps."""
    from ethosu_tvm.frontend.recurrent import MAX_STEPS

    net = models.Net()
    net.output(net.lstm(net.input((1, MAX_STEPS + 1, 3)), units=2))
    with pytest.raises(UnsupportedModelError, match=rf"UNIDIRECTIONAL_SEQUENCE_LSTM: {MAX_STEPS + 1} time steps; "
                                                    rf"LSTMs are unrolled per step, at most {MAX_STEPS}$"):
        from_tflite(net.build())
    net = models.Net()
    y = net.lstm(net.input((1, 3, 5)), units=4)
    net.builder._tensors[y.index].shape = (1, 4, 4)
    net.output(y)
    with pytest.raises(UnsupportedModelError, match=r"the output has shape \[1, 4, 4\], expected \[1, 3, 4\]$"):
        from_tflite(net.build())


def test_empty_negative_or_huge_computed_tensors_are_refused():
    """Shapes TVM derives from an operator's attributes (met by benchmarks/fuzz.py: a pooling window wider than its
    mutated input, an internal error in the host kernel's schedule; paddings of 83,886,080, a TIR literal beyond
    int32). The file's own output shapes are left as declared, so only the computed ones are wrong."""
    from ethosu_tvm.frontend.model_check import MAX_ELEMENTS

    net = models.Net()
    x = net.input((1, 4, 4, 8))
    net.output(net.avg_pool2d(x, pool=(4, 4), stride=(4, 4)))
    net.builder._tensors[x.index].shape = (1, 4, 3, 8)
    with pytest.raises(UnsupportedModelError, match=r"^operator #0 AVERAGE_POOL_2D computes a tensor of shape "
                                                    r"\(1, 1, 0, 8\), which has no elements$"):
        from_tflite(net.build())
    net = models.Net()
    y = net.pad(net.input((1, 4, 4, 8)), paddings=((0, 0), (0, 20_000), (0, 20_000), (0, 0)))
    net.builder._tensors[y.index].shape = (1, 4, 4, 8)
    net.output(y)
    assert 20_004 * 20_004 * 8 > MAX_ELEMENTS
    with pytest.raises(UnsupportedModelError, match=r"^operator #0 PAD computes a tensor of shape \(1, 20004, 20004, "
                                                    rf"8\), which has 3,201,280,128 elements; the limit is "
                                                    rf"{MAX_ELEMENTS:,}$"):
        from_tflite(net.build())
    # benchmarks/fuzz.py --seed 63: a flipped byte made a padding of -1,811,939,328 (a host kernel's literal
    # beyond int32 before)
    net = models.Net()
    y = net.pad(net.input((1, 4, 4, 8)), paddings=((0, 0), (0, 6), (0, 0), (0, 0)))
    (paddings,) = [t for t in net.builder._tensors if t.data is not None]
    paddings.data = paddings.data * np.array([[1, 1], [1, -1], [1, 1], [1, 1]], dtype=paddings.data.dtype)
    net.builder._tensors[y.index].shape = (1, 4, 4, 8)
    net.output(y)
    with pytest.raises(UnsupportedModelError, match=r"^operator #0 PAD computes a tensor of shape \(1, -2, 4, 8\), "
                                                    r"which has a negative extent$"):
        from_tflite(net.build())


@pytest.mark.parametrize("model", [shared_model("mlperf_tiny_ic_resnet8_int8.tflite"),
                                   models.make("depthwise_conv2d", in_shape=(1, 5, 5, 1))])
def test_converter_reads_each_tensor_once_as_tvm_reads_it(model):
    """The converter keeps each tensor's wrapper (TVM's reader builds new quantization constants on every call): a
    tensor asked for again, in any list, is the same wrapper, holding what TVM's reader gives for it (one scale:
    axis 0, `test_one_channel_depthwise_weights_import`)."""
    from tvm import relax
    from tvm.relax.frontend.tflite.tflite_frontend import ExprTable, OperatorConverter

    from ethosu_tvm.frontend.converter import Rewrites
    from ethosu_tvm.frontend.operators import Converter
    from ethosu_tvm.frontend.tflite_file import read_model

    parsed = read_model(model)
    graph = parsed.Subgraphs(0)
    converter = Converter(parsed, graph, ExprTable(), relax.BlockBuilder(), Rewrites({}, {}, ()))
    indices = [int(i) for j in range(graph.OperatorsLength()) for i in graph.Operators(j).InputsAsNumpy()] + [-1]
    wrappers = converter.get_tensors(indices + indices)
    again = converter.get_tensors(indices[::-1])
    assert all(a is b for a, b in zip(wrappers, wrappers[len(indices):] + again[::-1]))
    for wrapper, fresh in zip(wrappers, OperatorConverter.get_tensors(converter, indices)):
        assert wrapper.tensor_idx == fresh.tensor_idx
        if fresh.tensor_idx < 0:
            continue
        assert (wrapper.tensor._tab.Pos, wrapper.buffer._tab.Pos) == (fresh.tensor._tab.Pos, fresh.buffer._tab.Pos)
        assert bool(wrapper.qnn_params) == bool(fresh.qnn_params)
        if fresh.qnn_params:
            scale, zero_point = (fresh.qnn_params[k].value.numpy() for k in ("scale", "zero_point"))
            assert np.array_equal(wrapper.qnn_params["scale"].value.numpy(), scale)
            assert np.array_equal(wrapper.qnn_params["zero_point"].value.numpy(), zero_point)
            assert wrapper.qnn_params["axis"] == (0 if scale.ndim == 0 else fresh.qnn_params["axis"])
