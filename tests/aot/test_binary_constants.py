"""Binary elementwise operators with a constant operand (either side) and broadcasting operands, through `tvmc
compile` / `tvmc run`, bit-exact with LiteRT's reference kernels on ethos-u55-128 and -256."""
from __future__ import annotations

import re
import tarfile

import numpy as np
import pytest
from aot_support import ACCELERATORS, assert_bit_exact, compile_model, npu_target

from ethosu_tvm.cli import main as tvmc
from ethosu_tvm.testing import models
from ethosu_tvm.testing.models.net import Net
from ethosu_tvm.testing.models.quant import OP

OPS = ("add", "sub", "mul", "minimum", "maximum")
# constant shapes against the (1, 8, 8, 8) feature map: scalar, per-channel, [1,1,1,C], [1,H,1,1], rank 3
CONSTANT_SHAPES = ((), (8,), (1, 1, 1, 8), (1, 8, 1, 1), (8, 1, 8))
# int8 quantization of the constant unlike the feature map's, so ADD/SUB/MUL rescale it
INT8_CONSTANT_QUANT = {"in2_scale": 0.037, "in2_zp": 11}
CASES = ([pytest.param(op, "int8", id=op) for op in OPS] + [pytest.param(op, "int16", id=f"{op}-int16") for op in OPS]
         + [pytest.param("squared_difference", "int8", id="squared_difference")])


def _quant(op: str, dtype: str) -> dict:
    """MINIMUM/MAXIMUM keep one quantization for all tensors (the factory's default); int16 keeps zero point 0."""
    if op in ("minimum", "maximum"):
        return {}
    return INT8_CONSTANT_QUANT if dtype == "int8" else {"in2_scale": 3e-4}


@pytest.mark.parametrize("accelerator", ACCELERATORS)
@pytest.mark.parametrize("shape", CONSTANT_SHAPES, ids=str)
@pytest.mark.parametrize("side", ("lhs", "rhs"))
@pytest.mark.parametrize("op,dtype", CASES)
def test_constant_operand(op, dtype, side, shape, accelerator, tmp_path):
    model = models.make(op, 0, dtype=dtype, **{f"constant_{side}": shape}, **_quant(op, dtype))
    assert_bit_exact(model, compile_model(model, tmp_path, npu_target(accelerator)), tmp_path)


# feature-map shape, constant shape: lower ranks, a constant wider than the feature map, rank 5 and 6
RANK_CASES = (((8,), ()), ((4, 8), (4, 1)), ((1, 8), (3, 1, 1)), ((2, 3, 4, 5, 6), (3, 1, 5, 1)),
              ((1, 2, 3, 1, 4, 5), (3, 6, 1, 5)))


@pytest.mark.parametrize("shapes", RANK_CASES, ids=str)
@pytest.mark.parametrize("op,dtype", [p for p in CASES if p.values[0] != "squared_difference"])
def test_constant_operand_of_any_rank(op, dtype, shapes, tmp_path):
    in_shape, constant = shapes
    model = models.make(op, 1, dtype=dtype, in_shape=in_shape, constant_rhs=constant, **_quant(op, dtype))
    assert_bit_exact(model, compile_model(model, tmp_path, npu_target("ethos-u55-128")), tmp_path)


@pytest.mark.parametrize("accelerator", ACCELERATORS)
@pytest.mark.parametrize("shapes", (((1, 8, 1, 8), (1, 1, 8, 1)), ((1, 1, 1, 8), (1, 8, 8, 1)), ((8, 1), (1, 8))),
                         ids=str)
@pytest.mark.parametrize("op,dtype", CASES)
def test_both_feature_maps_broadcast(op, dtype, shapes, accelerator, tmp_path):
    model = models.make(op, 2, dtype=dtype, in_shape=shapes[0], in2_shape=shapes[1], **_quant(op, dtype))
    assert_bit_exact(model, compile_model(model, tmp_path, npu_target(accelerator)), tmp_path)


