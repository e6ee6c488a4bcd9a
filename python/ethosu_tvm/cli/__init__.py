"""The `tvmc` command (placeholder until the compiler lands: it prints help and never pretends to compile)."""
from __future__ import annotations

import argparse


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tvmc", description="ethosu-tvm: Ethos-U55 compiler (work in progress)")
    parser.add_argument("command", nargs="?", choices=["compile", "run"], help="not available yet")
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    parser.exit(2, f"tvmc: '{args.command}' is not implemented yet in this version of ethosu-tvm\n")
    return 2
