"""ADD and MUL as CMSIS-NN calls: each argument of arm_elementwise_{add,mul}_{s8,s16} against multipliers and shifts
worked out by hand from TFLite's Prepare, which specs stay ours and why. No CMSIS-NN needed."""
import re

import numpy as np
import pytest

import ethosu_tvm
from ethosu_tvm.host import spec
from ethosu_tvm.host.cmsis_nn import CmsisNn
from ethosu_tvm.target import CmsisNnTarget
from ethosu_tvm.testing import models

M55, M7, M3 = (CmsisNnTarget("cortex-m55", "mve"), CmsisNnTarget("cortex-m7", "dsp"),
               CmsisNnTarget("cortex-m3", "scalar"))
Q30 = 1 << 30  # the mantissa of every power-of-two real multiplier


def _binary(kind, scales=(0.5, 0.25, 1.0), zero_points=(3, -4, 5), dtype="int8", shapes=((1, 4, 4, 3),) * 3,
            **changes):
    lhs, rhs, output = (spec.QuantTensor(shape, dtype, scale, zp) for shape, scale, zp in
                        zip(shapes, scales, zero_points))
    return spec.Binary(kind, lhs, rhs, output, **changes)


def _call(kernel) -> list[str]:
    """The arguments of the kernel's one CMSIS-NN call."""
    return re.search(r"^  \(void\)arm_\w+\((.*)\);$", kernel.c_source, re.MULTILINE).group(1).split(", ")


def test_add_s8_arguments():
    """2·max(0.5, 0.25) = 1: the operands' multipliers 0.5 (2^30 · 2^-31, shift 0) and 0.25 (shift -1); the sum's
    1 / (2^20 · 1) = 0.5 · 2^-19 (shift -19); offsets are the negated zero points, the output's its zero point."""
    kernel = CmsisNn(M55).build(_binary("add"), "k", None)
    assert kernel.library == "cmsis-nn" and kernel.scratch == ()
    assert "#include \"arm_nnfunctions.h\"" in kernel.c_source and "arm_elementwise_add_s8(" in kernel.c_source
    assert _call(kernel) == ["lhs", "rhs", "-3", f"{Q30}", "0", "4", f"{Q30}", "-1", "20", "output", "5", f"{Q30}",
                             "-19", "-128", "127", "48"]
    assert "void k(const int8_t* lhs, const int8_t* rhs, int8_t* output) {" in kernel.c_source
    assert [(p.name, p.role) for p in kernel.params] == [("lhs", "input"), ("rhs", "input"), ("output", "output")]


def test_mul_s8_arguments_with_a_fused_clamp():
    """0.5 · 0.25 / 0.0625 = 2 = 0.5 · 2^2: shift 2 (the largest product, 131 · 131 · 4, stays in int32)."""
    kernel = CmsisNn(M7).build(_binary("mul", scales=(0.5, 0.25, 0.0625), clamp=(5, 100)), "k", None)
    assert "arm_elementwise_mul_s8(" in kernel.c_source
    assert _call(kernel) == ["lhs", "rhs", "-3", "4", "output", "5", f"{Q30}", "2", "5", "100", "48"]


def test_s16_arguments():
    """int16: scales 2^-11 and 2^-10 out, zero points 0; ADD shifts by 15 and rescales the sum by
    2^-10 / (2^15 · 2^-10) = 0.5 · 2^-14; MUL by 2^-22 / 2^-10 = 0.5 · 2^-11."""
    scales, zeros = (1 / 2048, 1 / 2048, 1 / 1024), (0, 0, 0)
    add = CmsisNn(M55).build(_binary("add", scales, zeros, "int16"), "k", None)
    assert "arm_elementwise_add_s16(" in add.c_source and "int16_t* output" in add.c_source
    assert _call(add) == ["lhs", "rhs", "0", f"{Q30}", "0", "0", f"{Q30}", "0", "15", "output", "0", f"{Q30}", "-14",
                          "-32768", "32767", "48"]
    mul = CmsisNn(M55).build(_binary("mul", scales, zeros, "int16"), "k", None)
    assert _call(mul) == ["lhs", "rhs", "0", "0", "output", "0", f"{Q30}", "-11", "-32768", "32767", "48"]


