"""Reading the user's input files with one-line errors."""
from __future__ import annotations

from pathlib import Path

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
