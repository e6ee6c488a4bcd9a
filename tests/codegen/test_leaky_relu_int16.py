"""int16 LEAKY_RELU on the NPU (as Vela runs it: MULs by 1 requantized by each branch's multiplier, then their MAX,
or MIN for alpha > 1): on every int16 input value, equal to LiteRT's reference kernel on every U55 configuration;
forms the NPU cannot compute as TFLite does stay on the host with their reason."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ethosu_tvm.quantization import leaky_relu_extreme
from ethosu_tvm.testing import models
from ethosu_tvm.testing.reference import run_litert

from sim_support import ACCELERATORS, compile_model, run_artifact

SHAPE = (1, 64, 64, 16)  # 65536 elements: a permutation of every int16 value
EVERY_VALUE = np.random.default_rng(0).permutation(np.arange(-(1 << 15), 1 << 15)).astype(np.int16).reshape(SHAPE)


def _npu_result(model: bytes, accelerator: str) -> tuple[np.ndarray, int]:
    """The NPU's output on every int16 value (all on the NPU, in one launch) and its operation count."""
    report, artifacts = compile_model(model, accelerator)
    assert report.counts() == {"ethos-u": 1}, str(report)
    (artifact,) = artifacts
    return run_artifact(artifact, [EVERY_VALUE])[0].reshape(SHAPE), len(artifact.ops)


@settings(max_examples=12, deadline=None)
@given(accelerator=st.sampled_from(ACCELERATORS), in_scale=st.floats(1e-5, 0.05), out_scale=st.floats(1e-5, 0.05),
       alpha=st.floats(0.01, 3.0))
def test_every_value_bit_exact(accelerator, in_scale, out_scale, alpha):
    model = models.make("leaky_relu", 3, dtype="int16", in_shape=SHAPE, in_scale=in_scale, out_scale=out_scale,
                        alpha=alpha)
    got, _ = _npu_result(model, accelerator)
    np.testing.assert_array_equal(got, run_litert(model, [EVERY_VALUE])[0])


@pytest.mark.parametrize("out_scale, alpha, operations", [(0.001, 0.3, 2), (0.001, 2.5, 2), (0.0015, 0.3, 3)])
def test_equal_scales_need_one_multiplication(out_scale, alpha, operations):
    """With equal input and output scales the identity branch is the input itself, as in Vela: one MUL, then MAX
    (alpha < 1) or MIN (alpha > 1); two MULs otherwise."""
    model = models.make("leaky_relu", 1, dtype="int16", in_shape=SHAPE, in_scale=0.001, out_scale=out_scale,
                        alpha=alpha)
    got, count = _npu_result(model, "ethos-u55-128")
    assert count == operations
    np.testing.assert_array_equal(got, run_litert(model, [EVERY_VALUE])[0])


def test_branch_order_is_checked_on_every_value():
    """MAX of the branches is LEAKY_RELU for alpha below 1, MIN above, on every int16 value (a negative
    multiplier orders them for MAX too, but the NPU's scales are positive: partitioning refuses it first)."""
    assert leaky_relu_extreme(1.3, 0.39) == "MAX"
    assert leaky_relu_extreme(0.7, 1.75) == "MIN"
    assert leaky_relu_extreme(1.0, 1.0) == "MAX"
    assert leaky_relu_extreme(1.3, -0.39) == "MAX"


@pytest.mark.parametrize("params, reason", [
    (dict(alpha=-0.5), "alpha -0.5 is negative; the NPU's scales are positive"),
    (dict(alpha=0.0), "effective scale 0 is below 2^-32, where TFLite's multiplier is 0: a constant result, which"
                      " the NPU operations are not generated for"),
    (dict(in_scale=1.0, out_scale=1e-12), "effective output scale 1e+12 needs a left shift of 40 bits, which"
                                          " TFLite's int32 arithmetic leaves undefined"),
    (dict(in_scale=0.1, out_scale=1e-6), "effective output scale 1e+05 shifts values of magnitude up to 32768 left"
                                         " by 17 bits, beyond TFLite's int32 arithmetic (LiteRT's product wraps"
                                         " there; the NPU's does not)"),
])
def test_host_keeps_what_the_npu_cannot_compute(params, reason):
    """The offload report names the reason; the host kernel computes it (bit-exact, tests/host)."""
    model = models.make("leaky_relu", 2, dtype="int16", in_shape=(1, 4, 4, 8), **params)
    report, artifacts = compile_model(model, "ethos-u55-128")
    assert not artifacts
    (op,) = report.ops
    assert (op.target, op.reason) == ("host", reason)

