#!/usr/bin/env python3
"""Benchmark: instructions executed on QEMU (`-icount shift=0`) by our portable host kernels and by CMSIS-NN's calls,
per operator form CMSIS-NN covers and for MLPerf Tiny KWS and ResNet-8 host-only, on the Cortex-M55 (mps3-an547,
MVE), the Cortex-M7 (mps2-an500, DSP) and the Cortex-M3 (mps2-an385, scalar). It re-measures the numbers behind
host/cmsis_nn/choice.py's table and docs/benchmarks.md's CMSIS-NN section; every output is checked bit-exact with
LiteRT.

    ETHOSU_TVM_CMSIS_NN=<folder> .venv/bin/python benchmarks/cmsis_nn_speed.py [--only NAME ...] [--cpus CPU ...]

Each row builds the model three times: `c -mcpu=CPU` (ours), `cmsis-nn,c -mcpu=CPU` with choice.py's tables emptied
(every call CMSIS-NN computes exactly is taken) and `cmsis-nn,c -mcpu=CPU` as users get it (the tables applied).
With -icount shift=0 QEMU advances virtual time 1 ns per instruction;
SysTick, clocked by the board's CPU clock, counts it (its wraps counted in an interrupt), so instructions = ticks ·
ns per tick, to within one tick (31 or 40 instructions). QEMU models no cycles: these are instruction counts.
"""
from __future__ import annotations

import argparse
import os
import sys
import tarfile
import tempfile
from pathlib import Path
from unittest import mock

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "qemu"))

from qemu_harness import DUMP_HELPER_C, build_and_run, c_array, parse_dumps  # noqa: E402

import ethosu_tvm  # noqa: E402
from ethosu_tvm.aot.c_source import c_type  # noqa: E402
from ethosu_tvm.host.cmsis_nn import choice  # noqa: E402
from ethosu_tvm.run.kernel_libraries import CMSIS_NN_ENV, cmsis_nn_folder  # noqa: E402
from ethosu_tvm.testing import models, shared_model  # noqa: E402
from ethosu_tvm.testing.reference import random_inputs, run_litert  # noqa: E402

# QEMU's SYSCLK: mps3-an547 32 MHz, the mps2 boards 25 MHz.
NS_PER_TICK = {"cortex-m55": 1e9 / 32e6, "cortex-m7": 1e9 / 25e6, "cortex-m3": 1e9 / 25e6}
# Representative forms of the calls (op, factory parameters): KWS- and ResNet-8-like sizes.
FORMS = {
    "conv2d 1x1": ("conv2d", dict(in_shape=(1, 16, 16, 32), out_channels=32, kernel=(1, 1))),
    "conv2d 3x3": ("conv2d", dict(in_shape=(1, 16, 16, 16), out_channels=16)),
    "depthwise_conv2d 3x3": ("depthwise_conv2d", dict(in_shape=(1, 16, 16, 32))),
    "avg_pool2d": ("avg_pool2d", dict(in_shape=(1, 16, 16, 32), pool=(2, 2), stride=(2, 2))),
    "max_pool2d": ("max_pool2d", dict(in_shape=(1, 16, 16, 32), pool=(2, 2), stride=(2, 2))),
    "fully_connected": ("fully_connected", dict(in_shape=(1, 256), units=64, in_scale=0.5, in_zp=3,
                                                w_scales=[0.25], out_scale=0.125, out_zp=-5, bias=False)),
    "add": ("add", dict(in_shape=(1, 16, 16, 32))),
    "mul": ("mul", dict(in_shape=(1, 16, 16, 32))),
}
FORMS.update({f"{name} s16": (op, {**params, "dtype": "int16", "in_zp": 0, "out_zp": 0} if "in_zp" in params
                              else {**params, "dtype": "int16"}) for name, (op, params) in FORMS.items()})
MODELS = ("mlperf_tiny_kws_dscnn_int8", "mlperf_tiny_ic_resnet8_int8")
CPUS = ("cortex-m55", "cortex-m7", "cortex-m3")

COUNTER_C = """
/* SysTick on the CPU clock, its wraps counted: a copy of the vector table in RAM with a SysTick handler. */
#define SYST_CSR (*(volatile uint32_t*)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t*)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t*)0xE000E018u)
#define SCB_VTOR (*(volatile uint32_t*)0xE000ED08u)
static uint32_t vectors[128] __attribute__((aligned(512)));
static volatile uint32_t wraps;
static void count_wrap(void) { ++wraps; }

static void counter_start(void) {
  const uint32_t* table = (const uint32_t*)SCB_VTOR;
  for (int i = 0; i < 128; ++i) vectors[i] = table[i];
  vectors[15] = (uint32_t)count_wrap;
  SCB_VTOR = (uint32_t)vectors;
  SYST_RVR = 0xFFFFFFu;
  SYST_CVR = 0;
  wraps = 0;
  SYST_CSR = 7u; /* enable, interrupt, CPU clock */
  while (SYST_CVR == 0) {} /* the first tick loads the reload value */
}

static uint64_t counter_ticks(void) {
  uint32_t before, value;
  do { before = wraps; value = SYST_CVR; } while (before != wraps);
  return (uint64_t)before * 0x1000000u + (0xFFFFFFu - value);
}
"""


