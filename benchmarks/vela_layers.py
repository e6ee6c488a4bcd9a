#!/usr/bin/env python3
"""Validation of the cost model against Vela's own per-layer estimates, on Vela's own command streams.

For each model x accelerator, Vela (`--optimise Performance --verbose-performance`, in the chosen system config and
memory mode) compiles the model and writes its per-layer CSV; our cost model then costs Vela's command stream from
its registers (`ethosu_tvm.sim.stats.estimate`, the simulator's estimate, in the same system). Same stream, same
block configs, two estimators: the ratio per layer says where the models disagree.

Layers are matched to NPU operations in stream order. A layer takes one operation, and then the operations that
follow it while they are of the same kind on the same IFM and the MACs so far fall short of the layer's (Vela splits
some convolutions into OFM depth slices, each an operation of its own; a depthwise one's slices read IFM slices as
deep), or, for a layer of no MACs, while they count MACs of their own (Vela moves data with pooling operations, e.g.
a transpose one row at a time, and counts no MACs for them); layers Vela fused away (no cycles) take none. Our
cycles for a layer are its share of the stream's timeline (DMA overlapping compute as the waits allow): from the end
of the previous layer's last operation to the end of its own, so a weight transfer that holds a layer up counts to
it, as Vela's per-layer cycles include the weight transfers.

    .venv/bin/python benchmarks/vela_layers.py [--models F ...] [--accelerators A ...] [--system-config S]
                                               [--memory-mode M] [--layers]

It prints a Markdown table per model x accelerator (median, spread and total of the per-layer ratios, and the
layers furthest from 1); `--layers` lists every layer.
"""
from __future__ import annotations

import argparse
import csv
import math
import statistics
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

DEFAULT_MODELS = ("mlperf_tiny_kws_dscnn_int8.tflite", "mlperf_tiny_vww_mobilenetv1_96_int8.tflite",
                  "mlperf_tiny_ic_resnet8_int8.tflite", "mlperf_tiny_ad_fc_autoencoder_int8.tflite")
DEFAULT_ACCELERATORS = ("ethos-u55-128", "ethos-u55-256")
OUTLIERS = 4  # layers furthest from a ratio of 1 listed per model x accelerator


@dataclass(frozen=True)
class Layer:
    """One row of Vela's per-layer CSV that costs cycles, and the stream operations matched to it."""

    operator: str  # Vela's name for the operation ("Conv2D", "Sub", ...)
    macs: int
    vela_cycles: int  # Vela's "Op Cycles": max(NPU, each memory's access cycles)
    vela_npu: int
    vela_sram: int  # SRAM access cycles
    vela_flash: int  # off-chip flash access cycles
    ops: tuple  # our OpStats of its operations
    cycles: int  # our share of the timeline

    @property
    def ratio(self) -> float:
        return self.cycles / self.vela_cycles if self.vela_cycles else math.inf

    def describe(self) -> str:
        first = self.ops[0]
        shape = "x".join(map(str, first.ofm_shape))
        return f"{self.operator} ({first.kind} {first.mode or ''} OFM {shape}, {len(self.ops)} op)".replace("  ", " ")


def vela_layers(csv_path: Path) -> list[dict]:
    """The rows of Vela's per-layer CSV that run on the NPU and cost cycles (fused activations cost none)."""
    with csv_path.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    return [r for r in rows if r["Target"] == "NPU" and (float(r["Op Cycles"]) > 0 or float(r["NPU"]) > 0)]


def _continues(group: list, op, macs: int) -> bool:
    """Whether `op` belongs to the layer of `macs` MACs whose operations so far are `group` (module docstring)."""
    compared = 2 if op.kind == "DEPTHWISE" else 3  # a depthwise slice reads an IFM slice as deep as its OFM
    if (op.kind, op.ifm_shape[:compared]) != (group[0].kind, group[0].ifm_shape[:compared]):
        return False
    return sum(member.macs for member in group) < macs if macs else op.macs > 0


