"""tvmc compile → tvmc run → bit-exact with LiteRT BUILTIN_REF (TFLite Micro where BUILTIN_REF is wrong),
on ethos-u55-128 and -256, 5 seeded inputs: every factory op kind the NPU or a host kernel covers, every factory
graph, and the four MLPerf Tiny models."""
from __future__ import annotations

import re

import pytest
from aot_support import ACCELERATORS, assert_bit_exact, compile_model, members, npu_target

from ethosu_tvm.cli import main as tvmc
from ethosu_tvm.testing import models, shared_model
from ethosu_tvm.testing.reference import reference_runner

# Op kinds with no NPU pattern and no host kernel yet: test_unsupported_ops checks their error.
UNSUPPORTED = {"squared_difference"}
MLPERF = ("mlperf_tiny_kws_dscnn_int8.tflite", "mlperf_tiny_vww_mobilenetv1_96_int8.tflite",
          "mlperf_tiny_ic_resnet8_int8.tflite", "mlperf_tiny_ad_fc_autoencoder_int8.tflite")

CASES = ([pytest.param(op, "int8", id=op) for op in models.OPS if op not in UNSUPPORTED]
         + [pytest.param(op, "int16", id=f"{op}-int16") for op in sorted(models._INT16_OPS)])


@pytest.mark.parametrize("accelerator", ACCELERATORS)
@pytest.mark.parametrize("op,dtype", CASES)
def test_factory_op(op, dtype, accelerator, tmp_path):
    model = models.make(op, 0, dtype=dtype)
    # LiteRT's reference kernel is wrong or missing for some ops (REF_KERNEL_WRONG, REF_KERNEL_MISSING): TFLite
    # Micro is their reference.
    assert_bit_exact(model, compile_model(model, tmp_path, npu_target(accelerator)), tmp_path,
                     reference=reference_runner(op))


NPU_REJECTED_MEANS = {
    "width-only": (dict(axis=(2,), keep_dims=False), "MEAN over axes [2] of a 4-D tensor; only height and width"),
    "requantizing": (dict(out_scale=0.05, out_zp=9), "MEAN with different input and output scales"),
}


@pytest.mark.parametrize("case", NPU_REJECTED_MEANS)
def test_mean_the_npu_rejects_runs_on_the_host(case, tmp_path):
    """The MEAN forms a U55 constraint rejects fall back to the host kernel; the offload report keeps the reason."""
    params, reason = NPU_REJECTED_MEANS[case]
    model = models.make("mean", 0, **params)
    archive = compile_model(model, tmp_path, npu_target("ethos-u55-128"))
    assert_bit_exact(model, archive, tmp_path)
    report = members(archive)["./src/offload_report.txt"].decode()
    assert re.search(rf"^0 +MEAN +host +{re.escape(reason)}", report, re.MULTILINE), report


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


def _nchw_model() -> bytes:
    """A PyTorch export in miniature: NCHW in, TRANSPOSE to NHWC, a conv, SPLIT of its channels; one half sliced
    (batch axis shrunk) and UNPACKed by rows, the other TRANSPOSEd back to NCHW."""
    net = models.Net(seed=0)
    x = net.transpose(net.input((1, 4, 8, 8)), perm=(0, 2, 3, 1))
    first, second = net.split(net.conv2d(x, out_channels=8, activation="RELU"), num_splits=2, axis=3)
    rows = net.strided_slice(first, begin=(0, 0, 0, 0), end=(1, 8, 8, 4), strides=(1, 1, 1, 1), shrink_axis_mask=1)
    net.output(net.unpack(rows, axis=0)[3])
    net.output(net.transpose(second, perm=(0, 3, 1, 2)))
    return net.build()


@pytest.mark.parametrize("target", [npu_target(a) for a in ACCELERATORS] + ["c"])
def test_data_movement_around_the_npu(target, tmp_path):
    """Host slices and transposes read and feed NPU tensors (the slice before UNPACK's reshapes included)."""
    model = _nchw_model()
    assert_bit_exact(model, compile_model(model, tmp_path, target), tmp_path)


TFLITE_NAMES = {"squared_difference": "SQUARED_DIFFERENCE",
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
