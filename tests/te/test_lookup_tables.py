"""Unary int8 ops run as 256-entry tables: checked on every possible input value against LiteRT."""
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ethosu_tvm.legalize.ops import Identity
from ethosu_tvm.quantization import FLOAT32_FUNCTIONS, float32_table_overflow, hard_swish_refusal
from ethosu_tvm.testing import models
from ethosu_tvm.testing.reference import run_litert, run_tflm

from te_support import compile_npu

EVERY_INT8 = np.arange(-128, 128, dtype=np.int8).reshape(1, 16, 16, 1)


@settings(max_examples=40, deadline=None)
@given(op=st.sampled_from(["relu", "relu6", "relu_n1_to_1", "relu_0_to_1", "abs", "leaky_relu", "quantize", "tanh",
                           "logistic", "hard_swish"]),
       in_scale=st.floats(0.002, 0.2), in_zp=st.integers(-128, 127), seed=st.integers(0, 100))
def test_unary_table_exhaustive(op, in_scale, in_zp, seed):
    _assert_npu_table_exact(models.make(op, seed=seed, in_shape=(1, 16, 16, 1), in_scale=in_scale, in_zp=in_zp))


# Input/output scale ratios of 2^24 and more make TFLite's requantization shift int8 inputs out of int32 (undefined
# in C; LiteRT and TFLite Micro on x86-64 wrap): each table must reproduce the wrapped values LiteRT computes.
OVERFLOWING_RATIO = dict(in_shape=(1, 16, 16, 1), in_scale=0.125, in_zp=5, out_scale=4e-9, out_zp=-3)


@pytest.mark.parametrize("op", ["relu", "relu6", "relu_n1_to_1", "relu_0_to_1", "leaky_relu", "quantize", "abs"])
def test_table_where_tflite_overflows(op):
    model = models.make(op, seed=0, **OVERFLOWING_RATIO)
    (litert,) = run_litert(model, [EVERY_INT8])
    assert len(np.unique(litert)) > 1  # not only a saturated output: the wrapped values reach the result
    _assert_npu_table_exact(model)


def _assert_npu_table_exact(model: bytes, reference=run_litert) -> None:
    """The model's one op is a table on the NPU, equal to the reference (LiteRT) on every int8 input."""
    report, graphs, (run,) = compile_npu(model)
    (table_op,) = graphs[0].ops
    assert isinstance(table_op, Identity) and table_op.lut.shape == (256,) and report.ops[0].target == "ethos-u"
    (expected,) = reference(model, [EVERY_INT8])
    assert np.array_equal(run([EVERY_INT8])[0].reshape(expected.shape), expected)


# gemmlowp's RoundingDivideByPOT builds its mask in the operand's type: past 16 bits for HARD_SWISH's int16 values
# (tiny output or input scales) and past 32 for RSQRT's int32 ones (large output scales, where the shift is also
# undefined in C and x86-64 shifts by its low 5 bits), LiteRT computes with that mask; so must the tables.
@pytest.mark.parametrize("op,params", [
    ("hard_swish", dict(in_scale=1.0, out_scale=1e4)),  # output exponent −20
    ("hard_swish", dict(in_scale=1e-8, out_scale=1e-3)),  # the ramp's exponent −20 too
    ("rsqrt", dict(in_scale=1.0, in_zp=-128, out_scale=1e4)),  # a right shift of 33
    ("rsqrt", dict(in_scale=1.0, in_zp=-128, out_scale=1e9)),  # 50
], ids=["hard_swish-output", "hard_swish-ramp", "rsqrt-33", "rsqrt-50"])
def test_table_where_tflite_shifts_past_its_mask(op, params):
    _assert_npu_table_exact(models.make(op, seed=0, in_shape=(1, 16, 16, 1), **params))


@settings(max_examples=25, deadline=None)
@given(op=st.sampled_from(["hard_swish", "rsqrt"]), in_log=st.floats(-9, 2), out_log=st.floats(-2, 10),
       in_zp=st.integers(-128, 127), out_zp=st.integers(-128, 127))
def test_integer_tables_at_extreme_scales(op, in_log, out_log, in_zp, out_zp):
    """HARD_SWISH and RSQRT over input scales 1e-9..100 and output scales 0.01..1e10 (HARD_SWISH where TFLite
    takes the scales: `quantization.hard_swish_refusal`)."""
    in_scale, out_scale = 10.0**in_log, 10.0**out_log
    assume(op != "hard_swish" or not hard_swish_refusal(in_scale, out_scale))
    _assert_npu_table_exact(models.make(op, in_shape=(1, 16, 16, 1), in_scale=in_scale, out_scale=out_scale,
                                        in_zp=in_zp if op == "hard_swish" else -128, out_zp=out_zp))


@settings(max_examples=20, deadline=None)
@given(in_log=st.floats(-10, 0), out_log=st.floats(-6, 0), in_zp=st.integers(-128, 127), out_zp=st.integers(-128, 127))
def test_elu_table_exhaustive(in_log, out_log, in_zp, out_zp):
    """ELU against TFLite Micro, its reference: exp(x) − 1 in float32 (expm1 differed at input scales of 1e-9),
    over input scales 1e-10..1 where its table stays inside int32 (`quantization.float32_table_overflow`)."""
    in_scale, out_scale = 10.0**in_log, 10.0**out_log
    assume(float32_table_overflow(FLOAT32_FUNCTIONS["elu"], np.float32(in_scale), in_zp, np.float32(out_scale),
                                  out_zp) is None)
    model = models.make("elu", in_shape=(1, 16, 16, 1), in_scale=in_scale, out_scale=out_scale, in_zp=in_zp,
                        out_zp=out_zp)
    _assert_npu_table_exact(model, run_tflm)


def test_elu_table_at_a_tiny_input_scale():
    """Input scale 1e-9 (the factory's output scale for it, 3.9e-9): expm1 put five entries 1-2 below TFLite
    Micro's."""
    _assert_npu_table_exact(models.make("elu", in_shape=(1, 16, 16, 1), in_scale=1e-9), run_tflm)


@settings(max_examples=15, deadline=None)
@given(op=st.sampled_from(["neg", "sqrt"]), in_scale=st.floats(0.002, 0.5), in_zp=st.integers(-127, 127),
       seed=st.integers(0, 100))
def test_neg_and_sqrt_tables_exhaustive(op, in_scale, in_zp, seed):
    """NEG (LiteRT negates the raw integers) and SQRT (float32 per element, truncated) on the NPU; SQRT's input has
    zero point −128, as LiteRT refuses inputs below it."""
    in_zp = in_zp if op == "neg" else -128
    _assert_npu_table_exact(models.make(op, seed=seed, in_shape=(1, 16, 16, 1), in_scale=in_scale, in_zp=in_zp))


@settings(max_examples=60, deadline=None)
@given(approximate=st.booleans(), in_scale=st.floats(0.003, 0.5), in_zp=st.integers(-128, 127),
       out_scale=st.floats(0.0003, 0.1), out_zp=st.integers(-128, 127), seed=st.integers(0, 100))
def test_gelu_table_exhaustive(approximate, in_scale, in_zp, out_scale, out_zp, seed):
    """GELU, exact and approximate, on the NPU: TFLite's table of the float32 function on every int8 input, for
    any quantization (the output's too: its rounding decides the entries)."""
    _assert_npu_table_exact(models.make("gelu", seed=seed, in_shape=(1, 16, 16, 1), in_scale=in_scale, in_zp=in_zp,
                                        out_scale=out_scale, out_zp=out_zp, approximate=approximate))
