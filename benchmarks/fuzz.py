#!/usr/bin/env python3
"""Robustness benchmark: `tvmc compile` on seeded mutations (byte flips, truncations, zeroed and duplicated runs) of
factory models and, when present, the MLPerf Tiny KWS model. Prints how many compiled, how many were refused with a
one-line error, and every internal error or unclean failure (the suite's test runs the same fuzzer at 200).

    .venv/bin/python benchmarks/fuzz.py [--count 2000] [--seed 0]
"""
from __future__ import annotations

import argparse
import sys
import time

from ethosu_tvm.testing import models, shared_models_dir
from ethosu_tvm.testing.fuzz import fuzz

KWS = "mlperf_tiny_kws_dscnn_int8.tflite"


def _lstm() -> bytes:
    """A small integer LSTM (its 24 inputs, variable states and intermediates are more to mutate)."""
    net = models.Net(0)
    net.output(net.lstm(net.input((1, 3, 5)), units=4))
    return net.build()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=2000, help="mutations to compile (default 2000)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    originals = {"conv2d": models.make("conv2d", 0), "ds_cnn": models.make_graph("ds_cnn"),
                 "add": models.make("add", 0, in2_shape=(1, 1, 1, 8)),
                 "mobilenet_v2": models.make_graph("mobilenet_v2"), "lstm": _lstm()}
    if (shared_models_dir() / KWS).is_file():
        originals["kws"] = (shared_models_dir() / KWS).read_bytes()
    start = time.perf_counter()
    result = fuzz(originals, args.count, args.seed)
    return result.report(f"{args.count} mutations of {', '.join(sorted(originals))} (seed {args.seed}) in "
                         f"{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    sys.exit(main())
