"""QUANTIZE from float32 and DEQUANTIZE to float32 host kernels against LiteRT's reference kernels, over scales,
zero points and inputs near every rounding boundary."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ethosu_tvm.frontend.tflite_file import read_model
from ethosu_tvm.host import build_kernel, spec
from ethosu_tvm.testing import models
from ethosu_tvm.testing.reference import litert_tensors

SHAPE = (1, 4, 75)


def _near_boundaries(scale: float, zero_point: int, dtype: str, seed: int) -> np.ndarray:
    """Real values at, and one float32 step either side of, (k + 1/2) · scale for k across the integer range."""
    info = np.iinfo(dtype)
    steps = np.random.default_rng(seed).integers(info.min - zero_point - 3, info.max - zero_point + 3, size=100)
    halfway = ((steps + 0.5) * np.float32(scale)).astype(np.float32)
    return np.concatenate([halfway, np.nextafter(halfway, np.float32(np.inf)),
                           np.nextafter(halfway, np.float32(-np.inf))]).reshape(SHAPE)


@settings(max_examples=15, deadline=None)
@given(dtype=st.sampled_from(["int8", "int16"]), in_scale=st.floats(1e-4, 2.0), out_scale=st.floats(1e-4, 2.0),
       in_zp=st.integers(-128, 127), out_zp=st.integers(-128, 127), seed=st.integers(0, 1000))
def test_float_quantize_and_dequantize(dtype, in_scale, out_scale, in_zp, out_zp, seed, compile_kernel):
    """make("quantize", float_io=True): QUANTIZE from float32, the integer requantization, DEQUANTIZE to float32;
    the first and last against LiteRT's tensors, bit for bit."""
    zero_points = dict(in_zp=in_zp, out_zp=out_zp) if dtype == "int8" else dict(in_zp=0, out_zp=0)
    model = models.make("quantize", in_shape=SHAPE, dtype=dtype, in_scale=in_scale, out_scale=out_scale,
                        float_io=True, **zero_points)
    x = _near_boundaries(np.float32(in_scale), zero_points["in_zp"], dtype, seed)
    graph = read_model(model).Subgraphs(0)
    by_name = {graph.Tensors(i).Name().decode(): i for i in range(graph.TensorsLength())}
    tensors = litert_tensors(model, [x])
    quantized, requantized, result = (tensors[by_name[n]] for n in ("input_0_int", "output_0_int", "output_0"))
    to_int = build_kernel(spec.FloatQuantize(SHAPE, spec.QuantTensor(SHAPE, dtype, in_scale, zero_points["in_zp"])))
    np.testing.assert_array_equal(compile_kernel(to_int)(x).reshape(SHAPE), quantized)
    to_float = build_kernel(spec.Dequantize(spec.QuantTensor(SHAPE, dtype, out_scale, zero_points["out_zp"])))
    got = compile_kernel(to_float)(requantized).reshape(SHAPE)
    np.testing.assert_array_equal(got.view(np.int32), result.view(np.int32))
