"""`tvmc compile MODEL.tflite --target=... --output-format mlf -o OUT.tar`."""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
from pathlib import Path

from . import pool_options
from .. import collector
from .errors import CommandError
from ..output_files import check_writable, write_atomically
from .files import read_input_file
from .progress import StageDisplay
from ..target import KIND_OPTIONS, format_target_list, parse_target_list

# Old tvmc per-target flags: --target-<kind>-<option>=value or --target-<kind>-<option> value, names with '_' or '-'.
_TARGET_FLAG = re.compile(rf"--target-({'|'.join(map(re.escape, KIND_OPTIONS))})-([\w-]+)(?:=(.*))?$")
_ACCEPTED = {"executor": ("aot",), "runtime": ("crt",), "output_format": ("mlf",), "model_format": ("tflite",)}


def add_parser(commands) -> None:
    parser = commands.add_parser("compile", help="compile a TFLite model to a Model Library Format tarball",
                                 description="Compile a quantized TFLite model for Cortex-M + Ethos-U55.")
    parser.add_argument("model", help="the .tflite model")
    parser.add_argument("--target", required=True,
                        help='comma-separated targets, e.g. "ethos-u -accelerator-config=ethos-u55-128",c')
    parser.add_argument("-o", "--output", default="module.tar", help="the MLF tarball to write (module.tar)")
    parser.add_argument("-f", "--output-format", default="mlf", help="only mlf")
    parser.add_argument("--model-format", default="tflite", help="only tflite")
    parser.add_argument("--executor", default="aot", help="only aot")
    parser.add_argument("--executor-aot-interface-api", default="c", choices=["c"], help="only c")
    parser.add_argument("--executor-aot-unpacked-api", default="1", choices=["1", "true"], help="only 1")
    parser.add_argument("--runtime", default="crt", help="only crt")
    parser.add_argument("--pass-config", action="append", default=[], metavar="KEY=VALUE",
                        help="e.g. tir.usmp.algorithm=hill_climb (repeatable)")
    parser.add_argument("--memory-planner", help="greedy_by_size, greedy_by_conflicts, hill_climb, exact or auto")
    pool_options.add_arguments(parser)
    parser.add_argument("--cascader-sram-limit", type=_bytes, metavar="BYTES",
                        help="NPU scratch the cascader may use (default: the NPU pool's size hint); needs "
                             "-enable-cascader=1 in the ethos-u target")
    parser.add_argument("--strip-float-io", action="store_true",
                        help="compile a model with float32 I/O without its edge QUANTIZE/DEQUANTIZE operators: the"
                             " compiled model takes and gives their int8/int16 tensors")
    parser.add_argument("--dump-offloads", metavar="FILE.json", help="write where each operator runs, and why")
    parser.add_argument("--dump-memory-plan", metavar="FILE.svg|FILE.png", help="draw the memory plan")
    parser.add_argument("--dump-per-layer", metavar="FILE.csv",
                        help="write one row per TFLite operator: what it became, MACs, estimated cycles, traffic")
    parser.add_argument("--debug-info", action="store_true",
                        help="add the layer-dump map (src/debug_layers.json) that tvmc run --debug-layers reads")
    parser.add_argument("--debug-split-launches", action="store_true",
                        help="a debug build: every NPU operator a launch of its own, so that tvmc run --debug-layers "
                             "dumps every operator's output (same results, not the default build's command streams); "
                             "implies --debug-info; needs an ethos-u target")
    parser.add_argument("-v", "--verbose", action="store_true", help="also print the per-layer table")
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="print nothing but errors (no stage display, summary or 'Wrote' line)")
    parser.set_defaults(handler=run)


def _bytes(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"expected a number of bytes, got {text!r}")
    return int(text)


