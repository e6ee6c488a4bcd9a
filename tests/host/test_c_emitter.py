"""The emitted C and the kernel interface: plain C for an MCU, a described signature, determinism, errors."""
import dataclasses
import shutil
import subprocess
import sys

import numpy as np
import pytest
import tvm
from host_harness import CFLAGS, assert_plain_c
from test_litert_bitexact import CASES
from host_tflite_ops import host_op
from tvm import te

from ethosu_tvm.host import ScratchBuffer, StackLimitExceeded, UnsupportedHostOp, build_kernel, host_target, spec
from ethosu_tvm.host.c_emitter import emit_c
from ethosu_tvm.testing import models

X = spec.QuantTensor((2, 10), "int8", 0.1, 3)
SOFTMAX = spec.Softmax(X, spec.QuantTensor((2, 10), "int8", 1 / 256, -128), beta=1.0)


def _conv(depthwise: bool = False) -> spec.Conv2D:
    rng = np.random.default_rng(0)
    channels = 6 if depthwise else 4
    shape = (1, 3, 3, channels) if depthwise else (channels, 3, 3, 3)
    return spec.Conv2D(spec.QuantTensor((1, 5, 5, 3), "int8", 0.05, -2), spec.QuantTensor((1, 5, 5, channels), "int8",
                                                                                          0.1, 4),
                       rng.integers(-127, 128, shape, dtype=np.int8), (0.01,) * channels,
                       rng.integers(-500, 500, channels, dtype=np.int32), padding=(1, 1, 1, 1), clamp=(-128, 100),
                       depthwise=depthwise)


def test_softmax_interface():
    kernel = build_kernel(SOFTMAX, name="net_softmax_3")
    assert kernel.declaration == "void net_softmax_3(const int8_t* input, int8_t* output, uint8_t* workspace);"
    assert [(p.name, p.role, p.dtype, p.shape) for p in kernel.params] == [
        ("input", "input", "int8", (2, 10)), ("output", "output", "int8", (2, 10))]
    # one scratch buffer: row maxima (2 × int32, aligned to 16) and exps (20 × int32)
    assert kernel.scratch == (ScratchBuffer("scratch", 16 + 80, 16),)
    assert kernel.op == "softmax"
    assert_plain_c(kernel)


def test_constants_are_described_parameters():
    op = _conv()
    kernel = build_kernel(op)
    assert kernel.declaration == ("void ethosu_host_conv2d(const int8_t* input, const int8_t* weights, "
                                  "const int32_t* bias, const int32_t* multiplier, const int32_t* shift, "
                                  "int8_t* output);")
    params = {p.name: p for p in kernel.params}
    assert [p.role for p in kernel.params] == ["input"] + ["constant"] * 4 + ["output"]
    np.testing.assert_array_equal(params["weights"].data, op.weights)
    np.testing.assert_array_equal(params["bias"].data, op.bias)
    assert params["multiplier"].data.dtype == np.int32 and params["shift"].data.shape == (4,)
    assert params["output"].nbytes == 100 and kernel.scratch == ()


@pytest.mark.parametrize("mcpu", ["cortex-m55", "cortex-m33", "cortex-m4", "cortex-m7"])
def test_mcpu_is_recorded(mcpu):
    kernel = build_kernel(SOFTMAX, target=host_target(mcpu))
    assert kernel.mcpu == mcpu
    banner = f"/* ethosu_host_softmax: softmax host kernel (ethosu_tvm), target c -mcpu={mcpu} */"
    assert kernel.c_source.startswith(banner)


def test_default_target_has_no_mcpu():
    assert build_kernel(SOFTMAX).mcpu is None


def test_target_as_dict_or_string():
    assert build_kernel(SOFTMAX, target={"kind": "c", "mcpu": "cortex-m33"}).mcpu == "cortex-m33"
    assert build_kernel(SOFTMAX, target="c").mcpu is None


