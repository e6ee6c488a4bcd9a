"""Reading the user's input files with one-line errors: inputs, .npz arrays, MLF tarballs."""
from __future__ import annotations

import io
import tarfile
from pathlib import Path

import numpy as np

from .errors import CommandError


def read_input_file(path: str, what: str) -> bytes:
    file = Path(path)
    if not file.exists():
        raise CommandError(f"{what} file {path} does not exist")
    if not file.is_file():
        raise CommandError(f"{what} {path} is not a file")
    try:
        return file.read_bytes()
    except OSError as err:
        raise CommandError(f"cannot read {what} {path}: {err.strerror}") from None


def read_mlf(module: str, directory: Path):
    """Extract the tarball `module` into `directory`; the model's interface (a ModelInterface)."""
    from ..aot.interface import INTERFACE_PATH, ModelInterface

    read_input_file(module, "module")
    try:
        with tarfile.open(module) as tar:
            tar.extractall(directory, filter="data")
    except (tarfile.TarError, OSError):
        raise CommandError(f"{module} is not a readable MLF tarball") from None
    if not (directory / INTERFACE_PATH).is_file():
        raise CommandError(f"{module} is not an MLF tarball from ethosu-tvm (no {INTERFACE_PATH})")
    try:
        return ModelInterface.from_json((directory / INTERFACE_PATH).read_text())
    except (ValueError, KeyError) as err:
        raise CommandError(f"{module}: its {INTERFACE_PATH} cannot be read: {err}") from None


def add_input_arguments(parser) -> None:
    parser.add_argument("--inputs", metavar="IN.npz", help="input arrays by model input name (default: --fill-mode)")
    parser.add_argument("--fill-mode", default="random", choices=["random", "zeros", "ones"],
                        help="inputs to use when --inputs is not given (random: seeded, reproducible; N(0, 1) for "
                             "float32 inputs)")


def model_inputs(args, interface) -> dict[str, np.ndarray]:
    """The arrays of --inputs, or made as --fill-mode says, by model input name."""
    if args.inputs:
        try:
            with np.load(io.BytesIO(read_input_file(args.inputs, "inputs"))) as data:
                return {name: data[name] for name in data.files}
        except (ValueError, OSError) as err:
            raise CommandError(f"{args.inputs} is not a NumPy .npz file ({err})") from None
    rng = np.random.default_rng(0)
    arrays = {}
    for field in interface.inputs:
        if args.fill_mode == "random" and np.dtype(field.dtype).kind == "f":  # a float32 input: N(0, 1)
            arrays[field.name] = rng.standard_normal(size=field.shape).astype(field.dtype)
        elif args.fill_mode == "random":
            info = np.iinfo(field.dtype)
            arrays[field.name] = rng.integers(info.min, info.max + 1, size=field.shape, dtype=field.dtype)
        else:
            arrays[field.name] = np.full(field.shape, 0 if args.fill_mode == "zeros" else 1, dtype=field.dtype)
    return arrays
