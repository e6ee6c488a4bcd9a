"""A matched pattern's sub-expressions by role, from a fusion check context or from a composite function."""
from __future__ import annotations

from dataclasses import dataclass

from tvm import relax

from .patterns import CompositePattern
from .values import bound_values


@dataclass(frozen=True)
class Match:
    """The expressions a pattern bound to its role names; optional roles that did not match are absent."""

    kind: str
    roles: dict[str, relax.Expr]

    def __getitem__(self, role: str) -> relax.Expr:
        return self.roles[role]

    def get(self, role: str) -> relax.Expr | None:
        return self.roles.get(role)


def match_from_context(pattern: CompositePattern, ctx) -> Match:
    """Roles from FuseOpsByPattern's PatternCheckContext."""
    roles = {name: ctx.annotated_expr[name] for name in pattern.annotations if name in ctx.annotated_expr}
    return Match(pattern.kind, roles)


def match_composite(func: relax.Function, patterns: list[CompositePattern]) -> Match:
    """Re-match a composite function's body with the pattern named by its ``Composite`` attribute, one of
    `patterns`."""
    name = str(func.attrs["Composite"])
    pattern = next(p for p in patterns if p.name == name)
    var2val = bound_values(func)
    output = func.body.body
    while isinstance(output, relax.Var) and output in var2val:
        output = var2val[output]
    matched = pattern.pattern.extract_matched_expr(output, var2val)
    if matched is None:
        raise ValueError(f"composite {name} no longer matches its pattern")
    roles = {role: matched[pat] for role, pat in pattern.annotations.items() if pat in matched}
    return Match(pattern.kind, roles)
