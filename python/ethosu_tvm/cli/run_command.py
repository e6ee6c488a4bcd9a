"""`tvmc run OUT.tar --inputs in.npz --outputs out.npz [--print-top N]`: the tarball's C built with the host gcc,
NPU launches executed by the simulator."""
from __future__ import annotations

import io
import tarfile
import tempfile
from pathlib import Path

import numpy as np

from .errors import CommandError
from ..output_files import check_writable, write_atomically
from .files import read_input_file


def add_parser(commands) -> None:
    parser = commands.add_parser("run", help="run a compiled MLF tarball on this PC (NPU work in the simulator)",
                                 description="Build the MLF's C with gcc and run it once.")
    parser.add_argument("module", help="the MLF tarball from tvmc compile")
    parser.add_argument("--inputs", metavar="IN.npz", help="input arrays by model input name (default: --fill-mode)")
    parser.add_argument("--fill-mode", default="random", choices=["random", "zeros", "ones"],
                        help="inputs to use when --inputs is not given (random: seeded, reproducible)")
    parser.add_argument("-o", "--outputs", metavar="OUT.npz", help="write the outputs, by model output name")
    parser.add_argument("--print-top", type=int, metavar="N", help="print the N largest values of each output")
    parser.add_argument("--device", default="cpu", choices=["cpu"], help="only cpu (this PC)")
    parser.set_defaults(handler=run)


def _extract(archive: Path, directory: Path) -> None:
    try:
        with tarfile.open(archive) as tar:
            tar.extractall(directory, filter="data")
    except (tarfile.TarError, OSError):
        raise CommandError(f"{archive} is not a readable MLF tarball") from None


def _inputs(args, interface) -> dict[str, np.ndarray]:
    if args.inputs:
        try:
            with np.load(io.BytesIO(read_input_file(args.inputs, "inputs"))) as data:
                return {name: data[name] for name in data.files}
        except (ValueError, OSError) as err:
            raise CommandError(f"{args.inputs} is not a NumPy .npz file ({err})") from None
    rng = np.random.default_rng(0)
    arrays = {}
    for field in interface.inputs:
        info = np.iinfo(field.dtype)
        if args.fill_mode == "random":
            arrays[field.name] = rng.integers(info.min, info.max + 1, size=field.shape, dtype=field.dtype)
        else:
            arrays[field.name] = np.full(field.shape, 0 if args.fill_mode == "zeros" else 1, dtype=field.dtype)
    return arrays


def _top(name: str, values: np.ndarray, count: int) -> str:
    flat = values.reshape(-1)
    order = np.argsort(-flat.astype(np.int64), kind="stable")[:count]
    return f"{name}: top {len(order)}: " + ", ".join(f"[{int(i)}] {int(flat[i])}" for i in order)


def run(args) -> int:
    from ..aot.interface import INTERFACE_PATH, ModelInterface
    from ..run.host_program import HostProgram

    if args.outputs:
        check_writable(Path(args.outputs))
    read_input_file(args.module, "module")
    with tempfile.TemporaryDirectory(prefix="tvmc_run_") as tmp:
        root = Path(tmp)
        _extract(Path(args.module), root / "mlf")
        if not (root / "mlf" / INTERFACE_PATH).is_file():
            raise CommandError(f"{args.module} is not an MLF tarball from ethosu-tvm (no {INTERFACE_PATH})")
        interface = ModelInterface.from_json((root / "mlf" / INTERFACE_PATH).read_text())
        inputs = _inputs(args, interface)
        program = HostProgram(root / "mlf", root)
        outputs = program.run(inputs)
    if program.stats:
        print(f"NPU: {len(program.stats)} launches on {interface.accelerator}, estimated {program.npu_cycles} cycles")
    for name, values in outputs.items():
        print(_top(name, values, args.print_top) if args.print_top else f"{name}: {values.dtype} {list(values.shape)}")
    if args.outputs:
        buffer = io.BytesIO()
        np.savez(buffer, **outputs)
        write_atomically(Path(args.outputs), buffer.getvalue())
    return 0
