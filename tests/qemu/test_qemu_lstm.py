"""An integer LSTM, host-only for Cortex-M55 on QEMU mps3-an547: one firmware runs it three times in a row, its
states kept by the runner between the runs, each output equal to TFLite Micro's interpreter invoked as often."""
from __future__ import annotations

import tarfile

import numpy as np
from qemu_harness import build_and_run, parse_dumps, single_io_main_c

import ethosu_tvm
from ethosu_tvm.testing import models
from ethosu_tvm.testing.reference import random_inputs, run_tflm_sequence


def test_lstm_states_carry_over_on_cortex_m55(tmp_path):
    net = models.Net(seed=1)
    net.output(net.lstm(net.input((1, 5, 6)), units=8, state_scale=0.0123, state_zp=3))
    model = net.build()
    module = ethosu_tvm.build(ethosu_tvm.from_tflite(model), target="c -mcpu=cortex-m55")
    module.export_model_library_format(tmp_path / "m.tar")
    with tarfile.open(tmp_path / "m.tar") as tar:
        tar.extractall(tmp_path / "mlf", filter="data")
    mlf = tmp_path / "mlf"
    sequence = [random_inputs(model, seed) for seed in range(3)]
    expected = [outputs[0] for outputs in run_tflm_sequence(model, sequence)]
    assert not np.array_equal(expected[1], run_tflm_sequence(model, sequence[1:2])[0][0])  # the states matter
    result = build_and_run(single_io_main_c([x[0] for x in sequence], expected[0]), tmp_path, mlf)
    assert result.exit_code == 0, result.stderr
    dumps = parse_dumps(result.stdout)
    for i, want in enumerate(expected):
        got = np.frombuffer(dumps[f"output_{i}"], dtype=np.int8).reshape(want.shape)
        np.testing.assert_array_equal(got, want, err_msg=f"invocation {i}")
