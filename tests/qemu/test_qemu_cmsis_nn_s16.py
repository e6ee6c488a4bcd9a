"""CMSIS-NN's s16 calls on QEMU: 16x8 factory ops built `cmsis-nn,c` for the Cortex-M55 (MVE, mps3-an547) and the
Cortex-M7 (DSP, mps2-an500), linked with the prebuilt library for that CPU, with the context buffers this project
sizes for it, bit-exact with LiteRT. Opt-in: ETHOSU_TVM_CMSIS_NN names the library folder."""
from __future__ import annotations

import os

import pytest
from test_qemu_cmsis_nn import _assert_exact_on_qemu

from ethosu_tvm.testing import models

pytestmark = pytest.mark.skipif(not os.environ.get("ETHOSU_TVM_CMSIS_NN"),
                                reason="ETHOSU_TVM_CMSIS_NN names no CMSIS-NN build (include/, lib/cortex-m55/, "
                                       "lib/cortex-m7/): the linked tier needs one (docs/firmware.md)")

FACTORY = {  # the paths: conv's im2col (odd and even outputs), depthwise fast and generic, FC, pools
    "conv2d": {"in_shape": (1, 7, 7, 4), "stride": (2, 2)},
    "conv2d 1x1 two batches": {"kernel": (1, 1), "in_shape": (2, 5, 5, 8), "activation": "RELU6"},
    "depthwise_conv2d": {},
    "depthwise_conv2d multiplier 4": {"depth_multiplier": 4, "in_shape": (1, 8, 8, 2)},
    "fully_connected": {"in_shape": (1, 40), "in_scale": 0.5, "w_scales": [0.25], "out_scale": 0.125,
                        "bias": False},
    "avg_pool2d": {"pool": (3, 3), "stride": (2, 2), "padding": "SAME"},
    "max_pool2d": {},
}


@pytest.mark.parametrize("cpu", ["cortex-m55", "cortex-m7"])
@pytest.mark.parametrize("case", FACTORY)
def test_factory_ops(case, cpu, tmp_path):
    module = _assert_exact_on_qemu(models.make(case.split()[0], 1, dtype="int16", **FACTORY[case]), tmp_path, cpu)
    ours = cpu == "cortex-m7" and "pool" in case  # faster than CMSIS-NN's on DSP cores (choice.py)
    assert [step.kernel.library for step in module.program.steps] == ["" if ours else "cmsis-nn"]
