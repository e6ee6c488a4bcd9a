"""How a tensor is cut into stripes, exact counting of the stripes that result, and the stripe shapes worth trying.

All numbers are exact: ints, and `fractions.Fraction` for strides that a channel multiplier made fractional. Floats
are refused, because stripe counts and buffer sizes derived from them must not drift by one element.
"""
from __future__ import annotations

import itertools
import math
import numbers
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from ..arch import round_up

Exact = int | Fraction


def exact(value) -> Exact:
    """An int, or a Fraction when it is not integral; floats and bools are refused (see the module docstring)."""
    if type(value) is int:  # the common case, without the slow check against the numbers ABCs
        return value
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, Fraction)):
        raise TypeError(f"{value!r} is not an exact number (int or fractions.Fraction)")
    if isinstance(value, Fraction):
        return int(value) if value.denominator == 1 else value
    return int(value)


def _ints(values, name: str) -> tuple[int, ...]:
    out = tuple(exact(v) for v in values)
    if any(isinstance(v, Fraction) for v in out):
        raise TypeError(f"{name} must be integers, got {out}")
    return out


@dataclass(frozen=True)
class StripeConfig:
    """A grid of equally shaped stripes over a region of a tensor, one field entry per tensor axis.

    * `shape`: the shape of one stripe (edge stripes are cut short by `extent`, see `axis_stripe_sizes`).
    * `extent`: the size of the whole region the stripes cover, starting at `offset`.
    * `strides`: the step between the starts of neighbouring stripes (int or Fraction). Overlapping stripes
      (stride < shape) are normal for inputs: neighbouring output stripes share the input halo.
    * `order`: the loop position of each axis when the stripes are visited, 1 = outermost; 0 = not iterated
      (the axis has exactly one stripe).
    * `stripes`: the number of stripes along each axis.
    * `offset`: where the first stripe starts; it may be negative (or the region may end past the tensor) when
      a propagator maps into padding; see `within` below.
    """

    shape: tuple[int, ...]
    extent: tuple[int, ...]
    strides: tuple[Exact, ...]
    order: tuple[int, ...]
    stripes: tuple[int, ...]
    offset: tuple[int, ...]

    def __post_init__(self):
        fields = {
            "shape": _ints(self.shape, "shape"),
            "extent": _ints(self.extent, "extent"),
            "strides": tuple(exact(v) for v in self.strides),
            "order": _ints(self.order, "order"),
            "stripes": _ints(self.stripes, "stripes"),
            "offset": _ints(self.offset, "offset"),
        }
        for name, value in fields.items():
            object.__setattr__(self, name, value)
        if len({len(v) for v in fields.values()}) != 1:
            raise ValueError(f"StripeConfig fields differ in length: { {k: len(v) for k, v in fields.items()} }")
        if min(self.shape + self.extent + self.order, default=0) < 0 or min(self.strides, default=0) < 0:
            raise ValueError(f"negative shape, extent, order or stride in {self}")
        if min(self.stripes, default=1) < 1:
            raise ValueError(f"every axis needs at least one stripe: {self.stripes}")
        if any(o == 0 and n != 1 for o, n in zip(self.order, self.stripes)):
            raise ValueError(f"an axis that is not iterated (order 0) must have one stripe: {self}")

    @classmethod
    def for_tensor(
        cls, tensor_shape: Sequence[int], stripe_shape: Sequence[int], order: Sequence[int] | None = None
    ) -> StripeConfig:
        """Tile a whole tensor with stripes of `stripe_shape` (clipped to the tensor), edge stripes included.

        Default order: the striped axes in axis order, the first one outermost (raster order over NHWC);
        unstriped axes get 0.
        """
        tensor_shape = _ints(tensor_shape, "tensor_shape")
        if len(stripe_shape) != len(tensor_shape):
            raise ValueError(f"stripe shape {tuple(stripe_shape)} does not match tensor shape {tensor_shape}")
        shape = tuple(max(1, min(s, t)) for s, t in zip(_ints(stripe_shape, "stripe_shape"), tensor_shape))
        stripes = tuple(max(1, -(-t // s)) for s, t in zip(shape, tensor_shape))
        if order is None:
            striped = itertools.count(1)
            order = tuple(next(striped) if n > 1 else 0 for n in stripes)
        return cls(shape, tensor_shape, shape, tuple(order), stripes, (0,) * len(shape))

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def num_stripes(self) -> int:
        return math.prod(self.stripes)

    def axis_stripe_sizes(self, axis: int, within: int | None = None) -> dict[int, int]:
        """{stripe size: how many stripes have it} along one axis.

        Stripe i spans [offset + floor(i·stride), that + shape), cut at offset + extent, so the last stripe may
        be partial. With `within`, each span is also clipped to [0, within): the part of the stripe that lies
        inside a tensor of that size, which is what is read or stored when the region runs into padding.
        Stripes that end up empty are left out.
        """
        start0, shape, stride = self.offset[axis], self.shape[axis], self.strides[axis]
        region_end = start0 + self.extent[axis]
        sizes: Counter[int] = Counter()
        for i in range(self.stripes[axis]):
            start = start0 + math.floor(i * stride)
            end = min(start + shape, region_end)
            if within is not None:
                start, end = max(start, 0), min(end, within)
            if end > start:
                sizes[end - start] += 1
        return dict(sorted(sizes.items(), reverse=True))

    def stripe_counts(self, within: Sequence[int] | None = None) -> dict[tuple[int, ...], int]:
        """{stripe shape: how many stripes have it}, over the whole grid, edge stripes included.

        The grid is a product of independent axes, so the histogram is the product of the per-axis histograms;
        this stays cheap for grids of millions of stripes. `within` (a tensor shape) clips every stripe to the
        tensor, as in `axis_stripe_sizes`. Keys run from the largest sizes on the first axis downwards.
        """
        if within is not None and len(within) != self.ndim:
            raise ValueError(f"within {tuple(within)} has {len(within)} axes, the config {self.ndim}")
        per_axis = [
            self.axis_stripe_sizes(axis, None if within is None else int(within[axis])).items()
            for axis in range(self.ndim)
        ]
        counts: dict[tuple[int, ...], int] = {}
        for combo in itertools.product(*per_axis):
            counts[tuple(size for size, _ in combo)] = math.prod(n for _, n in combo)
        return counts

    def covered_volume(self, within: Sequence[int] | None = None) -> int:
        """Σ count × volume over `stripe_counts`: elements visited, counting overlaps once per stripe."""
        return sum(n * math.prod(shape) for shape, n in self.stripe_counts(within).items())


def split_sizes(extent: int, halvings: int = 3, single: bool = True, align: int = 1) -> tuple[int, ...]:
    """Distinct stripe sizes for one axis, largest first: ceil(extent / 2^k) for k = 0..halvings, and 1 if `single`.

    Halving the extent (rather than trying power-of-two sizes such as 64, 32, ...) gives 2^k stripes of nearly
    equal size, so the edge stripe is never a sliver that pays a whole stripe's fixed cost for a few rows. The
    single row/column is the smallest possible working set (line buffering). `align` rounds each size up to a
    multiple (a hardware block size, say), capped at the extent.
    """
    if extent < 1 or halvings < 0 or align < 1:
        raise ValueError(f"split_sizes needs extent >= 1, halvings >= 0, align >= 1; got {extent}, {halvings}, {align}")
    sizes = {-(-extent // (1 << k)) for k in range(halvings + 1)}
    if single:
        sizes.add(1)
    return tuple(sorted({min(extent, round_up(s, align)) for s in sizes}, reverse=True))


def candidate_stripe_shapes(
    tensor_shape: Sequence[int],
    axes: Sequence[int] = (1, 2),
    halvings: int = 3,
    single: bool = True,
    align: Sequence[int] | None = None,
) -> list[tuple[int, ...]]:
    """Stripe shapes to try for an output tensor: `split_sizes` along `axes`, the full size on the other axes.

    The default splits H and W of an NHWC tensor and keeps the full depth and batch: cascading exists to shrink
    the spatial working set, while splitting depth would make every consumer re-read its whole input per depth
    stripe. The defaults mirror the removed TVM cascader's factors 1, 1/2, 1/4, 1/8 and "one element". The first
    shape is the whole tensor (the no-striping baseline); the order is deterministic (largest sizes first,
    earlier axes varying slowest).
    """
    tensor_shape = _ints(tensor_shape, "tensor_shape")
    align = (1,) * len(tensor_shape) if align is None else tuple(align)
    if any(not 0 <= a < len(tensor_shape) for a in axes) or len(align) != len(tensor_shape):
        raise ValueError(f"axes {tuple(axes)} / align {align} do not fit a tensor of shape {tensor_shape}")
    choices = [
        split_sizes(dim, halvings, single, align[a]) if a in axes else (dim,) for a, dim in enumerate(tensor_shape)
    ]
    return list(itertools.product(*choices))


def candidate_stripe_configs(tensor_shape: Sequence[int], **options) -> list[StripeConfig]:
    """`StripeConfig.for_tensor` for each of `candidate_stripe_shapes(tensor_shape, **options)`."""
    return [StripeConfig.for_tensor(tensor_shape, shape) for shape in candidate_stripe_shapes(tensor_shape, **options)]
