"""A model with uint8 I/O around an int8 body (the factory's uint8_io graph) through the generated C: `tvmc compile`
and `tvmc run` (npz in and out), with and without --use-workspace-io, with the cascader under a small SRAM limit,
on the host alone, and `CompiledModel.run`, equal LiteRT."""
import json

import numpy as np
import pytest

import ethosu_tvm
from ethosu_tvm.run.host_program import RunError
from ethosu_tvm.testing import models
from ethosu_tvm.testing.reference import random_inputs, run_litert

from aot_support import assert_bit_exact, compile_model, npu_target

MODEL = models.make_graph("uint8_io")


@pytest.mark.parametrize("target,extra", [(npu_target("ethos-u55-32"), ()),
                                          (npu_target("ethos-u55-256"), ("--use-workspace-io",)),
                                          ("ethos-u -accelerator-config=ethos-u55-64 -enable-cascader=1,c",
                                           ("--cascader-sram-limit", "1200")),
                                          ("c", ("--use-workspace-io",))])
def test_tvmc_compile_and_run(target, extra, tmp_path):
    assert_bit_exact(MODEL, compile_model(MODEL, tmp_path, target, *extra), tmp_path)
    header = (tmp_path / "mlf/codegen/host/include/tvmgen_default.h").read_text()
    assert "/* input_0: uint8 [1, 12, 12, 3] */" in header and "/* output_0: uint8 [1, 6, 6, 4] */" in header
    interface = json.loads((tmp_path / "mlf/src/interface.json").read_text())
    assert [f["dtype"] for f in interface["inputs"] + interface["outputs"]] == ["uint8", "uint8"]


def test_compiled_model_run():
    module = ethosu_tvm.build(ethosu_tvm.from_tflite(MODEL), target=npu_target("ethos-u55-128"))
    assert module.offload.counts() == {"ethos-u": 5}
    for seed in range(3):
        (x,) = random_inputs(MODEL, seed)
        (expected,) = run_litert(MODEL, [x])
        got = module.run({"input_0": x})["output_0"]
        assert got.dtype == np.uint8 and np.array_equal(got, expected)
    with pytest.raises(RunError, match=r"^input 'input_0' must be uint8 of shape \(1, 12, 12, 3\), got int8 "):
        module.run({"input_0": x.astype(np.int8)})


def _uint8_reshapes() -> bytes:
    """uint8 RESHAPEs (which TFLite Micro runs) before the QUANTIZE into int8 and after the one back into uint8."""
    net = models.Net(0)
    x = net.quantize(net.reshape(net.input((1, 4, 4, 3), "uint8", scale=1 / 255, zero_point=0), (1, 48)))
    net.output(net.reshape(net.quantize(net.relu(x), out_dtype="uint8"), (4, 12)))
    return net.build()


@pytest.mark.parametrize("target, counts", [(npu_target("ethos-u55-64"), {"host": 2, "ethos-u": 3}),
                                            ("c", {"host": 5})])
def test_uint8_reshape_is_a_host_copy(target, counts):
    model = _uint8_reshapes()
    module = ethosu_tvm.build(ethosu_tvm.from_tflite(model), target=target)
    assert module.offload.counts() == counts
    for seed in range(2):
        inputs = random_inputs(model, seed)
        (expected,) = run_litert(model, inputs)
        got = module.run({"input_0": inputs[0]})["output_0"]
        assert got.dtype == np.uint8 and got.shape == (4, 12) and np.array_equal(got, expected)
