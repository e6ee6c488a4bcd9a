"""A convolution whose weights are DMAed into SRAM, compiled by `tvmc compile`, bit-exact with LiteRT through
`tvmc run` and the host program; the NPU scratch that holds the weight buffer is a buffer of the memory plan."""
import json

import pytest

from ethosu_tvm.testing import models

from aot_support import ACCELERATORS, assert_bit_exact, compile_model, extract, npu_target

WEIGHT_STREAMS = 9552  # the conv's encoded weight and scale/bias streams (tests/codegen/test_weight_buffering.py)


@pytest.mark.parametrize("accelerator", ACCELERATORS)
def test_buffered_convolution_through_tvmc(accelerator, tmp_path):
    model = models.make("conv2d", seed=4, in_shape=(1, 32, 32, 32), out_channels=32)
    archive = compile_model(model, tmp_path / "build", npu_target(accelerator))
    assert_bit_exact(model, archive, tmp_path)
    plan = json.loads((extract(archive, tmp_path / "plan") / "src/memory_plan.json").read_text())
    assert [(b["name"], b["size"]) for b in plan["buffers"]] == [("ethos_u_0_scratch", WEIGHT_STREAMS)]
