"""tvmc compile → tvmc run → bit-exact with LiteRT BUILTIN_REF, on ethos-u55-128 and -256, 5 seeded inputs:
every factory op kind the NPU or a host kernel covers, every factory graph, and the four MLPerf Tiny models."""
from __future__ import annotations

import re

import pytest
from aot_support import ACCELERATORS, assert_bit_exact, compile_model, npu_target

from ethosu_tvm.cli import main as tvmc
from ethosu_tvm.testing import models, shared_model

# Op kinds with no NPU pattern and no host kernel yet: test_unsupported_ops checks their error.
UNSUPPORTED = {"split", "strided_slice", "slice", "resize_nearest_neighbor", "resize_bilinear", "transpose_conv",
               "exp", "sum", "transpose", "pack", "prelu"}
UNSUPPORTED_INT16 = {"conv2d", "depthwise_conv2d", "fully_connected"}  # the TFLite frontend rejects 16x8 kernels
MLPERF = ("mlperf_tiny_kws_dscnn_int8.tflite", "mlperf_tiny_vww_mobilenetv1_96_int8.tflite",
          "mlperf_tiny_ic_resnet8_int8.tflite", "mlperf_tiny_ad_fc_autoencoder_int8.tflite")

CASES = ([pytest.param(op, "int8", id=op) for op in models.OPS if op not in UNSUPPORTED]
         + [pytest.param(op, "int16", id=f"{op}-int16") for op in sorted(models._INT16_OPS)
            if op not in UNSUPPORTED_INT16])


@pytest.mark.parametrize("accelerator", ACCELERATORS)
@pytest.mark.parametrize("op,dtype", CASES)
def test_factory_op(op, dtype, accelerator, tmp_path):
    model = models.make(op, 0, dtype=dtype)
    assert_bit_exact(model, compile_model(model, tmp_path, npu_target(accelerator)), tmp_path)


@pytest.mark.parametrize("accelerator", ACCELERATORS)
@pytest.mark.parametrize("graph", models.GRAPHS)
def test_factory_graph(graph, accelerator, tmp_path):
    model = models.make_graph(graph)
    assert_bit_exact(model, compile_model(model, tmp_path, npu_target(accelerator)), tmp_path)


@pytest.mark.parametrize("accelerator", ACCELERATORS)
@pytest.mark.parametrize("name", MLPERF)
def test_mlperf_model(name, accelerator, tmp_path):
    model = shared_model(name)
    assert_bit_exact(model, compile_model(model, tmp_path, npu_target(accelerator)), tmp_path)


@pytest.mark.parametrize("graph", models.GRAPHS)
def test_host_only_graph(graph, tmp_path):
    """--target=c: every operator as a host kernel."""
    model = models.make_graph(graph)
    assert_bit_exact(model, compile_model(model, tmp_path, "c"), tmp_path)


TFLITE_NAMES = {"split": "SPLIT", "strided_slice": "STRIDED_SLICE", "slice": "SLICE",
                "resize_nearest_neighbor": "RESIZE_NEAREST_NEIGHBOR", "resize_bilinear": "RESIZE_BILINEAR",
                "transpose_conv": "TRANSPOSE_CONV", "exp": "EXP", "sum": "SUM", "transpose": "TRANSPOSE", "pack": "PACK", "prelu": "PRELU",
                "conv2d-int16": "CONV_2D", "depthwise_conv2d-int16": "DEPTHWISE_CONV_2D",
                "fully_connected-int16": "FULLY_CONNECTED"}


@pytest.mark.parametrize("case", TFLITE_NAMES)
def test_unsupported_op_is_named(case, tmp_path, capsys):
    op, _, dtype = case.partition("-")
    model = models.make(op, 0, dtype=dtype or "int8")
    (tmp_path / "m.tflite").write_bytes(model)
    status = tvmc(["compile", str(tmp_path / "m.tflite"), f"--target={npu_target('ethos-u55-128')}",
                   "-o", str(tmp_path / "m.tar")])
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert status == 2 and error.startswith("tvmc: error: ")
    assert re.search(rf"\b{TFLITE_NAMES[case]}\b", error), error
    assert not (tmp_path / "m.tar").exists()
