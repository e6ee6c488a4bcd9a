"""tvmc compile → tvmc run → bit-exact with LiteRT BUILTIN_REF (TFLite Micro where BUILTIN_REF is wrong or
missing), on ethos-u55-128 and -256, 5 seeded inputs: every factory op kind (each runs on the NPU or as a host
kernel), every factory graph, and the four MLPerf Tiny models. An operator no kernel covers: tests/test_tvmc.py."""
from __future__ import annotations

import re

import pytest
from aot_support import ACCELERATORS, assert_bit_exact, compile_model, members, npu_target

from ethosu_tvm.testing import models, shared_model
from ethosu_tvm.testing.reference import reference_runner

MLPERF = ("mlperf_tiny_kws_dscnn_int8.tflite", "mlperf_tiny_vww_mobilenetv1_96_int8.tflite",
          "mlperf_tiny_ic_resnet8_int8.tflite", "mlperf_tiny_ad_fc_autoencoder_int8.tflite")

CASES = ([pytest.param(op, "int8", id=op) for op in models.OPS]
         + [pytest.param(op, "int16", id=f"{op}-int16") for op in sorted(models._INT16_OPS)])


@pytest.mark.parametrize("accelerator", ACCELERATORS)
@pytest.mark.parametrize("op,dtype", CASES)
def test_factory_op(op, dtype, accelerator, tmp_path):
    model = models.make(op, 0, dtype=dtype)
    # LiteRT's reference kernel is wrong or missing for some ops (REF_KERNEL_WRONG, REF_KERNEL_MISSING): TFLite
    # Micro is their reference.
    assert_bit_exact(model, compile_model(model, tmp_path, npu_target(accelerator)), tmp_path,
                     reference=reference_runner(op))


DATA_MOVEMENT = {op: {} for op in ("concatenation", "pad", "padv2", "slice", "split", "split_v", "unpack",
                                   "resize_nearest_neighbor", "transpose", "strided_slice")}
DATA_MOVEMENT["pack"] = dict(in_shape=(3, 5), num_inputs=3, axis=1)


@pytest.mark.parametrize("accelerator", ("ethos-u55-32", "ethos-u55-64"))
@pytest.mark.parametrize("op", DATA_MOVEMENT)
def test_data_movement_on_the_smaller_configurations(op, accelerator, tmp_path):
    """The data-movement ops the NPU copies, on the two configurations test_factory_op leaves out (PACK of 2-D
    inputs: the factory's default is 5-D)."""
    model = models.make(op, 0, **DATA_MOVEMENT[op])
    assert_bit_exact(model, compile_model(model, tmp_path, npu_target(accelerator)), tmp_path)


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


HOST_VARIANTS = {  # forms of host-only ops the factory defaults do not reach
    "arg_max-int64": ("arg_max", dict(axis=1, output_type="int64")),
    "arg_min-1d": ("arg_min", dict(in_shape=(37,))),
    "cast-int16-to-int8": ("cast", dict(dtype="int16", out_type="int8")),
    "batch_matmul-adj-constant-lhs": ("batch_matmul", dict(in_shape=(2, 8, 6), constant_lhs=(8, 4), adj_x=True)),
    "batch_matmul-broadcast-adj-y": ("batch_matmul", dict(in_shape=(2, 3, 5), in2_shape=(4, 1, 7, 5), adj_y=True)),
}


@pytest.mark.parametrize("case", HOST_VARIANTS)
def test_host_op_variant(case, tmp_path):
    op, params = HOST_VARIANTS[case]
    model = models.make(op, 0, **params)
    assert_bit_exact(model, compile_model(model, tmp_path, npu_target("ethos-u55-128")), tmp_path)


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
    """Host transposes read and feed NPU tensors; the SPLIT, the slice and UNPACK's slices and reshapes run on the NPU
    (on the host with --target=c)."""
    model = _nchw_model()
    assert_bit_exact(model, compile_model(model, tmp_path, target), tmp_path)
