"""Host legalization: what partitioning leaves on the host becomes host composites whose specs are exactly what the
TFLite file says (host_tflite_ops.host_op) and whose kernels match LiteRT bit for bit; the rest is refused by name."""
import dataclasses
import re

import numpy as np
import pytest
import tvm
from host_harness import assert_plain_c
from host_tflite_ops import host_op
from tvm import relax

from ethosu_tvm.frontend.importer import from_tflite
from ethosu_tvm.host import UnsupportedHostOp, build_kernel, fuse_host_ops, host_functions, host_spec
from ethosu_tvm.partition import partition_for_ethosu
from ethosu_tvm.partition.patterns import npu_functions
from ethosu_tvm.testing import models
from ethosu_tvm.testing.invalid_models import sin_model
from ethosu_tvm.testing.reference import random_inputs, reference_runner

ACCELERATOR = "ethos-u55-128"
I16 = dict(dtype="int16")
# (factory op, parameters) that partitioning for the U55 leaves on the host.
HOST_CASES = [
    ("softmax", dict(I16, in_shape=(1, 300, 300, 2))),  # more rows than the NPU's softmax takes
    ("softmax", dict(I16, in_shape=(2, 3, 2, 5, 30), in_scale=0.002, beta=0.5)),  # 5-D
    ("concatenation", dict(in_shape=(2, 4, 4, 8), axis=0)),  # a batch the NPU cannot copy
    ("concatenation", dict(in_shape=(2, 3, 4, 5), num_inputs=3, axis=1)),
    ("pad", dict(paddings=((1, 0), (0, 0), (2, 1), (0, 0)))),  # a batch the NPU cannot pad
    ("pad", dict(in_zp=50, paddings=((0, 1), (0, 3), (2, 0), (1, 1)))),
    ("padv2", dict(in_zp=50, value=-7, paddings=((1, 1), (0, 0), (0, 0), (0, 0)))),
    ("padv2", dict(I16, value=300, paddings=((1, 0), (0, 0), (2, 1), (0, 0)))),
    # int16 pools, QUANTIZE, TANH and LOGISTIC in forms the NPU does not take: batch 2, an unpadded average over
    # more than 504 taps, stride 4, an effective scale of 2^15 or more, an input multiplier of 2^16 or more
    ("avg_pool2d", dict(I16, in_shape=(1, 23, 23, 4), pool=(23, 23), stride=(1, 1))),
    ("avg_pool2d", dict(I16, in_shape=(2, 8, 8, 8), pool=(3, 3), stride=(2, 2), padding="SAME", activation="RELU6")),
    ("max_pool2d", dict(I16, in_shape=(2, 8, 8, 8))),
    ("max_pool2d", dict(I16, pool=(2, 3), stride=(4, 4), padding="SAME", activation="RELU")),
    # int16 binary operators in forms the NPU does not take: batch 2, 5-D, both operands broadcasting
    ("add", dict(I16, in_shape=(2, 4, 4, 8))),
    ("add", dict(I16, in_shape=(1, 8, 1, 8), in2_shape=(1, 1, 8, 1), activation="RELU6")),
    ("sub", dict(I16, in_shape=(2, 4, 4, 8), activation="RELU")),
    ("mul", dict(I16, in_shape=(1, 2, 3, 4, 5))),
    ("minimum", dict(I16, in_shape=(2, 4, 4, 8))),
    ("maximum", dict(I16, in_shape=(8, 1, 8), in2_shape=(1, 8, 1))),
    ("quantize", dict(I16, in_scale=1.0, out_scale=1e-5)),
    ("quantize", dict(I16, in_shape=(2, 4, 4, 8))),
    ("tanh", dict(I16, in_scale=6.0)),
    ("logistic", dict(I16, in_scale=6.0)),
    ("reshape", dict(I16, new_shape=(1, 2, 2, 4, 8))),  # a 5-D OFM the NPU cannot copy
    ("strided_slice", dict(begin=(0, 1, 1, 0), end=(1, 7, 7, 4), strides=(1, 2, 1, 2))),  # strides on channels
    ("strided_slice", dict(I16, begin=(0, 7, 1, 3), end=(1, 0, 8, 0), strides=(1, -2, 3, -1))),
    ("slice", dict(in_shape=(2, 8, 8, 4), begin=(0, 1, 2, 0), size=(2, 5, 4, -1))),  # a batch the NPU cannot copy
    ("slice", dict(I16, in_shape=(2, 8, 8, 4), begin=(0, 3, 0, 1), size=(-1, 2, 8, 2))),
    ("transpose", dict(in_shape=(1, 4, 8, 8), perm=(0, 1, 3, 2))),  # a permutation the NPU cannot copy
    ("transpose", dict(I16, in_shape=(2, 3, 4, 5, 6), perm=(4, 0, 3, 1, 2))),
    ("pack", dict(in_shape=(1, 2, 3, 2, 2), axis=1)),  # 5-D inputs the NPU cannot copy
    ("pack", dict(I16, in_shape=(3, 5, 2, 2, 1), num_inputs=3, axis=2)),
    # int8 operators (and int16 SUM) a U55 constraint rejects
    ("conv2d", dict(in_shape=(1, 16, 16, 4), stride=(4, 4), activation="RELU6")),
    ("depthwise_conv2d", dict(in_shape=(1, 16, 16, 4), stride=(4, 4), activation="RELU")),
    ("depthwise_conv2d", dict(in_shape=(1, 16, 16, 4), stride=(4, 4), dilation=(2, 1), per_channel=False)),
    ("fully_connected", dict(in_shape=(2, 3, 40), keep_num_dims=True, bias=False)),  # 3-D IFM
    ("max_pool2d", dict(pool=(3, 3), stride=(4, 4), padding="SAME", activation="RELU")),
    ("avg_pool2d", dict(in_shape=(1, 20, 20, 4), pool=(9, 9), stride=(1, 1), padding="SAME", activation="RELU6")),
    ("add", dict(in_shape=(1, 8, 1, 8), in2_shape=(1, 1, 8, 1), activation="RELU")),  # broadcasts both ways
    ("mean", dict(in_shape=(2, 8, 8, 8), axis=(3,), keep_dims=False)),  # a batch the NPU cannot reduce
    ("mean", dict(in_shape=(1, 70, 2, 4), out_scale=0.05, out_zp=7)),  # a window over 64 high
    ("mean", dict(I16, axis=(0, -1))),
    ("sum", dict(in_shape=(2, 8, 8, 8), axis=(2,), keep_dims=False)),
    ("sum", dict(I16, in_shape=(2, 4, 4, 8), axis=(1, 3))),
    ("reduce_max", dict(in_shape=(2, 4, 4, 8), axis=(0, 1, 2, 3))),
    ("reduce_min", dict(in_shape=(2, 3, 4, 5), axis=(0, 2))),
    # operators the NPU lacks
    ("resize_nearest_neighbor", dict(size=(5, 11), align_corners=True)),
    ("resize_nearest_neighbor", dict(I16, size=(3, 4), half_pixel_centers=True)),
    ("resize_bilinear", dict(size=(13, 6), half_pixel_centers=True)),
    ("resize_bilinear", dict(size=(3, 15), align_corners=True)),
    ("batch_matmul", dict(in_shape=(2, 1, 4, 6), in2_shape=(3, 6, 5))),  # run-time operands, two broadcast axes
    ("batch_matmul", dict(in_shape=(2, 3, 5), in2_shape=(4, 1, 7, 5), adj_y=True)),
    ("batch_matmul", dict(in_shape=(3, 4, 6), constant_rhs=(3, 6, 5))),  # a constant per batch
    ("batch_matmul", dict(in_shape=(2, 8, 6), constant_lhs=(8, 4), adj_x=True)),
    ("arg_max", dict(in_shape=(1, 4, 4, 128), output_type="int64")),  # more values than the NPU's index bits
    ("arg_max", dict(in_shape=(3, 10), axis=0)),
    ("arg_min", dict(axis=-3, output_type="int64")),
    # more constant index tuples than the importer slices (frontend.indexing.GATHER_SLICES): one host gather
    ("gather_nd", dict(in_shape=(9, 8, 3), indices=[(i, j) for i in range(9) for j in range(8)])),
    ("gather_nd", dict(I16, in_shape=(70, 5), indices=[[i % 70] for i in range(0, 260, 4)])),
    ("log_softmax", {}),
    ("add_n", {}),
    ("greater", dict(in2_scale=0.03, in2_zp=5)),
    ("equal", dict(in2_shape=(1, 1, 8, 1))),
    ("less_equal", dict(constant_lhs=(8,))),
    ("add_n", dict(num_inputs=3, in_zp=40, in_shape=(2, 5))),
    ("log_softmax", dict(in_shape=(1, 3, 5, 9), in_scale=0.3, in_zp=60)),
    ("cast", dict(I16, out_type="int8")),
    ("select_v2", {}),
    ("select_v2", dict(I16, in_shape=(2, 1, 5), in2_shape=(3, 1), condition_shape=(1, 5))),
    ("select_v2", dict(constant_lhs=(8,), condition_shape=(8, 1))),
    ("fill", {}),
    ("fill", dict(I16, shape=(3, 1, 4))),
    ("div", {}),
    ("l2_normalization", {}),
    ("l2_normalization", dict(in_shape=(3, 1000), in_zp=60, in_scale=0.3)),
    ("div", dict(I16, constant_rhs=(1, 8, 1), activation="RELU")),
    ("div", dict(in_shape=(2, 3, 8), constant_rhs=(3, 1), in2_scale=0.05, in2_zp=-128)),
]
# operators the NPU takes: their host patterns, checked on the module before partitioning.
UNPARTITIONED_CASES = [
    ("avg_pool2d", dict(I16, pool=(3, 3), stride=(2, 2), padding="SAME", activation="RELU6")),
    ("max_pool2d", dict(I16, pool=(2, 3), padding="SAME", activation="RELU")),
    ("quantize", I16),
    ("tanh", I16),
    ("batch_matmul", {}),  # both operands at run time
    ("arg_max", dict(output_type="int64")),
    ("logistic", I16),
    ("mean", I16),
    ("relu", dict(out_scale=0.01, out_zp=-20)),
    ("relu6", dict(in_scale=0.05, in_zp=-100)),
    ("relu_n1_to_1", dict(in_scale=0.01, in_zp=10)),
    ("leaky_relu", dict(alpha=0.7, out_scale=0.03, out_zp=40)),
    ("quantize", dict(out_scale=0.5, out_zp=-100)),
    ("tanh", {}),
    ("logistic", dict(in_scale=0.2, in_zp=-60)),
    ("reshape", {}),
    ("squeeze", {}),
    ("expand_dims", {}),
    ("conv2d", dict(in_shape=(1, 9, 11, 3), out_channels=5, kernel=(3, 2), stride=(2, 3), activation="RELU6")),
    ("conv2d", dict(padding="VALID", dilation=(2, 2), per_channel=False, activation="RELU")),
    ("depthwise_conv2d", dict(depth_multiplier=2, in_shape=(1, 7, 7, 3), stride=(2, 2), activation="RELU")),
    ("fully_connected", dict(in_shape=(4, 64), units=24, per_channel=True, activation="RELU")),
    ("avg_pool2d", dict(pool=(3, 3), stride=(2, 2), padding="SAME", activation="RELU6")),
    ("max_pool2d", {}),
    ("add", dict(in2_shape=(1, 1, 1, 8), activation="RELU", in2_scale=0.1, in2_zp=20)),
    ("sub", dict(in2_shape=(1, 8, 1, 1), activation="RELU6")),
    ("mul", dict(in2_shape=(1, 1, 8, 8), activation="RELU")),
    ("minimum", dict(in2_shape=(1, 1, 1, 8))),
    ("neg", dict(in_zp=30, in_scale=0.1)),
    ("sqrt", dict(in_scale=0.3, out_zp=0)),
    ("softmax", {}),
    ("softmax", dict(beta=0.5)),
    ("softmax", dict(in_shape=(2, 37), in_scale=0.3, beta=2.0)),
]


