#!/usr/bin/env python3
"""Robustness benchmark: every factory op compiled at extreme quantization scales (`testing.scale_sweep`) for the
NPU and for the host; each compile must be a one-line refusal or equal the reference on seeded inputs. Prints the
counts and every failure (the suite's test sweeps a few ops).

    .venv/bin/python benchmarks/scale_sweep.py [--ops OP ...] [--accelerator CONFIG]
"""
from __future__ import annotations

import argparse
import sys
import time

from ethosu_tvm.testing.models import OPS
from ethosu_tvm.testing.scale_sweep import cases, sweep


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", nargs="+", default=list(OPS), choices=OPS, metavar="OP",
                        help="factory ops to sweep (default: all)")
    parser.add_argument("--accelerator", default="ethos-u55-128")
    args = parser.parse_args(argv)
    selected = cases(args.ops)
    start = time.perf_counter()
    result = sweep(selected, (f"ethos-u -accelerator-config={args.accelerator},c", "c"))
    return result.report(f"{len(selected)} models of {len(args.ops)} ops, on {args.accelerator} and the host, in "
                         f"{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    sys.exit(main())
