"""TFLite Micro's own SEANet integration tests (tensorflow/tflite-micro, integration_tests/seanet; in the shared
model folder): 127 single-operator int16 models with golden inputs and outputs written by its authors. Each model
is built once per target (ethos-u55-128, and c alone) and its golden input run through the generated C
(`CompiledModel.run`, NPU launches in the simulator): the output equals the golden one exactly, and the offload
report puts on the NPU what Vela 5.2 (ethos-u55-128) offloads. The goldens themselves are LiteRT's reference
kernels' results; the installed TFLite Micro, which now computes LEAKY_RELU's multipliers in double, differs from
them in four models. The two QUANTIZE models (from and to int32) wait for unnamed tensors to be read."""
from pathlib import Path

import numpy as np
import pytest

import ethosu_tvm
from ethosu_tvm.frontend.tflite_file import input_infos, output_infos
from ethosu_tvm.testing import shared_model, shared_models_dir
from ethosu_tvm.testing.reference import run_litert, run_tflm

FOLDER = "tflm_seanet"
COUNTS = {"add": 17, "conv": 22, "leaky_relu": 23, "pad": 19, "quantize": 2, "strided_slice": 34, "sub": 5,
          "transpose_conv": 5}
# What Vela 5.2 leaves on the CPU, and our reason: TRANSPOSE_CONV of stride 1x2 over more than one row, QUANTIZE
# from or to int32.
ONE_BY_TWO = "TRANSPOSE_CONV stride HxW is 1x2; it must be 1x1 or 2x2, or 1x2 with an IFM and kernel height of 1"
HOST = {f"transpose_conv{i}": ONE_BY_TWO for i in (0, 1, 2, 4)}
HOST["quantize0"] = "IFM has data type int32; tensors must be of type int8"  # QUANTIZE from int32
HOST["quantize1"] = "OFM has data type int32; tensors must be of type int8, int16"  # QUANTIZE to int32
# TFLite Micro (the installed one) computes LEAKY_RELU's multipliers in double; LiteRT and the goldens in float32.
# Elements of its output that differ from the golden one, each by 1.
TFLM_DIFFERS = {"leaky_relu3": 3, "leaky_relu11": 1, "leaky_relu18": 1, "leaky_relu19": 1}
CASES = [f"{kind}{i}" for kind, count in COUNTS.items() for i in range(count)]
TARGETS = {"npu": "ethos-u -accelerator-config=ethos-u55-128,c", "host": "c"}


def _csv(path: Path, dtype: str) -> np.ndarray:
    return np.loadtxt(path, delimiter=",", dtype=np.int64, ndmin=1).astype(dtype)


def _case(name: str) -> tuple[bytes, list[np.ndarray], np.ndarray]:
    """The model, its golden inputs (`<name>_input<k>_<dtype>.csv`) and golden output."""
    folder = f"{FOLDER}/{name.rstrip('0123456789')}"
    model = shared_model(f"{folder}/{name}.tflite")
    directory = shared_models_dir() / folder
    inputs = [_csv(directory / f"{name}_input{k}_{info.dtype}.csv", info.dtype).reshape(info.shape)
              for k, info in enumerate(input_infos(model))]
    (output,) = output_infos(model)
    return model, inputs, _csv(directory / f"{name}_golden_{output.dtype}.csv", output.dtype).reshape(output.shape)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", CASES)
def test_golden_output(name, target):
    model, inputs, golden = _case(name)
    module = ethosu_tvm.build(ethosu_tvm.from_tflite(model), target=TARGETS[target])
    (got,) = module.run({info.name: x for info, x in zip(input_infos(model), inputs)}).values()
    np.testing.assert_array_equal(got.reshape(golden.shape), golden)
    if target == "npu":
        (op,) = module.offload.ops
        assert (op.target, op.reason) == (("host", HOST[name]) if name in HOST else ("ethos-u", "")), str(op)


@pytest.mark.parametrize("name", CASES)
def test_goldens_are_the_reference(name):
    """LiteRT's reference kernels give every golden output; TFLite Micro all but the LEAKY_RELU elements listed."""
    model, inputs, golden = _case(name)
    np.testing.assert_array_equal(run_litert(model, inputs)[0], golden)
    (tflm,) = run_tflm(model, inputs)
    differing = tflm != golden
    assert np.count_nonzero(differing) == TFLM_DIFFERS.get(name, 0)
    assert np.all(np.abs(tflm[differing].astype(np.int64) - golden[differing]) == 1)
