"""A model with float32 I/O, host-only for Cortex-M55 on QEMU mps3-an547: its QUANTIZE (float32 division, roundf)
and DEQUANTIZE host kernels give LiteRT's bits on the M55's FPU too, halfway cases included."""
from __future__ import annotations

import tarfile

import numpy as np
from qemu_harness import DUMP_HELPER_C, build_and_run, c_array, parse_dumps

import ethosu_tvm
from ethosu_tvm.testing import models
from ethosu_tvm.testing.reference import random_inputs, run_litert


def _main_c(inputs: list[np.ndarray], output_size: int) -> str:
    # Floats travel as their int32 bit patterns: the harness writes integer arrays.
    arrays = "\n".join(c_array(f"input_{i}", x.reshape(-1).view(np.int32)) for i, x in enumerate(inputs))
    return f"""#include <stdint.h>
#include "tvmgen_default.h"
{DUMP_HELPER_C}
{arrays}
static const int32_t* const input_sets[{len(inputs)}] = {{{", ".join(f"input_{i}" for i in range(len(inputs)))}}};
static float output[{output_size}] __attribute__((aligned(16)));

int main(void) {{
  char name[16] = "output_0";
  for (int i = 0; i < {len(inputs)}; ++i) {{
    struct tvmgen_default_inputs in = {{(void*)input_sets[i]}};
    struct tvmgen_default_outputs out = {{output}};
    if (tvmgen_default_run(&in, &out) != 0) return 1;
    name[7] = (char)('0' + i);
    ethosu_tvm_dump(name, output, sizeof(output));
  }}
  return 0;
}}
"""


def test_float_io_host_only_on_cortex_m55(tmp_path):
    model = models.make("conv2d", in_scale=0.25, in_zp=3, float_io=True)
    module = ethosu_tvm.build(ethosu_tvm.from_tflite(model), target="c -mcpu=cortex-m55")
    module.export_model_library_format(tmp_path / "m.tar")
    with tarfile.open(tmp_path / "m.tar") as tar:
        tar.extractall(tmp_path / "mlf", filter="data")
    mlf = tmp_path / "mlf"
    shape = random_inputs(model, 0)[0].shape
    halfway = np.resize(np.arange(-40.5, 40.5, 0.125, dtype=np.float32), shape)  # x / 0.25 = k + 0.5 for odd 8x
    inputs = [halfway, random_inputs(model, 1)[0], (random_inputs(model, 2)[0] * 30).astype(np.float32)]
    expected = [run_litert(model, [x])[0] for x in inputs]
    result = build_and_run(sorted((mlf / "codegen/host/src").glob("*.c")), [mlf / "codegen/host/include"],
                           _main_c(inputs, expected[0].size), tmp_path)
    assert result.exit_code == 0, result.stderr
    dumps = parse_dumps(result.stdout)
    for i, want in enumerate(expected):
        got = np.frombuffer(dumps[f"output_{i}"], dtype=np.float32).reshape(want.shape)
        np.testing.assert_array_equal(got.view(np.int32), want.view(np.int32), err_msg=f"input set {i}")
