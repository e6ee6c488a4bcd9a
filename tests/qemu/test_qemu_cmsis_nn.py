"""Host-only `cmsis-nn,c` builds linked with CMSIS-NN's prebuilt library through the tarball's CMakeLists.txt and
run on QEMU: the Cortex-M55 (MVE) build on mps3-an547 and the Cortex-M7 (DSP) one on mps2-an500, each with the
context buffers and kernel sums this project sizes and computes for that CPU, bit-exact with LiteRT. Opt-in:
ETHOSU_TVM_CMSIS_NN names the library folder."""
from __future__ import annotations

import os
import tarfile
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from qemu_harness import build_and_run, io_main_c, parse_dumps

import ethosu_tvm
from ethosu_tvm.host.cmsis_nn import choice
from ethosu_tvm.run.kernel_libraries import cmsis_nn_folder
from ethosu_tvm.testing import models, shared_model
from ethosu_tvm.testing.reference import random_inputs, run_litert

pytestmark = pytest.mark.skipif(not os.environ.get("ETHOSU_TVM_CMSIS_NN"),
                                reason="ETHOSU_TVM_CMSIS_NN names no CMSIS-NN build (include/, lib/cortex-m55/, "
                                       "lib/cortex-m7/): the linked tier needs one (docs/firmware.md)")
SEEDS = range(3)


def _imported_cmsis_nn(cpu: str) -> tuple[str, ...]:
    """CMake lines defining the target `cmsis-nn` as the prebuilt library for `cpu`."""
    include, archive = cmsis_nn_folder(cpu)
    return ("add_library(cmsis-nn STATIC IMPORTED)",
            f"set_target_properties(cmsis-nn PROPERTIES IMPORTED_LOCATION {archive} "
            f"INTERFACE_INCLUDE_DIRECTORIES {include})")


def _assert_exact_on_qemu(model: bytes, directory: Path, cpu: str = "cortex-m55") -> ethosu_tvm.CompiledModel:
    module = ethosu_tvm.build(ethosu_tvm.from_tflite(model), target=f"cmsis-nn,c -mcpu={cpu}")
    module.export_model_library_format(directory / "model.tar")
    with tarfile.open(directory / "model.tar") as tar:
        tar.extractall(directory / "mlf", filter="data")
    inputs = [random_inputs(model, seed) for seed in SEEDS]
    expected = [run_litert(model, x)[0] for x in inputs]
    result = build_and_run(io_main_c(inputs, expected[0]), directory, directory / "mlf",
                           libraries=_imported_cmsis_nn(cpu), cpu=cpu)
    assert result.exit_code == 0, result.stderr
    dumps = parse_dumps(result.stdout)
    for seed in SEEDS:
        got = np.frombuffer(dumps[f"output_{seed}"], dtype=expected[seed].dtype).reshape(expected[seed].shape)
        np.testing.assert_array_equal(got, expected[seed], err_msg=f"seed {seed}")
    return module


@pytest.mark.parametrize("cpu", ["cortex-m55", "cortex-m7"])
@pytest.mark.parametrize("name", ["mlperf_tiny_kws_dscnn_int8", "mlperf_tiny_ic_resnet8_int8"])
def test_mlperf_tiny(name, cpu, tmp_path):
    module = _assert_exact_on_qemu(shared_model(f"{name}.tflite"), tmp_path, cpu)
    assert module.kernel_libraries


FACTORY = {  # forms whose paths differ: generic, 1x1 fast and strided, 1xN, depthwise 3x3, opt and generic, one
    # channel to conv (MVE), pools, FC (kernel sums on MVE)
    "conv2d": {},
    "conv2d 1x1": {"kernel": (1, 1)},
    "conv2d 1x1 strided": {"kernel": (1, 1), "stride": (2, 2), "padding": "VALID"},
    "conv2d 1xN": {"in_shape": (1, 1, 12, 8), "kernel": (1, 3)},
    "conv2d dilated, two batches": {"dilation": (2, 2), "in_shape": (2, 9, 9, 4), "activation": "RELU6"},
    "depthwise_conv2d": {},
    "depthwise_conv2d multiplier 4": {"depth_multiplier": 4, "in_shape": (1, 8, 8, 2)},
    "depthwise_conv2d one channel": {"depth_multiplier": 8, "in_shape": (1, 8, 8, 1)},
    "avg_pool2d": {"pool": (3, 3), "stride": (2, 2), "padding": "SAME"},
    "max_pool2d": {},
    "fully_connected": {"in_scale": 0.5, "in_zp": 3, "w_scales": [0.25], "out_scale": 0.125, "out_zp": -5,
                        "bias": False},
}


@pytest.mark.parametrize("cpu", ["cortex-m55", "cortex-m7"])
@pytest.mark.parametrize("case", FACTORY)
def test_factory_ops(case, cpu, tmp_path):
    module = _assert_exact_on_qemu(models.make(case.split()[0], 1, **FACTORY[case]), tmp_path, cpu)
    ours = cpu == "cortex-m7" and "pool" in case  # faster than CMSIS-NN's on DSP cores (choice.py)
    assert [step.kernel.library for step in module.program.steps] == ["" if ours else "cmsis-nn"]


ELEMENTWISE = {  # the kernels' vector loops and their tails (odd sizes), s8 and s16, clamps, a constant operand
    "add": {},
    "add relu6 odd": {"in_shape": (1, 3, 5, 7), "activation": "RELU6", "in_zp": 9, "in2_scale": 0.3},
    "add constant": {"constant_lhs": (1, 8, 8, 8)},
    "add int16 odd": {"dtype": "int16", "in_shape": (1, 5, 7), "in2_scale": 1 / 512},
    "mul relu": {"activation": "RELU", "in_zp": -7},
    "mul int16 odd": {"dtype": "int16", "in_shape": (1, 5, 7), "activation": "RELU_N1_TO_1"},
    "add broadcast": {"in2_shape": (1, 1, 1, 8)},
    "mul broadcast": {"in2_shape": (8,)},
}


@pytest.mark.parametrize("cpu", ["cortex-m55", "cortex-m7"])
@pytest.mark.parametrize("case", ELEMENTWISE)
def test_elementwise(case, cpu, tmp_path):
    """Every exact ADD/MUL call taken (choice.py's table emptied, so that the M7 runs CMSIS-NN's DSP path too);
    broadcasts stay ours."""
    with mock.patch.dict(choice.OURS_FASTER, clear=True):
        module = _assert_exact_on_qemu(models.make(case.split()[0], 1, **ELEMENTWISE[case]), tmp_path, cpu)
    assert [step.kernel.library for step in module.program.steps] == ["" if "broadcast" in case else "cmsis-nn"]
