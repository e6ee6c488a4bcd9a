"""Import: the MLPerf Tiny models, the source-operator map, the FC-on-N-D fix and the typed rejections."""
import numpy as np
import pytest
import tflite

from ethosu_tvm.frontend.importer import (
    DynamicShapeError,
    FloatModelError,
    ModelImportError,
    UnsupportedModelError,
    from_tflite,
    source_ops,
)
from ethosu_tvm.frontend.tflite_file import ModelFormatError
from ethosu_tvm.testing import models, shared_model
from ethosu_tvm.testing.tflite_builder import ModelBuilder, Quantization

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


def _float_add() -> bytes:
    builder = ModelBuilder()
    a = builder.add_tensor("a", (1, 4), np.float32)
    b = builder.add_tensor("b", (1, 4), np.float32)
    c = builder.add_tensor("c", (1, 4), np.float32)
    builder.add_operator(tflite.BuiltinOperator.ADD, [a, b], [c], "AddOptions", {})
    return builder.build([a, b], [c], ["a", "b"], ["c"])


def _dynamic_relu() -> bytes:
    builder = ModelBuilder()
    quant = Quantization((0.1,), (0,))
    x = builder.add_tensor("x", (1, -1, 8), np.int8, quantization=quant)
    y = builder.add_tensor("y", (1, -1, 8), np.int8, quantization=quant)
    builder.add_operator(tflite.BuiltinOperator.RELU, [x], [y])
    return builder.build([x], [y], ["x"], ["y"])


def test_float_model_is_rejected():
    with pytest.raises(FloatModelError, match="^tensor 'a' is floating point: only int8-quantized models can be "
                                               "compiled$"):
        from_tflite(_float_add())


def test_dynamic_shape_is_rejected():
    with pytest.raises(DynamicShapeError, match=r"^tensor 'x' has a dynamic shape \(1, -1, 8\): only static "
                                                 r"shapes can be compiled$"):
        from_tflite(_dynamic_relu())


def test_unsupported_operator_and_bad_bytes():
    with pytest.raises(UnsupportedModelError, match="^the TFLite frontend cannot convert the model: .*'PRELU'"):
        from_tflite(models.make("prelu"))
    with pytest.raises(ModelFormatError):
        from_tflite(b"not a model at all")
    assert issubclass(UnsupportedModelError, ModelImportError) and issubclass(ModelImportError, ValueError)


@pytest.mark.parametrize("op", ["pad", "squeeze", "expand_dims", "transpose", "slice", "strided_slice", "split",
                                "pack", "resize_nearest_neighbor"])
def test_value_moving_ops_import_exactly(op):
    """TVM refuses these on quantized models although its converters are exact for them (EXPAND_DIMS is fixed
    here): the imported module, run on the host, equals LiteRT."""
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
