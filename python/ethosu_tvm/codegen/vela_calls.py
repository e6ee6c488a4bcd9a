"""Calls into Vela's public API: silenced (its first call prints a configuration warning) and with errors wrapped.

No Vela exception escapes: each becomes a CodegenError that names the NPU operator it was compiling.
"""
from __future__ import annotations

import contextlib
import io
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class CodegenError(RuntimeError):
    """Vela refused an operation we built; the message names the operator and Vela's reason."""


def vela_call(what: str, function: Callable[..., T], *args, **kwargs) -> T:
    """Run one Vela API function with stdout captured; `what` names the operator for error messages."""
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            return function(*args, **kwargs)
        except Exception as err:  # Vela raises asserts, ValueErrors and its own VelaError types
            raise CodegenError(f"{what}: Vela rejected the operation: {type(err).__name__}: {err}") from err


def describe(op) -> str:
    """How error messages name an NPU primitive: its kind, and the source operator it was legalized from."""
    return f"{op.op_name} ({op.source})" if op.source else op.op_name
