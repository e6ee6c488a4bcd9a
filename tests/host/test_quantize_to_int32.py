"""QUANTIZE to int32 on the host (int16 as SEANet's quantize1, and int8): imported, fused and built from the Relax
form the importer writes, bit-exact on every input value with LiteRT (int16) or TFLite Micro (int8, which LiteRT
refuses), and refused by name where TFLite's int32 arithmetic is undefined."""
import numpy as np
import pytest
import tflite
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ethosu_tvm
from ethosu_tvm.frontend.importer import from_tflite
from ethosu_tvm.host import UnsupportedHostOp, build_kernel, fuse_host_ops, host_functions, host_spec
from ethosu_tvm.testing.reference import run_litert, run_tflm
from ethosu_tvm.testing.tflite_builder import ModelBuilder, Quantization

SWEEP = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SEANET = dict(in_scale=0.0004943124367855489, out_scale=1.4901161193847656e-07)  # quantize1: a 12-bit left shift
UNDEFINED = "where TFLite's int32 arithmetic is undefined"


def _model(in_dtype, in_scale: float, out_scale: float, in_zp: int = 0, out_zp: int = 0, shape=(1, 2, 160, 2),
           out_dtype=np.int32) -> bytes:
    builder = ModelBuilder()
    x = builder.add_tensor("input_0", shape, in_dtype, quantization=Quantization((in_scale,), (in_zp,)))
    y = builder.add_tensor("output_0", shape, out_dtype, quantization=Quantization((out_scale,), (out_zp,)))
    builder.add_operator(tflite.BuiltinOperator.QUANTIZE, [x], [y])
    return builder.build([x], [y], ["input_0"], ["output_0"])


def _every_value(dtype) -> np.ndarray:
    info = np.iinfo(dtype)
    return np.arange(info.min, info.max + 1, dtype=dtype).reshape(1, -1)


def _imported_kernel(model: bytes):
    """The host kernel built from the imported model's fused composite (the importer's form, not the TFLite op)."""
    ((_, function),) = host_functions(fuse_host_ops(from_tflite(model)))
    return build_kernel(host_spec(function))


@SWEEP
@given(in_dtype=st.sampled_from([np.int8, np.int16]), in_scale=st.floats(1e-5, 1.0),
       log2_ratio=st.floats(-24.0, 14.0), in_zp=st.integers(-128, 127), out_zp=st.integers(-(1 << 20), 1 << 20))
def test_quantize_to_int32_sweep(in_dtype, in_scale, log2_ratio, in_zp, out_zp, compile_kernel):
    """Scale ratios from 2^-24 to 2^14 (left shifts up to 15 bits, where no int16 input leaves int32), every
    input value."""
    x = _every_value(in_dtype)
    model = _model(in_dtype, in_scale, in_scale / 2.0 ** log2_ratio, in_zp, out_zp, shape=x.shape)
    got = compile_kernel(_imported_kernel(model))(x).reshape(x.shape)
    (expected,) = (run_litert if in_dtype == np.int16 else run_tflm)(model, [x])
    np.testing.assert_array_equal(got, expected)


def test_litert_refuses_int8_to_int32():
    """Why int8's reference is TFLite Micro."""
    with pytest.raises(RuntimeError, match="QUANTIZE"):
        run_litert(_model(np.int8, 0.01, 0.001, shape=(1, 4)), [np.zeros((1, 4), np.int8)])


@pytest.mark.parametrize("target", ["c", "ethos-u -accelerator-config=ethos-u55-128,c"])
def test_seanet_scales_build_on_the_host(target):
    """quantize1's scales through the whole build: on the host (Vela leaves it on the CPU too), equal to LiteRT."""
    model = _model(np.int16, **SEANET)
    module = ethosu_tvm.build(from_tflite(model), target=target)
    x = np.random.default_rng(0).integers(-32768, 32768, size=(1, 2, 160, 2)).astype(np.int16)
    x.flat[:2] = (-32768, 32767)
    (got,) = module.run({"input_0": x}).values()
    np.testing.assert_array_equal(got, run_litert(model, [x])[0])
    (op,) = module.offload.ops
    reason = "no ethos-u target" if target == "c" else "OFM has data type int32; tensors must be of type int8, int16"
    assert (op.target, op.reason) == ("host", reason)


@pytest.mark.parametrize("in_dtype, scales, zero_points, message", [
    (np.int16, (1.0, 2.0 ** -16), (0, 0), "int16 inputs centred to -32768 and shifted left by 17 bits leave int32"),
    (np.int8, (1.0, 2.0 ** -24), (1, 0), "int8 inputs centred to -129 and shifted left by 25 bits leave int32"),
    (np.int8, (1.0, 2.0 ** -16), (0, (1 << 31) - 127 * 65536),
     "output zero point 2139160576 takes requantized values to 2147483648, beyond int32"),
    (np.int16, (2.0 ** -16, 1.0), (0, -(1 << 31)), "output zero point -2147483648 takes requantized values to "
                                                   "-2147483649, beyond int32"),
])
def test_undefined_int32_arithmetic_is_refused(in_dtype, scales, zero_points, message):
    model = _model(in_dtype, *scales, *zero_points, shape=(1, 4))
    with pytest.raises(UnsupportedHostOp, match=f"^quantize: {message}, {UNDEFINED}$"):
        _imported_kernel(model)


def test_int32_to_int32_is_refused():
    with pytest.raises(UnsupportedHostOp, match=r"^quantize: int32 to int32 is not supported \(TFLite Micro "
                                                r"requantizes int8 and int16 to int32\)$"):
        _imported_kernel(_model(np.int32, 0.01, 0.001, shape=(1, 4)))