def test_a_constant_operand_is_a_kernel_constant_after_the_input():
    values = np.arange(-24, 24, dtype=np.int8).reshape(1, 4, 4, 3)
    kernel = CmsisNn(M55).build(_binary("add", lhs_values=values), "k", None)
    assert [(p.name, p.role) for p in kernel.params] == [("rhs", "input"), ("lhs", "constant"), ("output", "output")]
    np.testing.assert_array_equal(kernel.params[1].data, values.reshape(-1))
    assert _call(kernel)[:2] == ["lhs", "rhs"]


def test_one_feature_map_for_both_operands():
    x = spec.QuantTensor((1, 8), "int8", 0.5, 3)
    kernel = CmsisNn(M55).build(spec.Binary("mul", x, x, spec.QuantTensor((1, 8), "int8", 0.5, 0), one_input=True),
                                "k", None)
    assert [p.name for p in kernel.params] == ["lhs", "output"] and _call(kernel)[:4] == ["lhs", "lhs", "-3", "-3"]


@pytest.mark.parametrize("op, reason", [
    (lambda: _binary("add", shapes=((1, 4, 4, 3), (3,), (1, 4, 4, 3))),
     "a broadcast (CMSIS-NN's elementwise kernels take operands of equal size)"),
    (lambda: _binary("add", (1 / 2048,) * 3, (0, 1, 0), "int16"),
     "int16 zero points other than 0 (CMSIS-NN's s16 kernels take none)"),
    (lambda: _binary("mul", scales=(1.0, 1.0, 2.0 ** -20)),  # 2^20 = 0.5 · 2^21, 131 · 131 · 2^21 > 2^31
     "a product shifted left by 21 bits could overflow int32"),
    (lambda: _binary("add", scales=(1.0, 1.0, 2.0 ** -19)),  # 2 · max(1, 1) / (2^20 · 2^-19) = 1, not below 1
     "effective output scale 1; TFLite's kernel needs one below 1 (it refuses the model)"),
    (lambda: _binary("sub"), "CMSIS-NN has no kernel used for this op"),
    (lambda: _binary("mul", one_input=True), "operands that make no elementwise op of its output"),  # two tensors
    (lambda: _binary("add", rhs_values=np.zeros((1, 4, 4, 3), np.int16)), "operands that make no elementwise op of "
                                                                          "its output"),
    (lambda: spec.Binary("mul", *(spec.QuantTensor((4,), dtype, 1 / 2048, 0) for dtype in ("int16", "int16",
                                                                                          "int8"))),
     "int16/int8 operands and output (CMSIS-NN's take int8 or int16 alike)"),
])
def test_refusals(op, reason):
    assert CmsisNn(M55).refusal(op()) == reason


@pytest.mark.parametrize("kind, cpu, reason", [
    ("add", M7, "faster on DSP cores: 502560 vs 661880 instructions measured on cortex-m7 (QEMU mps2-an500)"),
    ("mul", M7, "faster on DSP cores: 221480 vs 295960 instructions measured on cortex-m7 (QEMU mps2-an500)"),
    ("add", M3, "faster on scalar cores: 502560 vs 688200 instructions measured on cortex-m3 (QEMU mps2-an385)"),
    ("mul", M3, "faster on scalar cores: 221480 vs 245800 instructions measured on cortex-m3 (QEMU mps2-an385)"),
])
def test_ours_where_ours_is_faster(kind, cpu, reason):
    assert CmsisNn(cpu).refusal(_binary(kind)) == reason and CmsisNn(M55).refusal(_binary(kind)) == ""


@pytest.mark.parametrize("params, library, reason", [
    ({}, "cmsis-nn", "exact with TFLite"),
    ({"in2_shape": (1, 1, 1, 8)}, "ours", "a broadcast (CMSIS-NN's elementwise kernels take operands of equal size)"),
])
def test_the_offload_report_names_the_library(params, library, reason):
    compiled = ethosu_tvm.build(ethosu_tvm.from_tflite(models.make("add", 0, **params)),
                                target="cmsis-nn -mcpu=cortex-m55,c")
    assert [(entry.library, entry.library_reason) for entry in compiled.offload.ops] == [(library, reason)]
