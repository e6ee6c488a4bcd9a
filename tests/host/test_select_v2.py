"""SELECT_V2 (int8, int16) on the host: bit-exact with LiteRT over broadcast shapes, constant operands and
quantizations the kernel copies through."""
import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st
from host_harness import assert_bit_exact

from ethosu_tvm.host import UnsupportedHostOp, build_kernel, spec
from ethosu_tvm.testing import models

SWEEP = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
shapes = st.lists(st.integers(1, 4), min_size=0, max_size=4).map(tuple)


@pytest.mark.parametrize("params", [
    {},
    dict(dtype="int16"),
    dict(in_shape=(2, 1, 5), in2_shape=(3, 1), condition_shape=(1, 5)),
    dict(in_shape=(4,), in2_shape=(), condition_shape=(3, 1)),
    dict(in2_scale=0.3, in2_zp=100),  # y's integers are copied as they are, as LiteRT does
    dict(constant_rhs=(1, 8, 1, 8)),
    dict(dtype="int16", constant_lhs=(8,), condition_shape=(2, 1, 1, 1)),
    dict(constant_condition=True, condition_shape=(8, 1, 8)),
])
def test_select_v2(params, compile_kernel):
    assert_bit_exact(models.make("select_v2", seed=4, **params), compile_kernel)


@SWEEP
@given(x_shape=shapes, y_shape=shapes, condition_shape=shapes, dtype=st.sampled_from(["int8", "int16"]))
def test_select_v2_broadcast_sweep(x_shape, y_shape, condition_shape, dtype, compile_kernel):
    try:
        model = models.make("select_v2", seed=7, dtype=dtype, in_shape=x_shape, in2_shape=y_shape,
                            condition_shape=condition_shape)
    except ValueError:  # shapes that do not broadcast
        reject()
    assert_bit_exact(model, compile_kernel, range(3))


def test_select_v2_shapes_that_do_not_broadcast_are_refused():
    op = spec.Select((2,), (3,), (3,), (3,), "int8")
    with pytest.raises(UnsupportedHostOp, match=r"^select_v2: \(2,\) and \(3,\) and \(3,\) do not broadcast to "
                                                r"\(3,\)$"):
        build_kernel(op)
