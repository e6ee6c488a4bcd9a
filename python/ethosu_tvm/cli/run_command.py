"""`tvmc run OUT.tar --inputs in.npz --outputs out.npz [--print-top N] [--debug-layers DIR]`: the tarball's C built
with the host gcc, NPU launches executed by the simulator; with --debug-layers, a debug build that also dumps every
materialised intermediate tensor (ethosu_tvm.debug_layers)."""
from __future__ import annotations

import io
import sys
import tempfile
from pathlib import Path

import numpy as np

from .. import collector
from .errors import CommandError
from ..output_files import check_writable, write_atomically
from .files import add_input_arguments, model_inputs, read_mlf


def add_parser(commands) -> None:
    parser = commands.add_parser("run", help="run a compiled MLF tarball on this PC (NPU work in the simulator)",
                                 description="Build the MLF's C with gcc and run it once.")
    parser.add_argument("module", help="the MLF tarball from tvmc compile")
    add_input_arguments(parser)
    parser.add_argument("-o", "--outputs", metavar="OUT.npz", help="write the outputs, by model output name")
    parser.add_argument("--print-top", type=int, metavar="N", help="print the N largest values of each output")
    parser.add_argument("--debug-layers", metavar="DIR",
                        help="write every intermediate tensor the program materialises to DIR (.npy files and "
                             "index.json, by TFLite tensor name); needs a tarball from tvmc compile --debug-info")
    parser.add_argument("--device", default="cpu", choices=["cpu"], help="only cpu (this PC)")
    parser.set_defaults(handler=run)


def _top(name: str, values: np.ndarray, count: int) -> str:
    flat = values.reshape(-1)
    order = np.argsort(-flat.astype(np.int64), kind="stable")[:count]
    return f"{name}: top {len(order)}: " + ", ".join(f"[{int(i)}] {int(flat[i])}" for i in order)


def _debug_map(mlf: Path, module: str):
    from ..debug_layers import DEBUG_MAP_PATH, from_json

    if not (mlf / DEBUG_MAP_PATH).is_file():
        raise CommandError(f"{module} has no layer-dump map ({DEBUG_MAP_PATH}); compile it with tvmc compile "
                           "--debug-info")
    try:
        return from_json((mlf / DEBUG_MAP_PATH).read_text())
    except (ValueError, KeyError, TypeError):
        raise CommandError(f"{module}: its {DEBUG_MAP_PATH} is not one this version reads; compile it again with "
                           "tvmc compile --debug-info") from None


def _run_dumping(program, inputs, tensors, directory: Path) -> dict[str, np.ndarray]:
    from ..debug_layers import run_dumping, write_dump

    outputs, dumped = run_dumping(program, inputs, tensors)
    try:
        write_dump(directory, tensors, dumped)
    except OSError as err:
        raise CommandError(f"--debug-layers {directory}: cannot write ({err.strerror})") from None
    print(f"Wrote {len(tensors)} intermediate tensors to {directory}")
    return outputs


def _hidden_note(hidden: tuple[int, ...]) -> None:
    """Say on stderr that the dump lacks operators a debug build would give (one line)."""
    if hidden:
        outputs = f"{len(hidden)} operators' outputs are" if len(hidden) > 1 else "1 operator's output is"
        print(f"tvmc run: {outputs} not in the dump (kept inside NPU launches); tvmc compile --debug-split-launches "
              "gives them all", file=sys.stderr)


def run(args) -> int:
    from ..run.host_program import HostProgram

    collector.resume()

    if args.outputs:
        check_writable(Path(args.outputs))
    if args.debug_layers and Path(args.debug_layers).exists() and not Path(args.debug_layers).is_dir():
        raise CommandError(f"--debug-layers {args.debug_layers}: not a directory")
    with tempfile.TemporaryDirectory(prefix="tvmc_run_") as tmp:
        root = Path(tmp)
        interface = read_mlf(args.module, root / "mlf")
        inputs = model_inputs(args, interface)
        tensors, hidden = _debug_map(root / "mlf", args.module) if args.debug_layers else (None, ())
        program = HostProgram(root / "mlf", root, debug=bool(args.debug_layers))
        if args.debug_layers:
            outputs = _run_dumping(program, inputs, tensors, Path(args.debug_layers))
            _hidden_note(hidden)
        else:
            outputs = program.run(inputs)
    if program.stats:
        print(f"NPU: {len(program.stats)} launches on {interface.accelerator}, estimated {program.npu_cycles} cycles "
              f"({interface.system.config.name}, {interface.system.memory_mode})")
    for name, values in outputs.items():
        print(_top(name, values, args.print_top) if args.print_top else f"{name}: {values.dtype} {list(values.shape)}")
    if args.outputs:
        buffer = io.BytesIO()
        np.savez(buffer, **outputs)
        write_atomically(Path(args.outputs), buffer.getvalue())
    return 0
