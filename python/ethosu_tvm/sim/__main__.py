"""Command line: `python -m ethosu_tvm.sim {disasm,stats,bench}`.

FILE may be a Vela-compiled `.tflite`, a COP1 driver payload or a raw register stream (little-endian words).
Errors are reported as one line on stderr with exit status 2.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ..arch import ACCELERATORS, find_accelerator
from ..arch.system import DEFAULT_MEMORY_MODE, DEFAULT_SYSTEM_CONFIG, MEMORY_MODES, SYSTEM_CONFIGS
from .errors import SimulatorError
from .payload import bytes_to_words, is_driver_payload, parse_driver_payload

_TFLITE_MAGIC = b"TFL3"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):
        raise _UsageError(message)


class _UsageError(Exception):
    pass


def _accelerator_name(name: str) -> str:
    try:
        return find_accelerator(name).name
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _accelerator_for(stream: bytes, requested: str | None) -> str:
    """The requested accelerator, else the one a driver payload names, else ethos-u55-128."""
    if requested:
        return requested
    if is_driver_payload(stream):
        payload = parse_driver_payload(bytes_to_words(stream))
        for name, config in ACCELERATORS.items():
            if (config.product_number, config.total_macs) == (payload.product, payload.macs_per_cycle):
                return name
    return "ethos-u55-128"


def _load(path: str) -> tuple[bytes, bytes | None]:
    """(command stream, whole model if FILE is a .tflite)."""
    data = Path(path).read_bytes()
    if data[4:8] == _TFLITE_MAGIC:
        from .vela_tflite import parse

        return parse(data).command_stream, data
    if not data:
        raise SimulatorError(f"{path} is empty")
    return data, None


def _disasm(args) -> str:
    from .disasm import disassemble
    from .simulator import Simulator

    stream, _ = _load(args.file)
    simulator = Simulator(_accelerator_for(stream, args.accelerator))
    kind = "driver payload" if is_driver_payload(stream) else "raw stream"
    lines = disassemble(simulator.commands(stream))
    return "\n".join([f"; {args.file}: {kind} for {simulator.accelerator.name}, {len(lines)} lines"] + lines)


def _stats(args) -> str:
    from . import stats
    from .simulator import Simulator
    from .vela_tflite import parse, run, seeded_inputs

    from ..arch.system import find_system

    stream, model = _load(args.file)
    name = _accelerator_for(stream, args.accelerator)
    system = find_system(args.system_config, args.memory_mode)
    if model is not None:
        result = run(model, seeded_inputs(parse(model), args.seed), name, system)[1]
        note = f"executed on seeded random inputs (seed {args.seed})"
    else:
        result = stats.estimate(Simulator(name).commands(stream), find_accelerator(name), system)
        note = "not executed (no memory contents): traffic derived from the registers"
    return f"; {args.file}: {note}\n{result.table()}"


def _bench(args) -> str:
    from ..testing import shared_models_dir
    from .bench import bench, format_results

    models = Path(args.models) if args.models else shared_models_dir()
    return format_results(bench(models, args.accelerator or ["ethos-u55-128"], args.repeat))


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(prog="python -m ethosu_tvm.sim", description="Ethos-U55/U65 simulator tools")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    disasm = commands.add_parser("disasm", help="list the commands of a stream with decoded fields")
    disasm.add_argument("file")
    disasm.add_argument("--accelerator", type=_accelerator_name,
                        help="default: from the driver payload, else ethos-u55-128")
    stats = commands.add_parser("stats", help="per-operation statistics and cycle estimates")
    stats.add_argument("file")
    stats.add_argument("--accelerator", type=_accelerator_name,
                       help="default: from the driver payload, else ethos-u55-128")
    stats.add_argument("--seed", type=int, default=0, help="input seed when FILE is a .tflite")
    stats.add_argument("--system-config", default=DEFAULT_SYSTEM_CONFIG, choices=list(SYSTEM_CONFIGS),
                       help="the system whose clock and bandwidths the cycle estimate assumes (default: %(default)s)")
    stats.add_argument("--memory-mode", default=DEFAULT_MEMORY_MODE, choices=list(MEMORY_MODES),
                       help="constants in flash or DRAM (Shared_Sram), or SRAM (Sram_Only), or feature maps too in "
                            "DRAM with a fast scratch in SRAM (Dedicated_Sram); default: %(default)s")
    bench = commands.add_parser("bench", help="time the simulation of the Vela-compiled MLPerf Tiny models")
    bench.add_argument("--models", help="folder of the shared models (default: $ETHOSU_TVM_MODELS or ../shared)")
    bench.add_argument("--accelerator", action="append", type=_accelerator_name,
                       help="repeatable; default ethos-u55-128")
    bench.add_argument("--repeat", type=_positive, default=5, help="timed runs after a first, warm-up run")
    try:
        args = parser.parse_args(argv)
        print({"disasm": _disasm, "stats": _stats, "bench": _bench}[args.command](args))
    except BrokenPipeError:  # the reader went away (e.g. `| head`): not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (_UsageError, SimulatorError, ValueError, OSError, RuntimeError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except Exception as err:  # still one line: a CLI user gets no traceback, whatever the input does
        print(f"error: unexpected {type(err).__name__}: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
