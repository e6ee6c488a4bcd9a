"""FLOOR and L2_POOL_2D have float32 kernels only, in LiteRT and in TFLite Micro: int8/int16 models of them are
refused by both runtimes, and by the compiler with one line naming the operator."""
import re

import numpy as np
import pytest
import tflite

from ethosu_tvm.frontend.errors import UnsupportedModelError
from ethosu_tvm.frontend.importer import from_tflite
from ethosu_tvm.host import UnsupportedHostOp, fuse_host_ops
from ethosu_tvm.partition import partition_for_ethosu
from ethosu_tvm.testing.reference import run_litert, run_tflm
from ethosu_tvm.testing.tflite_builder import ModelBuilder, Quantization

_OP = tflite.BuiltinOperator
_POOL = ("Pool2DOptions", dict(Padding=1, StrideW=2, StrideH=2, FilterWidth=2, FilterHeight=2))


def _model(builtin: int, dtype, output_shape, options=(None, None)) -> bytes:
    builder = ModelBuilder()
    quantization = Quantization((0.1,), (-3 if dtype == np.int8 else 0,))
    x = builder.add_tensor("x", (1, 4, 4, 2), dtype, quantization=quantization)
    y = builder.add_tensor("y", output_shape, dtype, quantization=quantization)
    builder.add_operator(builtin, [x], [y], *options)
    return builder.build([x], [y], ["input_0"], ["output_0"])


# op -> (builtin, output shape, options, LiteRT's error, TFLite Micro's log line)
CASES = {
    "floor": (_OP.FLOOR, (1, 4, 4, 2), (None, None), r"floor\.cc:\d+ input->type == kTfLiteFloat32 .*\(FLOOR\) failed "
              r"to prepare", r"floor\.cc:\d+ input->type != kTfLiteFloat32"),
    "l2_pool_2d": (_OP.L2_POOL_2D, (1, 2, 2, 2), _POOL, r"\(L2_POOL_2D\) failed to (prepare|invoke)",
                   r"l2_pool_2d\.cc:\d+ input->type != kTfLiteFloat32"),
}


@pytest.mark.parametrize("dtype", [np.int8, np.int16])
@pytest.mark.parametrize("op", CASES)
def test_litert_and_tflite_micro_have_no_integer_kernel(op, dtype, capfd):
    builtin, shape, options, litert_message, micro_message = CASES[op]
    model = _model(builtin, dtype, shape, options)
    x = np.zeros((1, 4, 4, 2), dtype)
    with pytest.raises(RuntimeError, match=litert_message):
        run_litert(model, [x])
    with pytest.raises(RuntimeError):
        run_tflm(model, [x])
    assert re.search(micro_message, capfd.readouterr().err)


def test_int8_floor_is_refused_by_name():
    module, _ = partition_for_ethosu(from_tflite(_model(_OP.FLOOR, np.int8, (1, 4, 4, 2))), "ethos-u55-128")
    with pytest.raises(UnsupportedHostOp, match=r"^operator #0 FLOOR has no NPU or host kernel \(relax\.floor\)$"):
        fuse_host_ops(module)


def test_int8_l2_pool_is_refused_by_name():
    with pytest.raises(UnsupportedModelError, match=r"^the TFLite frontend cannot convert operator #0 L2_POOL_2D: "
                                                    r"The following quantized TFLite operators are not supported"):
        from_tflite(_model(_OP.L2_POOL_2D, np.int8, (1, 2, 2, 2), _POOL))