_BUILD_IN_CHILD = """
import numpy as np
from ethosu_tvm.host import build_kernel, spec
rng = np.random.default_rng(0)
op = spec.Conv2D(spec.QuantTensor((1, 5, 5, 3), "int8", 0.05, -2), spec.QuantTensor((1, 5, 5, 4), "int8", 0.1, 4),
                 rng.integers(-127, 128, (4, 3, 3, 3), dtype=np.int8), (0.01,) * 4,
                 rng.integers(-500, 500, 4, dtype=np.int32), padding=(1, 1, 1, 1), clamp=(-128, 100))
print(build_kernel(op).c_source, end="")
"""


def test_output_is_deterministic():
    first = build_kernel(_conv()).c_source
    assert build_kernel(_conv()).c_source == first
    child = subprocess.run([sys.executable, "-c", _BUILD_IN_CHILD], capture_output=True, text=True, check=True)
    assert child.stdout == first


def test_kernels_share_a_translation_unit(tmp_path):
    """Helpers are static and prefixed with their kernel's name: several kernels compile as one C file."""
    sources = [build_kernel(op, name=f"k{i}").c_source for i, op in enumerate([SOFTMAX, _conv(), _conv(True)])]
    unit = tmp_path / "all.c"
    unit.write_text("\n".join(sources))
    subprocess.run(["gcc", *CFLAGS, "-c", str(unit), "-o", str(tmp_path / "all.o")], check=True)
    symbols = subprocess.run(["nm", "-g", "--defined-only", str(tmp_path / "all.o")], capture_output=True,
                             text=True, check=True).stdout.split()
    assert sorted(s for s in symbols if s.startswith("k")) == ["k0", "k1", "k2"]


def test_large_intermediates_are_refused():
    x = te.placeholder((1000,), "int32", name="input")
    doubled = te.compute((1000,), lambda i: x[i] * 2, name="doubled")
    y = te.compute((1000,), lambda i: doubled[999 - i] + 1, name="output")
    with pytest.raises(StackLimitExceeded, match="4000 bytes"):
        emit_c(te.create_prim_func([x, y]), "big", ["input", "output"], host_target(), "test", {})


def test_scratch_goes_to_the_workspace():
    x = te.placeholder((1000,), "int32", name="input")
    doubled = te.compute((1000,), lambda i: x[i] * 2, name="doubled")
    y = te.compute((1000,), lambda i: doubled[999 - i] + 1, name="output")
    function = emit_c(te.create_prim_func([x, y, doubled]), "big", ["input", "output", "scratch"], host_target(),
                      "test", {})
    assert function.workspace_bytes == 4000
    assert "void big(const int32_t* input, int32_t* output, uint8_t* workspace)" in function.source


