"""A host-only (`--target=c -mcpu=cortex-m55`) build of MLPerf Tiny KWS, linked into a bare-metal program and run
on QEMU mps3-an547 (Cortex-M55): outputs bit-exact with LiteRT on 5 seeded inputs."""
from __future__ import annotations

import tarfile

import numpy as np
from qemu_harness import build_and_run, parse_dumps, single_io_main_c

import ethosu_tvm
from ethosu_tvm.testing import shared_model
from ethosu_tvm.testing.reference import random_inputs, run_litert

SEEDS = range(5)


def test_kws_host_only_on_cortex_m55(tmp_path):
    model = shared_model("mlperf_tiny_kws_dscnn_int8.tflite")
    module = ethosu_tvm.build(ethosu_tvm.from_tflite(model), target="c -mcpu=cortex-m55")
    assert not module.program.has_npu
    module.export_model_library_format(tmp_path / "kws.tar")
    with tarfile.open(tmp_path / "kws.tar") as tar:
        tar.extractall(tmp_path / "mlf", filter="data")
    mlf = tmp_path / "mlf"
    inputs = [random_inputs(model, seed)[0] for seed in SEEDS]
    expected = [run_litert(model, [x])[0] for x in inputs]
    assert len({e.tobytes() for e in expected}) > 1  # the inputs lead to different outputs
    result = build_and_run(single_io_main_c(inputs, expected[0]), tmp_path, mlf)
    assert result.exit_code == 0, result.stderr
    dumps = parse_dumps(result.stdout)
    for seed in SEEDS:
        got = np.frombuffer(dumps[f"output_{seed}"], dtype=np.int8).reshape(expected[seed].shape)
        np.testing.assert_array_equal(got, expected[seed], err_msg=f"seed {seed}")
