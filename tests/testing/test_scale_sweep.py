"""The scale sweep (`benchmarks/scale_sweep.py`) on the ops whose extreme scales were internal errors or off their
reference before: every compile a one-line refusal or bit-exact, on the NPU and on the host."""
from ethosu_tvm.testing.scale_sweep import Case, cases, sweep

TARGETS = ("ethos-u -accelerator-config=ethos-u55-128,c", "c")


def test_cases_cover_output_input_and_second_operand_scales():
    found = cases(["mul", "relu", "add_n"])
    assert Case("mul", (("in_scale", 1.0), ("out_scale", 1e-12))) in found
    assert Case("mul", (("dtype", "int16"), ("in_scale", 1e4))) in found
    assert Case("mul", (("in2_scale", 1e-9),)) in found
    assert Case("relu", (("in_scale", 1e-9),)) in found
    assert not any(case.op == "add_n" and "in2_scale" in dict(case.params) for case in found)


def test_sweep_of_ops_fixed_at_extreme_scales():
    result = sweep(cases(["hard_swish", "prelu", "log_softmax", "abs", "rsqrt", "add_n"]), TARGETS)
    assert result.failures == []
    assert result.outcomes["exact"] > 0 and result.outcomes["refused"] > 0
