"""The PC runner of an MLF: input checking, and a failing NPU launch surfacing as a non-zero return."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest
from aot_support import compile_model, extract, npu_target

from ethosu_tvm.run import HostProgram, RunError
from ethosu_tvm.testing import models


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    directory = tmp_path_factory.mktemp("conv")
    archive = compile_model(models.make("conv2d", 0), directory, npu_target("ethos-u55-128"))
    return HostProgram(extract(archive, directory / "mlf"), directory)


def test_inputs_are_checked(program):
    with pytest.raises(RunError, match=r"^input 'input_0' must be int8 of shape \(1, 8, 8, 4\), got int16 of shape "
                                       r"\(1, 8, 8, 4\)$"):
        program.run([np.zeros((1, 8, 8, 4), np.int16)])
    with pytest.raises(RunError, match="^inputs must be named input_0; unknown: x; missing: input_0$"):
        program.run({"x": np.zeros((1, 8, 8, 4), np.int8)})
    with pytest.raises(RunError, match="^the model takes 1 inputs, got 2$"):
        program.run([np.zeros((1, 8, 8, 4), np.int8)] * 2)


def test_simulator_failure_is_reported(program, monkeypatch):
    def fail(stream, regions):
        raise RuntimeError("region 3 is too small")

    monkeypatch.setattr(program._simulator, "run", fail)
    with pytest.raises(RunError, match="^NPU launch failed in the simulator: region 3 is too small$"):
        program.run([np.zeros((1, 8, 8, 4), np.int8)])


def test_driver_failure_makes_run_return_non_zero(program):
    """With no invoke function the stand-in driver fails like a real one would; the runner must say so."""
    program._library.ethosu_tvm_set_invoke(ctypes.c_void_p(None))
    try:
        with pytest.raises(RunError, match="^tvmgen_default_run returned -1$"):
            program.run([np.zeros((1, 8, 8, 4), np.int8)])
    finally:
        program._library.ethosu_tvm_set_invoke(program._callback)
    assert program.run([np.ones((1, 8, 8, 4), np.int8)])["output_0"].shape == (1, 8, 8, 8)


def test_python_build_estimates_cycles_in_the_target_system():
    """`module.npu_cycles` is the target's system's estimate: flash at half the speed (Deep_Embedded) costs a
    weight-bound convolution more; the outputs are LiteRT's either way."""
    import ethosu_tvm
    from ethosu_tvm.testing.reference import random_inputs, run_litert

    model = models.make("conv2d", seed=4, in_shape=(1, 32, 32, 16), out_channels=16)
    (x,) = random_inputs(model, 0)
    cycles = {}
    for system in ("Ethos_U55_High_End_Embedded", "Ethos_U55_Deep_Embedded"):
        module = ethosu_tvm.build(ethosu_tvm.from_tflite(model),
                                  target=f"ethos-u -accelerator-config=ethos-u55-128 -system-config={system},c")
        (got,) = module.run([x]).values()
        assert np.array_equal(got, run_litert(model, [x])[0])
        cycles[system] = module.npu_cycles
    assert cycles["Ethos_U55_Deep_Embedded"] > cycles["Ethos_U55_High_End_Embedded"] > 0
