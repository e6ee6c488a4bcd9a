"""Hypothesis sweep over the broadcast shapes of binary elementwise operators (two feature maps, or a constant on
either side), int8 and int16: `tvmc compile` / `tvmc run` bit-exact with LiteRT's reference kernels."""
from __future__ import annotations

import tempfile
from pathlib import Path

from aot_support import assert_bit_exact, compile_model, npu_target
from hypothesis import given, settings
from hypothesis import strategies as st

from ethosu_tvm.testing import models

OPS = ("add", "sub", "mul", "minimum", "maximum", "squared_difference")


@st.composite
def binary_cases(draw):
    """An op, a dtype, an output shape of rank 1-6 and two operands each keeping or collapsing (to 1, or by a lower
    rank) its dimensions; one of them perhaps a constant (a constant may be a scalar, a feature map may not)."""
    op = draw(st.sampled_from(OPS))
    dtype = "int8" if op == "squared_difference" else draw(st.sampled_from(("int8", "int16")))
    out = draw(st.lists(st.integers(1, 5), min_size=1, max_size=6))
    constant = draw(st.sampled_from((None, "lhs", "rhs")))

    def operand(can_be_scalar: bool):
        rank = draw(st.integers(0 if can_be_scalar else 1, len(out)))
        return tuple(d if draw(st.booleans()) else 1 for d in out[len(out) - rank:])

    lhs, rhs = operand(constant == "lhs"), operand(constant == "rhs")
    return op, dtype, lhs, rhs, constant


@settings(max_examples=20, deadline=None)
@given(binary_cases(), st.integers(0, 100))
def test_broadcast_shapes_bit_exact(case, seed):
    op, dtype, lhs, rhs, constant = case
    quant = {} if op in ("minimum", "maximum") else {"in2_scale": 0.031 if dtype == "int8" else 2.5e-4}
    if constant == "lhs":
        shapes = {"in_shape": rhs, "constant_lhs": lhs}
    elif constant == "rhs":
        shapes = {"in_shape": lhs, "constant_rhs": rhs}
    else:
        shapes = {"in_shape": lhs, "in2_shape": rhs}
    model = models.make(op, seed, dtype=dtype, **shapes, **quant)
    with tempfile.TemporaryDirectory() as directory:
        assert_bit_exact(model, compile_model(model, Path(directory), npu_target("ethos-u55-128")), Path(directory),
                         seeds=range(2))