def _ids(cases):
    return [f"{op}-{i}" for i, (op, _) in enumerate(cases)]


def _only_host_function(mod: tvm.IRModule) -> relax.Function:
    (function,) = [func for _, func in host_functions(fuse_host_ops(mod))]
    return function


def assert_same_spec(actual, expected) -> None:
    """Field by field (the weighted specs hold arrays and do not compare with ==)."""
    assert type(actual) is type(expected)
    for field in dataclasses.fields(expected):
        got, want = getattr(actual, field.name), getattr(expected, field.name)
        if isinstance(want, np.ndarray):
            assert isinstance(got, np.ndarray) and got.dtype == want.dtype, field.name
            np.testing.assert_array_equal(got, want, err_msg=field.name)
        else:
            assert got == want, field.name


@pytest.mark.parametrize("op,params", HOST_CASES, ids=_ids(HOST_CASES))
def test_host_ops_match_the_tflite_file_and_litert(op, params, compile_kernel):
    model = models.make(op, seed=5, **params)
    partitioned, report = partition_for_ethosu(from_tflite(model), ACCELERATOR)
    assert [entry.target for entry in report.ops] == ["host"]
    spec = host_spec(_only_host_function(partitioned))
    assert_same_spec(spec, host_op(model))
    kernel = build_kernel(spec)
    assert_plain_c(kernel)
    run = compile_kernel(kernel)
    reference = reference_runner(op)  # LiteRT's SUM reference kernel is wrong
    for seed in range(3):
        inputs = random_inputs(model, seed)
        (expected,) = reference(model, inputs)
        np.testing.assert_array_equal(run(*inputs).reshape(expected.shape), expected, err_msg=f"seed {seed}")


