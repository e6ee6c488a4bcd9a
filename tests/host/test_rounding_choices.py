"""Arithmetic choices of LiteRT's reference kernels, pinned on inputs where the plausible alternative differs.

Each test shows the alternative would give a different result on that model, and that the kernel matches LiteRT.
"""
import numpy as np
from host_harness import assert_bit_exact
from host_tflite_ops import host_op

from ethosu_tvm.quantization import quantize_multiplier
from ethosu_tvm.testing import models
from ethosu_tvm.testing.reference import random_inputs, run_litert

# One quantization for which input_scale / output_scale rounds to another multiplier in float32 than in double.
PINNED = dict(in_scale=0.01407, in_zp=-69, out_scale=0.00868, out_zp=-18)
INT8_VALUES = np.arange(-128, 128, dtype=np.int8).reshape(1, 256)


def _requantize(acc: np.ndarray, multiplier: int, shift: int, single_rounding: bool) -> np.ndarray:
    """TFLite's two requantizations with Python integers: (acc·m + 2^(30−s)) >> (31 − s) in one rounding, or a
    rounding doubling high multiply (ties up) then a rounding right shift (ties away from zero)."""
    out = []
    for x in acc.ravel().tolist():
        if single_rounding:
            out.append((x * multiplier + (1 << (30 - shift))) >> (31 - shift))
            continue
        product = (x << max(shift, 0)) * multiplier
        high = (product + (1 << 30)) >> 31 if product >= 0 else -((-product + (1 << 30) - 1) >> 31)
        right = max(-shift, 0)
        rounded = (abs(high) + ((1 << right) >> 1)) >> right
        out.append(rounded if high >= 0 else -rounded)
    return np.array(out, dtype=np.int64).reshape(acc.shape)


def test_relu_divides_scales_in_float32_and_quantize_in_double(compile_kernel):
    in_scale, out_scale = np.float32(PINNED["in_scale"]), np.float32(PINNED["out_scale"])
    assert quantize_multiplier(float(in_scale / out_scale)) != quantize_multiplier(float(in_scale) / float(out_scale))
    relu = models.make("relu", in_shape=(1, 256), **PINNED)
    quantize = models.make("quantize", in_shape=(1, 256), **PINNED)
    relu_out, quantize_out = (run_litert(m, [INT8_VALUES])[0] for m in (relu, quantize))
    assert not np.array_equal(relu_out, np.maximum(quantize_out, PINNED["out_zp"]))  # only the multiplier differs
    assert_bit_exact(relu, compile_kernel)
    assert_bit_exact(quantize, compile_kernel)


def test_int8_fully_connected_rounds_once(compile_kernel):
    """Unlike conv, LiteRT's int8 FULLY_CONNECTED requantizes with a single rounding."""
    model = models.make("fully_connected", seed=8, in_shape=(2, 3, 40), units=24)
    op = host_op(model)
    inputs = random_inputs(model, 8)
    (expected,) = run_litert(model, inputs)
    acc = (inputs[0].reshape(-1, 40).astype(np.int64) - op.input.zero_point) @ op.weights.T.astype(np.int64) + op.bias
    multiplier, shift = quantize_multiplier(float(np.float32(op.input.scale) * np.float32(op.weight_scales[0]))
                                            / op.output.scale)
    for single, matches in ((True, True), (False, False)):
        result = np.clip(_requantize(acc, multiplier, shift, single) + op.output.zero_point, -128, 127)
        assert np.array_equal(result, expected.astype(np.int64)) == matches
    assert_bit_exact(model, compile_kernel, seeds=[8])
