"""A model with float32 I/O, host-only for Cortex-M55 on QEMU mps3-an547: its QUANTIZE (float32 division, roundf)
and DEQUANTIZE host kernels give LiteRT's bits on the M55's FPU too, halfway cases included."""
from __future__ import annotations

import tarfile

import numpy as np
from qemu_harness import build_and_run, parse_dumps, single_io_main_c

import ethosu_tvm
from ethosu_tvm.testing import models
from ethosu_tvm.testing.reference import random_inputs, run_litert


def test_float_io_host_only_on_cortex_m55(tmp_path):
    model = models.make("conv2d", in_scale=0.25, in_zp=3, float_io=True)
    module = ethosu_tvm.build(ethosu_tvm.from_tflite(model), target="c -mcpu=cortex-m55")
    module.export_model_library_format(tmp_path / "m.tar")
    with tarfile.open(tmp_path / "m.tar") as tar:
        tar.extractall(tmp_path / "mlf", filter="data")
    mlf = tmp_path / "mlf"
    shape = random_inputs(model, 0)[0].shape
    halfway = np.resize(np.arange(-40.5, 40.5, 0.125, dtype=np.float32), shape)  # x / 0.25 = k + 0.5 for odd 8x
    inputs = [halfway, random_inputs(model, 1)[0], (random_inputs(model, 2)[0] * 30).astype(np.float32)]
    expected = [run_litert(model, [x])[0] for x in inputs]
    result = build_and_run(single_io_main_c(inputs, expected[0]), tmp_path, mlf)
    assert result.exit_code == 0, result.stderr
    dumps = parse_dumps(result.stdout)
    for i, want in enumerate(expected):
        got = np.frombuffer(dumps[f"output_{i}"], dtype=np.float32).reshape(want.shape)
        np.testing.assert_array_equal(got.view(np.int32), want.view(np.int32), err_msg=f"input set {i}")