def main_c(inputs: list[np.ndarray], output: np.ndarray) -> str:
    """A main() running the model once on `inputs` between two counter reads, printing the ticks and dumping the
    output."""
    arrays = "\n".join(c_array(f"input_{k}", x.reshape(-1), section=".sram_data") for k, x in enumerate(inputs))
    pointers = ", ".join(f"(void*)input_{k}" for k in range(len(inputs)))
    return f"""#include <stdint.h>
#include <stdio.h>
#include "tvmgen_default.h"
{DUMP_HELPER_C}
{COUNTER_C}
{arrays}
static {c_type(output.dtype)} output[{output.size}] __attribute__((aligned(16)));

int main(void) {{
  struct tvmgen_default_inputs in = {{{pointers}}};
  struct tvmgen_default_outputs out = {{output}};
  counter_start();
  uint64_t start = counter_ticks();
  if (tvmgen_default_run(&in, &out) != 0) return 1;
  uint64_t ticks = counter_ticks() - start;
  printf("@@ticks %lu\\n", (unsigned long)ticks);
  ethosu_tvm_dump("output", output, sizeof(output));
  return 0;
}}
"""


def library_lines(cpu: str) -> tuple[str, ...]:
    include, archive = cmsis_nn_folder(cpu)
    return ("add_library(cmsis-nn STATIC IMPORTED)",
            f"set_target_properties(cmsis-nn PROPERTIES IMPORTED_LOCATION {archive} "
            f"INTERFACE_INCLUDE_DIRECTORIES {include})")


def instructions(model: bytes, target: str, cpu: str, workdir: Path, table: bool = True) -> tuple[int, list[str]]:
    """Instructions one inference takes on `cpu` built for `target` (without `table`: choice.py's tables emptied),
    and the library of each host step; the output is checked bit-exact with LiteRT."""
    with mock.patch.dict(choice.OURS_FASTER, clear=not table), mock.patch.dict(choice.OURS_FASTER_S16, clear=not table):
        module = ethosu_tvm.build(ethosu_tvm.from_tflite(model), target=f"{target} -mcpu={cpu}")
    workdir.mkdir()
    module.export_model_library_format(workdir / "model.tar")
    with tarfile.open(workdir / "model.tar") as tar:
        tar.extractall(workdir / "mlf", filter="data")
    x = random_inputs(model, 0)
    expected = run_litert(model, x)[0]
    libraries = library_lines(cpu) if module.kernel_libraries else ()
    result = build_and_run(main_c(x, expected), workdir, workdir / "mlf", libraries=libraries, cpu=cpu,
                           qemu_options=("-icount", "shift=0"))
    assert result.exit_code == 0, result.stderr
    got = np.frombuffer(parse_dumps(result.stdout)["output"], dtype=expected.dtype).reshape(expected.shape)
    np.testing.assert_array_equal(got, expected, err_msg=f"{target} on {cpu}")
    ticks = int(result.stdout.split("@@ticks ")[1].split()[0])
    return round(ticks * NS_PER_TICK[cpu]), [step.kernel.library for step in module.program.steps]


def rows(names, cpus):
    """(name, cpu, ours, every exact CMSIS-NN call, the default cmsis-nn build, its calls / host steps)."""
    for name in names:
        model = shared_model(f"{name}.tflite") if name in MODELS else models.make(FORMS[name][0], 1,
                                                                                  **FORMS[name][1])
        for cpu in cpus:
            with tempfile.TemporaryDirectory() as work:
                ours, _ = instructions(model, "c", cpu, Path(work) / "ours")
                cmsis, _ = instructions(model, "cmsis-nn,c", cpu, Path(work) / "every", table=False)
                chosen, libraries = instructions(model, "cmsis-nn,c", cpu, Path(work) / "chosen")
            yield name, cpu, ours, cmsis, chosen, f"{libraries.count('cmsis-nn')}/{len(libraries)}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=[*FORMS, *MODELS], default=[*FORMS, *MODELS])
    parser.add_argument("--cpus", nargs="+", choices=CPUS, default=list(CPUS))
    args = parser.parse_args(argv)
    if not os.environ.get(CMSIS_NN_ENV):
        parser.error(f"set {CMSIS_NN_ENV} to a CMSIS-NN build folder (docs/firmware.md)")
    print("| layer or model | CPU | ours | CMSIS-NN | ours / CMSIS-NN | cmsis-nn,c (choice table) | its calls |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for name, cpu, ours, cmsis, chosen, calls in rows(args.only, args.cpus):
        print(f"| {name} | {cpu} | {ours:,} | {cmsis:,} | {ours / cmsis:.2f} | {chosen:,} | {calls} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
