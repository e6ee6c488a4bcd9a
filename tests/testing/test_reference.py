"""Reference runtimes and the safe .tflite reader."""
import numpy as np
import pytest

from ethosu_tvm.frontend.tflite_file import ModelFormatError, input_infos, read_model
from ethosu_tvm.testing import SharedModelMissing, models, shared_model
from ethosu_tvm.testing.reference import _tflm_runs, random_inputs, run_litert, run_tflm, tflm_arena_size


def test_random_inputs_honour_dtype_shape_and_seed():
    model = models.make_graph("multi_io")
    first = random_inputs(model, 7)
    assert [(x.dtype, x.shape) for x in first] == [(np.dtype(np.int8), (1, 8, 8, 4))] * 2
    assert all(np.array_equal(a, b) for a, b in zip(first, random_inputs(model, 7)))
    assert not np.array_equal(first[0], random_inputs(model, 8)[0])
    (wide,) = random_inputs(models.make("tanh", dtype="int16"), 0)
    assert wide.dtype == np.int16 and wide.min() < -20000 and wide.max() > 20000


def test_inputs_are_checked():
    model = models.make("add")
    x = random_inputs(model, 0)
    with pytest.raises(ValueError, match="the model has 2 inputs, 1 were given"):
        run_litert(model, x[:1])
    with pytest.raises(ValueError, match=r"input 'input_1' needs int8 \(1, 8, 8, 8\), got int16"):
        run_tflm(model, [x[0], x[1].astype(np.int16)])


@pytest.mark.parametrize("name", ["mlperf_tiny_kws_dscnn_int8.tflite", "mlperf_tiny_ad_fc_autoencoder_int8.tflite"])
def test_tflm_arena_is_minimal(name):
    model = shared_model(name)
    size = tflm_arena_size(model)
    inputs, n_outputs = random_inputs(model, 0), 1
    assert _tflm_runs(model, size, inputs, n_outputs)
    assert not _tflm_runs(model, size - 1, inputs, n_outputs)


def test_tflm_arena_survives_crashing_probes():
    """Too-small arenas crash TFLite Micro on this model; probing must not take the test process down."""
    assert tflm_arena_size(models.make_graph("inverted_residual")) > 4096


def test_shared_models_run_identically():
    model = shared_model("mlperf_tiny_kws_dscnn_int8.tflite")
    inputs = random_inputs(model, 3)
    np.testing.assert_array_equal(run_litert(model, inputs)[0], run_tflm(model, inputs)[0])


def test_missing_shared_model_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("ETHOSU_TVM_MODELS", str(tmp_path))
    with pytest.raises(SharedModelMissing) as info:
        shared_model("nothing.tflite")
    assert str(info.value) == f"model nothing.tflite not found in {tmp_path}; set ETHOSU_TVM_MODELS to the folder " \
                              "of the shared models"
    assert isinstance(info.value, FileNotFoundError)


@pytest.mark.parametrize("data,message", [
    (b"", "not a TFLite flatbuffer"),
    (b"\x00" * 64, "not a TFLite flatbuffer"),
    (b"PK\x03\x04" + b"\x00" * 60, "not a TFLite flatbuffer"),
])
def test_not_a_model(data, message):
    with pytest.raises(ModelFormatError, match=message):
        read_model(data)


def test_truncated_model():
    model = models.make("conv2d")
    with pytest.raises(ModelFormatError, match="truncated or corrupt"):
        input_infos(model[: len(model) // 3])
