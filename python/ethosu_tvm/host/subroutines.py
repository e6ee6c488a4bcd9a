"""Scalar helper functions as TIR subroutines: `static inline` C functions that a kernel's expressions call.

Fixed-point primitives (rounding multiplies, exp, reciprocal) are written once as small PrimFuncs with named
intermediate values, and kernels call them by GlobalVar; TVM's C backend emits them as functions, which the C
compiler inlines. (Expanding them into a kernel's expressions instead repeats shared subexpressions, which grows
exponentially through nested primitives.) Helpers are created per kernel under the kernel's name as prefix, so
the C of several kernels can share one translation unit.
"""
from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass, field
from typing import Callable, Iterator

import tvm
from tvm import tirx
from tvm.ir import Expr


@dataclass
class _Scope:
    prefix: str
    global_vars: dict[str, tvm.ir.GlobalVar] = field(default_factory=dict)
    functions: dict[tvm.ir.GlobalVar, tirx.PrimFunc] = field(default_factory=dict)


HELPER_ATTR = "ethosu_tvm.helper"  # marks helper PrimFuncs
_SCOPE: contextvars.ContextVar[_Scope] = contextvars.ContextVar("ethosu_tvm_host_subroutines")


@contextlib.contextmanager
def subroutine_scope(prefix: str) -> Iterator[dict[tvm.ir.GlobalVar, tirx.PrimFunc]]:
    """Collect the helpers called while the block runs; yields them (GlobalVar -> PrimFunc) in creation order."""
    token = _SCOPE.set(_Scope(prefix))
    try:
        yield _SCOPE.get().functions
    finally:
        _SCOPE.reset(token)


class Body:
    """The statements of a helper under construction: `let` names an intermediate value."""

    def __init__(self) -> None:
        self.statements: list[tirx.Stmt] = []

    def let(self, name: str, value: Expr) -> tirx.Var:
        var = tirx.Var(name, str(value.ty.dtype))
        self.statements.append(tirx.Bind(var, value))
        return var


def _as_expr(value, dtype: str) -> Expr:
    """A Python number as a constant, an expression cast (if need be) to `dtype`."""
    return tirx.const(value, dtype) if isinstance(value, (int, bool)) else value.astype(dtype)


def scalar_function(returns: str, **params: str) -> Callable:
    """Decorate `build(body, *param_vars) -> result` into a function that emits a call to that helper.

    The helper is built the first time a kernel calls it, inside that kernel's `subroutine_scope`.
    """

    def decorate(build: Callable[..., Expr]) -> Callable[..., Expr]:
        name = build.__name__.lstrip("_")

        def define(scope: _Scope) -> tvm.ir.GlobalVar:
            global_var = tvm.ir.GlobalVar(f"{scope.prefix}_{name}")
            scope.global_vars[name] = global_var
            args = [tirx.Var(param, dtype) for param, dtype in params.items()]
            lets = Body()
            # returning a named value keeps C temporaries (for min/max operands) out of the return statement
            result = lets.let("result", _as_expr(build(lets, *args), returns))
            body = tirx.SeqStmt(lets.statements + [tirx.Return(result)])
            function = tirx.PrimFunc(args, body, ret_type=tvm.ir.PrimType(returns))
            scope.functions[global_var] = function.with_attr(HELPER_ATTR, True)
            return global_var

        def call(*args) -> Expr:
            scope = _SCOPE.get(None)
            if scope is None:
                raise RuntimeError(f"{name}: helpers are called while a kernel is defined, in a subroutine_scope")
            global_var = scope.global_vars.get(name) or define(scope)
            return tvm.ir.Call(global_var, [_as_expr(a, d) for a, d in zip(args, params.values())], ret_ty=returns)

        call.__name__ = call.__qualname__ = build.__name__
        call.__doc__ = build.__doc__
        return call

    return decorate