def match(rows: list[dict], ops: list) -> list[Layer]:
    """Vela's layers with their operations (see the module docstring); ValueError when they do not line up."""
    blocks = [op for op in ops if op.kind != "DMA"]
    layers, position, previous_finish = [], 0, 0
    for row in rows:
        if position >= len(blocks):
            raise ValueError(f"the stream has {len(blocks)} operations; Vela lists more layers")
        group = [blocks[position]]
        position += 1
        macs = int(row["MAC Count"])
        while position < len(blocks) and _continues(group, blocks[position], macs):
            group.append(blocks[position])
            position += 1
        finish = group[-1].finish
        layers.append(Layer(row["NNG Operator"], macs, round(float(row["Op Cycles"])), round(float(row["NPU"])),
                            round(float(row["SRAM AC"])), round(float(row["OffFlash AC"])), tuple(group),
                            finish - previous_finish))
        previous_finish = finish
    if position != len(blocks):
        raise ValueError(f"{len(blocks) - position} of the stream's {len(blocks)} operations match no Vela layer")
    return layers


def measure(model: Path, accelerator: str, system_config: str, memory_mode: str) -> tuple[list[Layer], int, int]:
    """(matched layers, our elapsed cycles for the stream, Vela's total cycles) of one model x accelerator."""
    from ethosu_tvm.arch.system import find_system
    from ethosu_tvm.sim import Simulator, vela_compile, vela_tflite
    from ethosu_tvm.sim.stats import estimate

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        options = ("--verbose-performance", "--system-config", system_config, "--memory-mode", memory_mode)
        compiled = vela_compile.compile_model(model, accelerator, "Performance", out, options)
        (per_layer,) = out.glob("*_per-layer.csv")
        rows = vela_layers(per_layer)
        (summary,) = out.glob("*_summary_*.csv")
        with summary.open(newline="") as handle:
            vela_total = round(float(next(csv.DictReader(handle))["cycles_total"]))
    simulator = Simulator(accelerator, find_system(system_config, memory_mode))
    stats = estimate(simulator.commands(vela_tflite.parse(compiled).command_stream), simulator.accelerator,
                     simulator.system)
    return match(rows, stats.ops), stats.elapsed_cycles, vela_total


def _ratio(value: float) -> str:
    return f"{value:.2f}"


def report(name: str, accelerator: str, layers: list[Layer], ours: int, vela: int, every_layer: bool) -> str:
    ratios = [layer.ratio for layer in layers if layer.vela_cycles]
    lines = [f"### {name}, {accelerator}",
             "",
             f"{len(layers)} layers; per-layer ratio ours/Vela: median {_ratio(statistics.median(ratios))}, "
             f"min {_ratio(min(ratios))}, max {_ratio(max(ratios))}; whole stream: ours {ours}, "
             f"Vela {vela} cycles ({_ratio(ours / vela)})",
             ""]
    shown = layers if every_layer else sorted(layers, key=lambda l: -abs(math.log(l.ratio)))[:OUTLIERS]
    lines += ["| layer | ours | Vela | ratio | Vela NPU | Vela SRAM | Vela flash |", "|---|---|---|---|---|---|---|"]
    lines += [f"| {layer.describe()} | {layer.cycles} | {layer.vela_cycles} | {_ratio(layer.ratio)} | "
              f"{layer.vela_npu} | {layer.vela_sram} | {layer.vela_flash} |" for layer in shown]
    return "\n".join(lines + [""])


def main(argv: list[str] | None = None) -> int:
    from ethosu_tvm.arch.system import DEFAULT_MEMORY_MODE, DEFAULT_SYSTEM_CONFIG, MEMORY_MODES, SYSTEM_CONFIGS
    from ethosu_tvm.testing import shared_models_dir

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=list(DEFAULT_MODELS), metavar="FILE")
    parser.add_argument("--models-dir", type=Path, default=None)
    parser.add_argument("--accelerators", nargs="+", default=list(DEFAULT_ACCELERATORS), metavar="CONFIG")
    parser.add_argument("--system-config", default=DEFAULT_SYSTEM_CONFIG, choices=list(SYSTEM_CONFIGS))
    parser.add_argument("--memory-mode", default=DEFAULT_MEMORY_MODE, choices=list(MEMORY_MODES))
    parser.add_argument("--layers", action="store_true", help="list every layer, not only the furthest from 1")
    args = parser.parse_args(argv)
    models_dir = args.models_dir or shared_models_dir()
    medians = []
    for name in args.models:
        for accelerator in args.accelerators:
            layers, ours, vela = measure(models_dir / name, accelerator, args.system_config, args.memory_mode)
            medians.append(statistics.median(layer.ratio for layer in layers if layer.vela_cycles))
            print(report(Path(name).stem, accelerator, layers, ours, vela, args.layers), flush=True)
    print(f"Median of the per-layer ratios, per model x accelerator: {', '.join(map(_ratio, medians))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
