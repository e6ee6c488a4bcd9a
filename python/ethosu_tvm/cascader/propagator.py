"""Propagators: which region of an input an output stripe needs, as an augmented affine matrix plus an offset.

For input axis i with the linear row a_i (over the output axes), constant c_i and offset o_i, an output stripe of
shape s at offset p needs the input stripe

    shape_i  = ceil(a_i · s + c_i)        extent_i = ceil(a_i · extent + c_i)
    offset_i = floor(a_i · p + o_i)       stride_i = a_i · stride

That is the augmented matrix [[a, c], [0, 1]] applied to (s, 1). The constant holds the halo: a window of K taps
at dilation d and stride t gives a_i = t and c_i = (K − 1)·d + 1 − t. An axis read in full (a reduction axis such
as conv input channels) has a_i = 0 and c_i = its size. The offset holds where the window starts (−padding).

Rows are *axis-separable*: each input axis follows at most one output axis, with a coefficient > 0. That is what
lets the input stripes form a grid with the same counts and loop order as the output grid, and it holds for
every NPU primitive. Coefficients are ints, or unit fractions 1/m for a channel multiplier (output channel o reads
input channel o // m); ceil/floor then give the exact region for stripes starting at multiples of m.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from .stripe_config import Exact, StripeConfig, exact


@dataclass(frozen=True)
class Propagator:
    """`transform`: (in_dims + 1) × (out_dims + 1) augmented matrix; `offset`: in_dims start offsets.

    Hashable and compared exactly, so derived and hand-written propagators can be checked for equality.
    """

    transform: tuple[tuple[Exact, ...], ...]
    offset: tuple[Exact, ...]

    def __post_init__(self):
        rows = tuple(tuple(exact(v) for v in row) for row in self.transform)
        offset = tuple(exact(v) for v in self.offset)
        object.__setattr__(self, "transform", rows)
        object.__setattr__(self, "offset", offset)
        if not rows or len({len(r) for r in rows}) != 1 or len(rows[0]) < 1:
            raise ValueError(f"transform must be a non-empty rectangular matrix: {rows}")
        out_dims = len(rows[0]) - 1
        if rows[-1] != (0,) * out_dims + (1,):
            raise ValueError(f"the last row of an augmented matrix must be (0, ..., 0, 1): {rows[-1]}")
        if len(offset) != len(rows) - 1:
            raise ValueError(f"offset has {len(offset)} entries for {len(rows) - 1} input axes")
        for row in rows[:-1]:
            linear = [v for v in row[:-1] if v != 0]
            if len(linear) > 1 or any(v < 0 for v in linear):
                raise ValueError(f"row {row} is not axis-separable (one output axis, positive coefficient)")

    @classmethod
    def affine(
        cls, linear: Sequence[Sequence[Exact]], constant: Sequence[Exact], offset: Sequence[Exact]
    ) -> Propagator:
        """Build from the linear part (in_dims × out_dims), the constant column and the offsets."""
        out_dims = len(linear[0]) if linear else 0
        rows = [tuple(row) + (c,) for row, c in zip(linear, constant, strict=True)]
        return cls(tuple(rows) + ((0,) * out_dims + (1,),), tuple(offset))

    @classmethod
    def identity(cls, ndim: int) -> Propagator:
        eye = [[int(i == j) for j in range(ndim)] for i in range(ndim)]
        return cls.affine(eye, (0,) * ndim, (0,) * ndim)

    @property
    def in_dims(self) -> int:
        return len(self.transform) - 1

    @property
    def out_dims(self) -> int:
        return len(self.transform[0]) - 1

    @property
    def dependencies(self) -> tuple[int | None, ...]:
        """For each input axis, the output axis it follows, or None when it is read whole whatever the stripe."""
        deps = []
        for row in self.transform[:-1]:
            deps.append(next((j for j, v in enumerate(row[:-1]) if v != 0), None))
        return tuple(deps)

    def propagate(self, config: StripeConfig) -> StripeConfig:
        """The input StripeConfig that the output `config` needs (see the module docstring for the formulas).

        The result is NOT clamped to the input tensor: with padding it starts before 0 or ends past the tensor.
        Clamping here would make composition depend on tensor sizes and lose the grid structure (the first and
        last stripes would differ in shape); instead count what lies inside with `stripe_counts(within=shape)`.
        """
        if config.ndim != self.out_dims:
            raise ValueError(f"propagator takes {self.out_dims} axes, the stripe config has {config.ndim}")
        shape, extent, strides, order, stripes, offset = [], [], [], [], [], []
        for row, start, dep in zip(self.transform, self.offset, self.dependencies):
            linear, const = row[:-1], row[-1]
            shape.append(math.ceil(_dot(linear, config.shape) + const))
            extent.append(math.ceil(_dot(linear, config.extent) + const))
            strides.append(_dot(linear, config.strides))
            offset.append(math.floor(_dot(linear, config.offset) + start))
            stripes.append(1 if dep is None else config.stripes[dep])
            order.append(0 if dep is None else config.order[dep])
        return StripeConfig(tuple(shape), tuple(extent), tuple(strides), tuple(order), tuple(stripes), tuple(offset))

    def rereads(self, config: StripeConfig) -> int:
        """How many output stripes share each input stripe: the stripes along output axes no input axis follows.

        E.g. splitting a conv's output channels makes every depth stripe read the same input region again; the
        propagated config cannot show that (it has no such axis), so traffic estimates multiply by this.
        """
        followed = {d for d in self.dependencies if d is not None}
        return math.prod(n for axis, n in enumerate(config.stripes) if axis not in followed)

    def then(self, upstream: Propagator) -> Propagator:
        """The propagator of a chain: `self` maps an output to a tensor, `upstream` maps that tensor onwards.

        The matrices multiply (upstream · self), so a chain costs one propagation however long it is. Rounding
        happens once instead of after every step; that is exact when self's rows are integral, and when
        upstream follows a fractional axis with a coefficient 1/n and integral constant and offset (nested
        ceil/floor by integers collapse). Any other chain is refused rather than silently under-estimated.
        """
        if upstream.out_dims != self.in_dims:
            raise ValueError(f"cannot chain: upstream takes {upstream.out_dims} axes, this gives {self.in_dims}")
        fractional = {
            k for k, (row, start) in enumerate(zip(self.transform, self.offset))
            if any(isinstance(v, Fraction) for v in row + (start,))
        }
        for row, start, dep in zip(upstream.transform, upstream.offset, upstream.dependencies):
            if dep in fractional and (
                Fraction(row[dep]).numerator != 1 or isinstance(row[-1], Fraction) or isinstance(start, Fraction)
            ):
                raise ValueError(f"chaining through a fractional axis with row {row} would not be exact")
        rows = [
            [_dot(up_row, [self.transform[k][j] for k in range(self.in_dims + 1)]) for j in range(self.out_dims + 1)]
            for up_row in upstream.transform
        ]
        offset = [_dot(up_row[:-1], self.offset) + start for up_row, start in zip(upstream.transform, upstream.offset)]
        return Propagator(tuple(tuple(r) for r in rows), tuple(offset))


def compose(propagators: Sequence[Propagator]) -> Propagator:
    """Chain propagators listed from the output end: compose([p_out, p_mid, ...]) = p_out.then(p_mid).then(...)."""
    if not propagators:
        raise ValueError("compose needs at least one propagator")
    result = propagators[0]
    for upstream in propagators[1:]:
        result = result.then(upstream)
    return result


def _dot(row: Sequence[Exact], values: Sequence[Exact]) -> Exact:
    """The exact dot product; in plain ints when both are (most propagators), as Fraction arithmetic is slow."""
    if all(type(v) is int for v in row) and all(type(v) is int for v in values):
        return sum(a * b for a, b in zip(row, values, strict=True))
    return exact(sum((Fraction(a) * b for a, b in zip(row, values, strict=True)), Fraction(0)))
