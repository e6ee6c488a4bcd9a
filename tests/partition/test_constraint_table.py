"""The constraint table: every NPU pattern kind has its tensors, its check and a legalize rule, and an operator's form,
the generic limits on its tensors and its own check are checked in that order (Vela checks its generic constraints
before each operator's own)."""
from ethosu_tvm.frontend.importer import from_tflite
from ethosu_tvm.legalize.rules import RULES
from ethosu_tvm.partition import partition_for_ethosu
from ethosu_tvm.partition.constraints import CHECKS, CONSTRAINTS
from ethosu_tvm.partition.patterns import npu_patterns
from ethosu_tvm.testing import models

# Matched only so that the offload report says why it stays on the host: its int32 OFM is not a feature map.
ALWAYS_REFUSED = {"quantize_int32"}


def test_patterns_checks_and_rules_name_the_same_operators():
    kinds = {pattern.kind for pattern in npu_patterns(concat_arities=(2, 3))}
    assert sorted(CONSTRAINTS) == sorted(CHECKS) == sorted(kinds)
    assert sorted(RULES) == sorted(kinds - ALWAYS_REFUSED)


def _reason(model: bytes) -> str:
    _, report = partition_for_ethosu(from_tflite(model), "ethos-u55-128")
    return report.ops[0].reason


def test_a_generic_limit_is_reported_before_the_operators_own():
    net = models.Net(seed=3)
    net.output(net.max_pool2d(net.input((2, 12, 12, 4)), pool=(2, 2), stride=(4, 4)))
    assert _reason(net.build()) == "IFM has batch size 2; the IFM batch size must be 1"


def test_the_operators_own_check_follows_the_generic_limits():
    net = models.Net(seed=3)
    net.output(net.max_pool2d(net.input((1, 12, 12, 4)), pool=(2, 2), stride=(4, 4)))
    assert _reason(net.build()) == "stride HxW is 4x4; stride values must be in the range [1, 3]"



def test_the_form_of_an_operator_is_reported_before_the_generic_limits():
    """Run-time operands of other batch axes are no NPU BATCH_MATMUL, whatever their batch sizes."""
    model = models.make("batch_matmul", 0, in_shape=(2, 1, 3, 6), in2_shape=(4, 6, 5))
    assert _reason(model) == "batch axes (2, 1) and (4,) differ; the NPU does not broadcast them"