@pytest.mark.parametrize("accelerator", ACCELERATORS)
def test_constants_between_npu_operators(accelerator, tmp_path):
    """A per-channel scale (a constant IFM2 tensor) and a scalar offset (the NPU's IFM2 scalar) between two
    convolutions."""
    net = Net(4)
    x = net.input((1, 8, 8, 8))
    y = net.conv2d(x, out_channels=8)
    y = net.mul(y, net.constant((8,), "int8", 0.01, 0))
    y = net.add(net.constant((), "int8", 0.05, 7), y, activation="RELU")
    net.output(net.conv2d(y, out_channels=4, kernel=(1, 1)))
    model = net.build()
    assert_bit_exact(model, compile_model(model, tmp_path, npu_target(accelerator)), tmp_path)
    assert _placements(tmp_path / "module.tar") == [("CONV_2D", "ethos-u"), ("MUL", "ethos-u"), ("ADD", "ethos-u"),
                                                    ("CONV_2D", "ethos-u")]


def _placements(archive) -> list[tuple[str, str]]:
    with tarfile.open(archive) as tar:
        report = tar.extractfile("./src/offload_report.txt").read().decode()
    return re.findall(r"^\d+\s+(\w+)\s+(\S+)", report, re.M)


@pytest.mark.parametrize("accelerator", ACCELERATORS)
@pytest.mark.parametrize("side", ("lhs", "rhs"))
@pytest.mark.parametrize("op", OPS)
def test_int8_scalar_runs_on_the_npu(op, side, accelerator, tmp_path):
    """A one-element int8 constant is the NPU's IFM2 scalar (reversed operands when it is the left one)."""
    model = models.make(op, 6, **{f"constant_{side}": (1, 1, 1, 1) if side == "lhs" else ()}, **_quant(op, "int8"))
    assert_bit_exact(model, compile_model(model, tmp_path, npu_target(accelerator)), tmp_path)
    assert _placements(tmp_path / "module.tar") == [(op.upper(), "ethos-u")]


@pytest.mark.parametrize("op,value", (("mul", 5), ("minimum", -128), ("maximum", 127)))
def test_scalar_making_the_result_constant_runs_on_the_host(op, value, tmp_path):
    """x · real 0, min(x, −128), max(x, 127) do not depend on x: the NPU stream would read no IFM."""
    net = Net(0)
    x = net.input((1, 4, 4, 8), "int8", 0.02, 5)
    scalar = net._activation((), "int8", 0.02, 5, data=np.array(value, np.int8))
    net.output(getattr(net, op)(x, scalar))
    model = net.build()
    assert_bit_exact(model, compile_model(model, tmp_path, npu_target("ethos-u55-128")), tmp_path)
    with tarfile.open(tmp_path / "module.tar") as tar:
        report = tar.extractfile("./src/offload_report.txt").read().decode()
    assert f"a constant operand {value} that makes the result independent of the IFM" in report, report


@pytest.mark.parametrize("accelerator", ("ethos-u55-32", "ethos-u55-64", "ethos-u55-128", "ethos-u55-256"))
@pytest.mark.parametrize("side", ("lhs", "rhs"))
@pytest.mark.parametrize("op", OPS)
def test_int8_constant_tensor_runs_on_the_npu(op, side, accelerator, tmp_path):
    """A constant of more elements is read from the constant region: IFM2, broadcast by the NPU where it has size-1
    axes (reversed operands when it is the left one), or the IFM when the feature map is the one that broadcasts."""
    for seed, (in_shape, shape) in enumerate((((1, 8, 8, 8), (1, 1, 1, 8)), ((1, 8, 8, 8), (8, 1, 8)),
                                              ((1, 8, 8, 8), (1, 8, 8, 8)), ((1, 1, 1, 8), (1, 8, 8, 8)),
                                              ((8,), (4, 6, 8)))):
        model = models.make(op, seed, in_shape=in_shape, **{f"constant_{side}": shape}, **_quant(op, "int8"))
        directory = tmp_path / str(seed)
        assert_bit_exact(model, compile_model(model, directory, npu_target(accelerator)), directory, seeds=(seed,))
        assert _placements(directory / "module.tar") == [(op.upper(), "ethos-u")]


def test_constant_operand_report_says_why_the_host_runs_it(tmp_path):
    model = models.make("add", 0, in_shape=(1, 1, 8, 8), constant_rhs=(1, 8, 1, 8))
    archive = compile_model(model, tmp_path, npu_target("ethos-u55-128"))
    with tarfile.open(archive) as tar:
        report = tar.extractfile("./src/offload_report.txt").read().decode()
    reason = ("operand shapes (1, 1, 8, 8) and (1, 8, 1, 8); at least one operand's shape must match the OFM's shape "
              "(1, 8, 8, 8)")
    assert re.search(rf"^0\s+ADD\s+host\s+{re.escape(reason)}$", report, re.M), report


