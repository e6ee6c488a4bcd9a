"""Turning the library's typed errors into `tvmc: error: <one line>` (exit status 2)."""
from __future__ import annotations

import contextlib


class CommandError(Exception):
    """A user error the command reports in one line."""


def _user_error_types() -> tuple[type, ...]:
    from ..build_config import BuildError
    from ..codegen import CascaderError
    from ..frontend.errors import ModelImportError
    from ..frontend.tflite_file import ModelFormatError
    from ..host import UnsupportedHostOp
    from ..memory import PlanDoesNotFit
    from ..output_files import OutputPathError
    from ..run.host_program import RunError
    from ..target import TargetError

    return (BuildError, CascaderError, ModelImportError, ModelFormatError, UnsupportedHostOp, PlanDoesNotFit,
            OutputPathError, RunError, TargetError)


def one_line(err: BaseException) -> str:
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    return lines[0] if lines else type(err).__name__


@contextlib.contextmanager
def user_errors():
    """Re-raise known user errors as CommandError; anything else is a bug and keeps its traceback."""
    try:
        yield
    except CommandError:
        raise
    except _user_error_types() as err:
        raise CommandError(one_line(err)) from None