@pytest.mark.parametrize("op,params", UNPARTITIONED_CASES, ids=_ids(UNPARTITIONED_CASES))
def test_npu_capable_ops_have_host_patterns_too(op, params):
    model = models.make(op, seed=5, **params)
    assert_same_spec(host_spec(_only_host_function(from_tflite(model))), host_op(model))


def test_an_op_without_a_kernel_is_refused_by_name():
    partitioned, _ = partition_for_ethosu(from_tflite(sin_model()), ACCELERATOR)
    message = "operator #0 SIN has no NPU or host kernel (relax.sin)"
    with pytest.raises(UnsupportedHostOp, match=f"^{re.escape(message)}$"):
        fuse_host_ops(partitioned)


def test_npu_functions_and_module_attributes_survive():
    net = models.Net(seed=2)
    net.output(net.log_softmax(net.conv2d(net.input((1, 6, 6, 3)), out_channels=8)))  # conv (NPU), host op
    partitioned, _ = partition_for_ethosu(from_tflite(net.build()), ACCELERATOR)
    fused = fuse_host_ops(partitioned)
    before, after = npu_functions(partitioned), npu_functions(fused)
    assert [name for name, _ in before] == [name for name, _ in after] and len(after) == 1
    tvm.ir.assert_structural_equal(before[0][1], after[0][1])
    for attr in ("ethosu.source_ops", "ethosu.accelerator"):
        assert str(fused.attrs[attr]) == str(partitioned.attrs[attr])
    main = [b.value for block in fused["main"].body.blocks for b in block.bindings]
    assert [str(fused[v.op].attrs.get("Composite", "npu")) for v in main if isinstance(v, relax.Call)] == [
        "npu", "host.log_softmax"]