def _pot_scaled(op: str, lhs_scale: float, rhs_scale: float, out_scale: float) -> bytes:
    """An int16 ADD/SUB of two inputs with pot_scale_int16 set."""
    net = Net(0)
    a, b = net.input((1, 4, 4, 8), "int16", lhs_scale, 0), net.input((1, 4, 4, 8), "int16", rhs_scale, 0)
    y = net._activation((1, 4, 4, 8), "int16", out_scale, 0)
    net.builder.add_operator(getattr(OP, op.upper()), [a.index, b.index], [y.index], f"{op.capitalize()}Options",
                             {"PotScaleInt16": True})
    net.output(y)
    return net.build()


@pytest.mark.parametrize("op", ("add", "sub"))
def test_int16_power_of_two_scaling_of_unequal_scales_is_named(op, tmp_path, capsys):
    """pot_scale_int16 with power-of-two scales selects TFLite's shift-only int16 kernel, which rounds the shifted
    operand on its own (LiteRT differs from the rescaling kernel by one LSB): the import names the operator."""
    (tmp_path / "m.tflite").write_bytes(_pot_scaled(op, 2 ** -11, 2 ** -12, 2 ** -11))
    status = tvmc(["compile", str(tmp_path / "m.tflite"), "--target=c", "-o", str(tmp_path / "m.tar")])
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert status == 2 and error == (f"tvmc: error: operator #0 {op.upper()}: int16 with power-of-two scaling "
                                     "(pot_scale_int16) of unequal scales is not supported; convert the model with "
                                     "pot_scale_int16 false")
    assert not (tmp_path / "m.tar").exists()


@pytest.mark.parametrize("op", ("add", "sub"))
def test_int16_power_of_two_scaling_of_equal_scales(op, tmp_path):
    """With equal scales TFLite's shift-only kernel shifts nothing: the rescaling kernel gives its results."""
    model = _pot_scaled(op, 2 ** -11, 2 ** -11, 2 ** -11)
    assert_bit_exact(model, compile_model(model, tmp_path, npu_target("ethos-u55-128")), tmp_path)


@pytest.mark.parametrize("op,dtype", [("mul", "int16"), ("add", "int16"), ("maximum", "int16"), ("minimum", "int8"),
                                      ("squared_difference", "int8")])
def test_one_feature_map_as_both_operands(op, dtype, tmp_path):
    """x·x and the like: the host kernel takes the one input once (int8 ADD/MUL of x with itself runs on the NPU)."""
    net = Net(5)
    x = net.input((1, 4, 4, 8), dtype)
    net.output(getattr(net, op)(x, x))
    model = net.build()
    assert_bit_exact(model, compile_model(model, tmp_path, npu_target("ethos-u55-128")), tmp_path)


@pytest.mark.parametrize("accelerator", ("ethos-u55-32", "ethos-u55-64", "ethos-u55-128", "ethos-u55-256"))
@pytest.mark.parametrize("out_zp,activation", ((7, "NONE"), (-20, "RELU")))
def test_int8_sub_of_one_feature_map_with_itself(out_zp, activation, accelerator, tmp_path):
    """x − x on the NPU: TVM's simplifier folds the arithmetic to a constant, the stream still reads x twice."""
    net = Net(5)
    x = net.input((1, 4, 6, 8))
    net.output(net.sub(x, x, activation=activation, out_scale=0.03, out_zp=out_zp))
    model = net.build()
    assert_bit_exact(model, compile_model(model, tmp_path, npu_target(accelerator)), tmp_path)
    assert _placements(tmp_path / "module.tar") == [("SUB", "ethos-u")]


def test_int16_mul_multiplier_is_float32(tmp_path):
    """LiteRT computes s1·s2/s_out in float32: with these scales a double multiplier is 1 LSB off on a few of the
    16384 products."""
    model = models.make("mul", 0, dtype="int16", in_shape=(1, 32, 32, 16), in_scale=3e-4, in2_scale=7e-4,
                        out_scale=0.01)
    assert_bit_exact(model, compile_model(model, tmp_path, "c"), tmp_path)
