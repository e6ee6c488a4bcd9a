#!/usr/bin/env python3
"""Benchmark: memory mode Dedicated_Sram on the U65s, ours against Vela `--optimise Performance
--memory-mode Dedicated_Sram`, both in Ethos_U65_High_End.

Per model × accelerator: NPU cycles (our cost model on both streams, and Vela's own estimate of its stream), the
SRAM (our fast scratch pool; Vela's `sram_memory_used`, its arena cache), the DRAM (our workspace pool and I/O;
Vela's `dram_memory_used`, which also holds its constants) and the constants (flash column: in DRAM on this board),
our build without and with the cascader (its smallest schedule), and whether each is bit-exact. A Markdown table
to stdout; progress to stderr. See docs/benchmarks.md, "Ethos-U65 in Dedicated_Sram".

    .venv/bin/python benchmarks/dedicated_sram.py [--models F ...] [--accelerators A ...]
"""
from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from measure import KIB, outputs_equal, progress, read_vela_summary, summary_int

from ethosu_tvm.arch.system import find_system
from ethosu_tvm.testing import shared_models_dir

SYSTEM = ("Ethos_U65_High_End", "Dedicated_Sram")
MODELS = ("mlperf_tiny_kws_dscnn_int8.tflite", "mlperf_tiny_vww_mobilenetv1_96_int8.tflite",
          "mlperf_tiny_ic_resnet8_int8.tflite", "mlperf_tiny_ad_fc_autoencoder_int8.tflite")


def ours(model: bytes, accelerator: str, cascader: bool, inputs, expected) -> tuple[str, ...]:
    """The cells of our build: cycles, SRAM, DRAM, constants, bit-exact."""
    import ethosu_tvm

    target = (f"ethos-u -accelerator-config={accelerator} -system-config={SYSTEM[0]} -memory-mode={SYSTEM[1]}"
              f" -enable-cascader={int(cascader)},c")
    module = ethosu_tvm.build(ethosu_tvm.from_tflite(model), target=target)
    exact = outputs_equal(module.run(inputs).values(), expected)
    sizes = module.workspace.plan.pool_sizes
    dram = sizes["workspace"] + module.io_size_bytes
    return (f"{module.npu_cycles:,}", f"{sizes['fast_scratch']:,}", f"{dram:,}", f"{module.constants_size_bytes:,}",
            "yes" if exact else "no")


def vela(path: Path, accelerator: str, work: Path, inputs, expected) -> tuple[str, ...]:
    """The cells of Vela's Performance build, run in our simulator: cycles (Vela's own estimate), SRAM, DRAM (its
    constants included), constants (counted in DRAM), bit-exact."""
    from ethosu_tvm.sim import vela_compile, vela_tflite

    output = work / path.stem / accelerator
    vela_model = vela_compile.compile_model(path, accelerator, "Performance", output,
                                            ("--system-config", SYSTEM[0], "--memory-mode", SYSTEM[1]))
    summary = read_vela_summary(output)
    outputs, stats = vela_tflite.execute(vela_tflite.parse(vela_model), inputs, accelerator, find_system(*SYSTEM))
    return (f"{stats.elapsed_cycles:,} ({summary_int(summary, 'cycles_npu'):,})",
            f"{summary_int(summary, 'sram_memory_used', KIB):,}", f"{summary_int(summary, 'dram_memory_used', KIB):,}",
            "in DRAM", "yes" if outputs_equal(outputs, expected) else "no")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=list(MODELS), metavar="FILE")
    parser.add_argument("--accelerators", nargs="+", default=["ethos-u65-256", "ethos-u65-512"], metavar="CONFIG")
    args = parser.parse_args(argv)
    from ethosu_tvm.testing.reference import random_inputs, run_model_reference

    print("| model | accelerator | build | NPU cycles | SRAM (fast scratch) | DRAM (workspace + I/O) | constants "
          "(DRAM) | bit-exact |")
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as work:
        for name in args.models:
            path = shared_models_dir() / name
            model = path.read_bytes()
            inputs = random_inputs(model, 0)
            expected = run_model_reference(model, inputs)
            for accelerator in args.accelerators:
                for cascader in (False, True):
                    progress(f"{name} on {accelerator}: ours, cascader {cascader}")
                    cells = ours(model, accelerator, cascader, inputs, expected)
                    print(" | ".join(["", path.stem, accelerator, "ours, cascader" if cascader else "ours", *cells,
                                      ""]).strip(), flush=True)
                progress(f"{name} on {accelerator}: Vela")
                cells = vela(path, accelerator, Path(work), inputs, expected)
                print(" | ".join(["", path.stem, accelerator, "Vela Perf", *cells, ""]).strip(), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
