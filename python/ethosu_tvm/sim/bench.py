"""Benchmark: wall time to simulate the Vela-compiled MLPerf Tiny models.

The first run of each model includes one-off work (importing Vela's cycle model, starting the weight decoder,
decoding and caching the weight streams); later runs show the steady state a test suite sees.
"""
from __future__ import annotations

import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from .vela_compile import compile_model
from .vela_tflite import parse, run, seeded_inputs

MODELS = {  # file name -> (label, time target in seconds or None)
    "mlperf_tiny_kws_dscnn_int8.tflite": ("KWS", 0.3),
    "mlperf_tiny_vww_mobilenetv1_96_int8.tflite": ("VWW", 1.0),
    "mlperf_tiny_ic_resnet8_int8.tflite": ("ResNet8", None),
    "mlperf_tiny_ad_fc_autoencoder_int8.tflite": ("AD", None),
}


@dataclass(frozen=True)
class BenchResult:
    model: str
    accelerator: str
    macs: int
    first: float
    best: float
    median: float
    target: float | None

    @property
    def verdict(self) -> str:
        if self.target is None:
            return "-"
        return "meets" if self.median < self.target else "MISSES"


def bench_model(path: Path, accelerator: str, repeat: int, workdir: Path) -> BenchResult:
    label, target = MODELS.get(path.name, (path.stem, None))
    compiled = compile_model(path, accelerator, "Performance", workdir)
    inputs = seeded_inputs(parse(compiled), seed=0)
    times = []
    for _ in range(repeat + 1):
        start = time.perf_counter()
        _, stats = run(compiled, inputs, accelerator)
        times.append(time.perf_counter() - start)
    steady = times[1:]
    return BenchResult(label, accelerator, stats.macs, times[0], min(steady), statistics.median(steady), target)


def bench(models_dir: Path, accelerators: list[str], repeat: int) -> list[BenchResult]:
    missing = [name for name in MODELS if not (models_dir / name).is_file()]
    if missing:
        raise FileNotFoundError(f"{', '.join(missing)} not found in {models_dir}; set ETHOSU_TVM_MODELS or --models")
    with tempfile.TemporaryDirectory() as tmp:
        return [bench_model(models_dir / name, accelerator, repeat, Path(tmp) / accelerator)
                for accelerator in accelerators for name in MODELS]


def format_results(results: list[BenchResult]) -> str:
    lines = [f"{'model':<8} {'accelerator':<14} {'MACs':>10} {'first s':>8} {'best s':>8} {'median s':>9} "
             f"{'target s':>9}  verdict"]
    for r in results:
        target = f"{r.target:.1f}" if r.target is not None else "-"
        lines.append(f"{r.model:<8} {r.accelerator:<14} {r.macs:>10} {r.first:>8.3f} {r.best:>8.3f} {r.median:>9.3f} "
                     f"{target:>9}  {r.verdict}")
    return "\n".join(lines)