def test_whole_graph_on_the_host_names_every_operator_and_quantizes_raw_ops():
    """Without partitioning every operator becomes a composite; the pool keeps the quantization of its input,
    which the graph only writes on the multiply that produces it."""
    fused = fuse_host_ops(from_tflite(models.make_graph("multi_io")))
    functions = [func for _, func in host_functions(fused)]
    assert [str(f.attrs["ethosu.source_op"]) for f in functions] == [
        "operator #0 CONV_2D", "operator #1 ADD", "operator #2 MUL", "operator #3 MAX_POOL_2D"]
    product, pool = host_spec(functions[2]), host_spec(functions[3])
    assert pool.input == dataclasses.replace(product.output, shape=pool.input.shape)
    assert (pool.output.scale, pool.output.zero_point) == (product.output.scale, product.output.zero_point)


def test_host_spec_refuses_what_is_not_a_host_composite():
    partitioned, _ = partition_for_ethosu(from_tflite(models.make("conv2d")), ACCELERATOR)
    (_, npu_function), = npu_functions(partitioned)
    with pytest.raises(UnsupportedHostOp, match="is not a host op"):
        host_spec(npu_function)
    mod = from_tflite(models.make("max_pool2d", dtype="int16"))
    pool = _only_host_function(mod)
    bare = pool.without_attr("ethosu.quantization")
    with pytest.raises(UnsupportedHostOp, match="^operator #0 MAX_POOL_2D: no TFLite quantization recorded"):
        host_spec(bare)