@pytest.mark.parametrize("op,message", [
    (spec.Softmax(spec.QuantTensor((1, 4), "int32", 0.1, 0), spec.QuantTensor((1, 4), "int8", 1 / 256, -128)),
     "softmax: int32 tensors are not supported"),
    (spec.Softmax(X, spec.QuantTensor((2, 10), "int8", 0.1, 0)), "softmax: int8 output must have scale 1/256"),
    (spec.Pool2D("min", X, X, (1, 1), (1, 1)), "min_pool2d: unknown pooling kind"),
    (spec.Binary("floor_div", X, X, X), "floor_div: no host kernel"),
    (spec.Reshape(X, spec.QuantTensor((3, 10), "int8", 0.1, 3)), "reshape: int8"),
    ("transpose", "str: no host kernel for this op"),
    (spec.Transpose(X, spec.QuantTensor((10, 2), "int8", 0.1, 3), (1, 1)), r"transpose: perm \(1, 1\)"),
    (spec.StridedSlice(X, spec.QuantTensor((2, 4), "int8", 0.1, 3), (0, 5), (1, 2)),
     r"strided_slice: begin \(0, 5\), strides \(1, 2\) do not take"),
    (spec.Pack((X, spec.QuantTensor((2, 10), "int16", 0.1, 0)), spec.QuantTensor((2, 2, 10), "int8", 0.1, 3), 0),
     "pack: int16 input, int8 output"),
    (dataclasses.replace(_conv(), weights=np.zeros((4, 3, 3, 2), np.int8)), r"conv2d: weights \(4, 3, 3, 2\)"),
    (dataclasses.replace(_conv(), stride=(2, 2)), r"conv2d: output \(1, 5, 5, 4\) does not follow"),
    (dataclasses.replace(_conv(), weights=_conv().weights.astype(np.int16)), "conv2d: weights must be int8"),
    (spec.FullyConnected(X, X, np.zeros((3, 7), np.int8), (0.1,), None), "fully_connected: weights"),
    (spec.Binary("add", X, spec.QuantTensor((3, 10), "int8", 0.1, 3), X), "add: .* do not broadcast"),
    (spec.Binary("sub", X, X, X, lhs_values=np.zeros((2, 10), np.int8), rhs_values=np.zeros((2, 10), np.int8)),
     "sub: both operands are constants"),
    (spec.Binary("mul", X, X, X, rhs_values=np.zeros((10,), np.int8)), r"rhs: constant of int8 \(10,\)"),
    (spec.Binary("squared_difference", *(spec.QuantTensor((2, 10), "int16", 0.1, 0),) * 3),
     "squared_difference: int16 tensors are not supported"),
    (spec.LeakyRelu(spec.QuantTensor((2, 10), "int16", 0.1, 3), spec.QuantTensor((2, 10), "int16", 0.1, 0), 0.2),
     r"leaky_relu: int16 needs zero points 0 \(as TFLite requires\)"),
    (spec.Pool2D("max", spec.QuantTensor((1, 4, 4, 2), "int8", 0.1, 3), spec.QuantTensor((1, 3, 3, 2), "int8", 0.1, 3),
                 (2, 2), (2, 2)), "max_pool2d: output"),
    (spec.Requantize(spec.QuantTensor((2, 10), "int16", 0.1, 0), spec.QuantTensor((2, 10), "uint8", 0.1, 3)),
     r"^quantize: int16 to uint8 is not supported \(uint8 pairs with int8 only, as in TFLite Micro\)$"),
])
def test_unsupported_ops_name_the_op(op, message):
    with pytest.raises(UnsupportedHostOp, match=message):
        build_kernel(op)


def test_kernel_names_are_c_identifiers():
    with pytest.raises(ValueError, match="not a C identifier"):
        build_kernel(SOFTMAX, name="net-softmax")


def test_only_the_c_target():
    with pytest.raises(UnsupportedHostOp, match="'c' target"):
        build_kernel(SOFTMAX, target=tvm.target.Target({"kind": "llvm"}))


@pytest.mark.parametrize("mcpu", ["cortex-m55", "cortex-m33", "cortex-m4", "cortex-m7"])
def test_cross_compiles_for_cortex_m(mcpu, tmp_path):
    """Every kernel kind compiles warning-free for the Cortex-M and calls no library routine (no 64-bit division).

    `make test` installs arm-none-eabi-gcc; without it this test fails rather than skips."""
    assert shutil.which("arm-none-eabi-gcc"), "arm-none-eabi-gcc is missing: run `make test`, which installs it"
    sources = [build_kernel(host_op(models.make(op, dtype=dtype, **params)), name=f"k{i}",
                            target=host_target(mcpu)).c_source for i, (op, dtype, params) in enumerate(CASES)]
    unit = tmp_path / "kernels.c"
    unit.write_text("\n".join(sources))
    subprocess.run(["arm-none-eabi-gcc", f"-mcpu={mcpu}", "-mthumb", "-mfloat-abi=hard", *CFLAGS, "-c", str(unit),
                    "-o", str(tmp_path / "kernels.o")], check=True)
    undefined = subprocess.run(["arm-none-eabi-nm", "-u", str(tmp_path / "kernels.o")], capture_output=True,
                               text=True, check=True).stdout
    assert undefined == ""
