"""Host-only `cmsis-nn,c -mcpu=cortex-m55` builds linked with CMSIS-NN's Cortex-M55 (MVE) library through the
tarball's CMakeLists.txt and run on QEMU mps3-an547: the MVE paths, with the context buffers and kernel sums this
project sizes and computes, bit-exact with LiteRT. Opt-in: ETHOSU_TVM_CMSIS_NN names the library folder."""
from __future__ import annotations

import os
import tarfile
from pathlib import Path

import numpy as np
import pytest
from qemu_harness import build_and_run, parse_dumps, single_io_main_c

import ethosu_tvm
from ethosu_tvm.testing import models, shared_model
from ethosu_tvm.testing.reference import random_inputs, run_litert

pytestmark = pytest.mark.skipif(not os.environ.get("ETHOSU_TVM_CMSIS_NN"),
                                reason="ETHOSU_TVM_CMSIS_NN names no CMSIS-NN build (include/, lib/cortex-m55/): the "
                                       "linked tier needs one (docs/firmware.md)")
SEEDS = range(3)


def _imported_cmsis_nn() -> tuple[str, ...]:
    """CMake lines defining the target `cmsis-nn` as the prebuilt Cortex-M55 library."""
    root = Path(os.environ["ETHOSU_TVM_CMSIS_NN"])
    return ("add_library(cmsis-nn STATIC IMPORTED)",
            f"set_target_properties(cmsis-nn PROPERTIES IMPORTED_LOCATION {root / 'lib/cortex-m55/libcmsis-nn.a'} "
            f"INTERFACE_INCLUDE_DIRECTORIES {root / 'include'})")


def _assert_exact_on_qemu(model: bytes, directory: Path) -> ethosu_tvm.CompiledModel:
    module = ethosu_tvm.build(ethosu_tvm.from_tflite(model), target="cmsis-nn,c -mcpu=cortex-m55")
    module.export_model_library_format(directory / "model.tar")
    with tarfile.open(directory / "model.tar") as tar:
        tar.extractall(directory / "mlf", filter="data")
    inputs = [random_inputs(model, seed)[0] for seed in SEEDS]
    expected = [run_litert(model, [x])[0] for x in inputs]
    result = build_and_run(single_io_main_c(inputs, expected[0]), directory, directory / "mlf",
                           libraries=_imported_cmsis_nn())
    assert result.exit_code == 0, result.stderr
    dumps = parse_dumps(result.stdout)
    for seed in SEEDS:
        got = np.frombuffer(dumps[f"output_{seed}"], dtype=expected[seed].dtype).reshape(expected[seed].shape)
        np.testing.assert_array_equal(got, expected[seed], err_msg=f"seed {seed}")
    return module


@pytest.mark.parametrize("name", ["mlperf_tiny_kws_dscnn_int8", "mlperf_tiny_ic_resnet8_int8"])
def test_mlperf_tiny_on_cortex_m55(name, tmp_path):
    module = _assert_exact_on_qemu(shared_model(f"{name}.tflite"), tmp_path)
    assert module.kernel_libraries


FACTORY = {  # forms whose MVE paths differ: generic, 1x1 fast and strided, 1xN, depthwise opt and generic, one channel
    # to conv, pools, FC with kernel sums
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


@pytest.mark.parametrize("case", FACTORY)
def test_factory_ops_on_cortex_m55(case, tmp_path):
    module = _assert_exact_on_qemu(models.make(case.split()[0], 1, **FACTORY[case]), tmp_path)
    assert [step.kernel.library for step in module.program.steps] == ["cmsis-nn"]