def split_target_flags(argv: list[str]) -> tuple[list[str], dict[str, dict[str, str]]]:
    """Pull --target-<kind>-<option> flags and their values out of argv (argparse cannot declare them all up
    front); raises CommandError for a --target-* flag of no known kind or without a value."""
    rest, options = [], {}
    args = iter(argv)
    for arg in args:
        match = _TARGET_FLAG.match(arg)
        if match:
            kind, option, value = match.groups()
            value = next(args, None) if value is None else value
            if value is None or value.startswith("-"):
                raise CommandError(f"{arg} needs a value, e.g. {arg}=VALUE")
            options.setdefault(kind, {})[option.replace("_", "-")] = value
        elif arg.startswith("--target-"):
            raise CommandError(f"unknown target kind in {arg.partition('=')[0]}; valid: "
                               + ", ".join(f"--target-{kind}-<option>" for kind in KIND_OPTIONS))
        else:
            rest.append(arg)
    return rest, options


def merge_target(target: str, flags: dict[str, dict[str, str]]) -> str:
    """Append --target-<kind>-* options to the matching entry of the target list."""
    targets = parse_target_list(target)
    for kind, options in flags.items():
        entry = next((t for t in targets if t["kind"] == kind), None)
        if entry is None:
            raise CommandError(f"--target-{kind}-{next(iter(options))} given, but {kind} is not in --target")
        entry.update(options)
    return format_target_list(targets)


def _pass_config(items: list[str]) -> dict[str, str]:
    config = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise CommandError(f"--pass-config takes KEY=VALUE, got {item!r}")
        config[key.strip()] = value.strip()
    return config


def run(args) -> int:
    from ..build_module import build
    from ..frontend.importer import from_tflite
    from ..frontend.tflite_file import ModelFormatError
    from ..memory import plan_to_png, plan_to_svg

    collector.resume()

    for option, accepted in _ACCEPTED.items():
        value = getattr(args, option)
        if value not in accepted:
            raise CommandError(f"--{option.replace('_', '-')} {value!r} is not supported; use {accepted[0]}")
    target = merge_target(args.target, args.target_flags)
    pools = pool_options.workspace_pools(args)
    if args.dump_memory_plan and Path(args.dump_memory_plan).suffix.lower() not in (".svg", ".png"):
        raise CommandError(f"--dump-memory-plan writes .svg or .png files, got {args.dump_memory_plan}")
    if args.quiet and args.verbose:
        raise CommandError("-q and -v cannot be combined")
    dumps = (args.dump_offloads, args.dump_memory_plan, args.dump_per_layer)
    outputs = [Path(args.output)] + [Path(p) for p in dumps if p]
    for path in outputs:
        check_writable(path)
    data = read_input_file(args.model, "model")
    display = None if args.quiet else StageDisplay(sys.stderr)
    with display or contextlib.nullcontext():
        if display is not None:
            display(f"frontend: importing {args.model}")
        try:
            mod = from_tflite(data, strip_float_io=args.strip_float_io)
        except ModelFormatError as err:
            raise CommandError(f"{args.model} is not a valid TFLite model: {err}") from None
        module = build(mod, target=target, pass_config=_pass_config(args.pass_config),
                       memory_planner=args.memory_planner, workspace_pools=pools,
                       use_workspace_io=args.use_workspace_io, cascader_sram_limit=args.cascader_sram_limit,
                       split_launches=args.debug_split_launches, progress=display)
    if not args.quiet:
        print(module.summary())
    if args.dump_per_layer or args.verbose:
        from ..layer_report import layer_rows, to_csv, to_table

        rows = layer_rows(module)
        if args.verbose:
            print(to_table(rows))
        if args.dump_per_layer:
            write_atomically(Path(args.dump_per_layer), to_csv(rows))
    if args.dump_offloads:
        report = {"accelerator": module.offload.accelerator,
                  "ops": [{"index": e.index, "op": e.op, "target": e.target, "reason": e.reason,
                           **({"library": e.library, "library_reason": e.library_reason} if e.library else {})}
                          for e in module.offload.ops]}
        write_atomically(Path(args.dump_offloads), json.dumps(report, indent=2) + "\n")
    if args.dump_memory_plan:
        draw = plan_to_png if args.dump_memory_plan.lower().endswith(".png") else plan_to_svg
        write_atomically(Path(args.dump_memory_plan), draw(module.workspace.plan))
    module.export_model_library_format(args.output, debug_info=args.debug_info or args.debug_split_launches)
    if not args.quiet:
        print(f"Wrote {args.output} ({os.path.getsize(args.output)} bytes)")
    return 0
