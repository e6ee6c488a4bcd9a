"""The `tvmc` command: `tvmc compile` (TFLite → MLF tarball), `tvmc run` (the tarball's C on this PC, NPU work
in the simulator) and `tvmc micro create-project` (a firmware project around the tarball), with the flags old TVM's
tvmc had for this flow.

Every user error is one line on stderr, `tvmc: error: ...`, and exit status 2; nothing is left half-written.
"""
from __future__ import annotations

import argparse
import os
import sys

from . import compile_command, micro_command, run_command
from .errors import CommandError, one_line, user_errors


class _Parser(argparse.ArgumentParser):
    """argparse, with its two-line usage errors turned into our one-line form."""

    def error(self, message: str):
        raise CommandError(message)


def parser() -> argparse.ArgumentParser:
    top = _Parser(prog="tvmc", description="ethosu-tvm: compile quantized TFLite models for Cortex-M + Ethos-U55")
    commands = top.add_subparsers(dest="command", metavar="{compile,run,micro}", parser_class=_Parser)
    compile_command.add_parser(commands)
    run_command.add_parser(commands)
    micro_command.add_parser(commands)
    return top


def main(argv: list[str] | None = None) -> int:
    top = parser()
    try:
        with user_errors():
            argv, target_flags = compile_command.split_target_flags(sys.argv[1:] if argv is None else list(argv))
            args = top.parse_args(argv)
            args.target_flags = target_flags
            if args.command is None:
                top.print_help()
                return 0
            return args.handler(args)
    except CommandError as err:
        print(f"tvmc: error: {err}", file=sys.stderr)
        return 2
    except Exception as err:  # a bug: one line by default, the traceback on request
        if os.environ.get("ETHOSU_TVM_DEBUG"):
            raise
        print(f"tvmc: internal error: {type(err).__name__}: {one_line(err)} (set ETHOSU_TVM_DEBUG=1 for the "
              "traceback)", file=sys.stderr)
        return 1
