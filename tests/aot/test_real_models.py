"""Public models nobody here wrote, compiled for the NPU and run as a user runs them (the tarball's C, NPU work in
the simulator): every output equal to LiteRT's reference kernels."""
import numpy as np

import ethosu_tvm
from ethosu_tvm.testing import shared_model
from ethosu_tvm.testing.reference import input_infos, random_inputs, run_litert

MOBILENET_V2 = "tflm_xtensa_mobilenet_v2_224_nchw_int8.tflite"


def test_mobilenet_v2_224_on_the_npu_is_bit_exact():
    """MobileNetV2-224 exported from PyTorch (NCHW input, PAD before strided depthwise convolutions, residual ADDs,
    a 7x7 MEAN keeping its quantization, FULLY_CONNECTED 1280->1000): 153 of its 1000 outputs were 1 LSB off while
    the MEAN ran as an average pool."""
    model = shared_model(MOBILENET_V2)
    module = ethosu_tvm.build(ethosu_tvm.from_tflite(model), target="ethos-u -accelerator-config=ethos-u55-128,c")
    assert module.offload.counts()["ethos-u"] >= 83  # everything but (at most) the NCHW → NHWC TRANSPOSE
    names = [info.name for info in input_infos(model)]
    for seed in (0, 1):
        inputs = random_inputs(model, seed)
        (expected,) = run_litert(model, inputs)
        (got,) = module.run(dict(zip(names, inputs))).values()
        assert np.array_equal(got.reshape(expected.shape), expected), f"seed {seed}"
