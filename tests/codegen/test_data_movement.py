"""Data movement on the NPU: CONCATENATION as one copy per input into a box of the OFM, bit-exact with LiteRT in
the simulator on every U55 configuration, and the constraint that keeps the rest on the host."""
import pytest

from ethosu_tvm.frontend.importer import from_tflite
from ethosu_tvm.partition import partition_for_ethosu
from ethosu_tvm.testing import models

from sim_support import ACCELERATORS, assert_model_exact

CONCATENATIONS = {
    "channels": dict(in_shape=(1, 4, 4, 8), axis=3),
    "channels-odd": dict(in_shape=(1, 3, 5, 7), axis=-1, num_inputs=3),
    "rows": dict(in_shape=(1, 5, 6, 16), axis=1, num_inputs=3),
    "columns": dict(in_shape=(1, 5, 3, 7), axis=2),
    "2-D": dict(in_shape=(6, 5), axis=0, num_inputs=4),
    "3-D": dict(in_shape=(3, 4, 9), axis=1),
    "one input": dict(in_shape=(1, 2, 3, 4), axis=3, num_inputs=1),
}


@pytest.mark.parametrize("accelerator", ACCELERATORS)
@pytest.mark.parametrize("case", CONCATENATIONS)
def test_concatenation(case, accelerator):
    for seed in (0, 5):
        assert_model_exact(models.make("concatenation", seed, **CONCATENATIONS[case]), accelerator)


HOST_CONCATENATIONS = {
    "batch": (dict(in_shape=(2, 4, 4, 3), axis=0), "input 0 has batch size 2; the IFM batch size must be 1"),
}


@pytest.mark.parametrize("case", HOST_CONCATENATIONS)
def test_concatenation_the_npu_refuses(case):
    params, reason = HOST_CONCATENATIONS[case]
    _, report = partition_for_ethosu(from_tflite(models.make("concatenation", 0, **params)), "ethos-u55-128")
    assert [(e.op, e.target, e.reason) for e in report.ops] == [("CONCATENATION", "host", reason)]
