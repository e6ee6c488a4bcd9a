"""Writing output files so that a failure never leaves a partial file: checked up front, replaced atomically."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path


class OutputPathError(OSError):
    """An output file cannot be written where the user asked; the message says why in one line."""


def check_writable(path: Path) -> None:
    """Fail before any work when `path` cannot be written (missing or read-only directory, a directory)."""
    directory = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise OutputPathError(f"cannot write {path}: it is a directory")
    if not directory.is_dir():
        raise OutputPathError(f"cannot write {path}: directory {directory} does not exist")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise OutputPathError(f"cannot write {path}: directory {directory} is not writable")


def write_atomically(path: Path, data: str | bytes) -> Path:
    """Write `data` to a temporary file beside `path`, then rename it over `path` (mode 0644)."""
    path = Path(path)
    check_writable(path)
    payload = data.encode() if isinstance(data, str) else bytes(data)
    try:
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent if str(path.parent) else ".")
    except OSError as err:
        raise OutputPathError(f"cannot write {path}: {err.strerror}") from None
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(payload)
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except OSError as err:
        Path(temporary).unlink(missing_ok=True)
        raise OutputPathError(f"cannot write {path}: {err.strerror}") from None
    return path
