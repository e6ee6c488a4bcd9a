"""Propagators from TE computes (by iter-map analysis of their read indices) and written by hand per operator.

Deriving: for every read `producer[e_0, ..., e_n]` in a te.compute body, each index e_i is normalised by
`tvm.sym.normalize_to_iter_sum` into Σ scale·split(var) + base. It is accepted when the base is a constant, every
term is a whole loop variable (or, for an output axis, var // m, a channel multiplier), and the row depends on at
most one output axis with a positive coefficient. Reduction variables with range [0, R) widen the region by
|scale|·(R − 1) (kernel size − 1 times dilation for a convolution). normalize_to_iter_sum is used rather than
detect_iter_map because the latter's surjectivity check rejects valid affine windows such as y·2 + ry·2 (a
strided, dilated kernel), where no term has unit scale. Stages are then chained from the output back to the
input with `Propagator.then`.

Anything else (a reshape's floordiv/floormod of a flattened index, a data-dependent table lookup) raises
`NotAffineError`, and `propagator_for` falls back to the explicit definition given for the operator.

The hand-written definitions take plain parameters over NHWC tensors and know nothing about the NPU.
"""
from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

from tvm import ir, sym, te, tirx

from .propagator import Propagator

TENSOR_LOAD = "te.tensor_load"

# Expression fields that may hold sub-expressions; anything not listed here must be a known leaf.
_CHILD_FIELDS = ("a", "b", "value", "condition", "true_value", "false_value", "body", "base", "stride")
_LEAVES = (tirx.Var, tirx.IntImm, tirx.FloatImm, ir.StringImm)


class NotAffineError(ValueError):
    """The reads cannot be written as an axis-separable affine map; an explicit definition is needed."""


# ---------------------------------------------------------------------------------------------------------------
# Hand-written definitions (NHWC, 4-D).


def _window_row(axis: int, kernel: int, stride: int, dilation: int) -> tuple[list[int], int]:
    """Row of a sliding window along `axis`: stride·s + (kernel − 1)·dilation + 1 − stride input elements."""
    linear = [0, 0, 0, 0]
    linear[axis] = stride
    return linear, (kernel - 1) * dilation + 1 - stride


def _spatial(kernel, strides, dilation, padding, channel_row, channel_constant) -> Propagator:
    (kh, kw), (sh, sw), (dh, dw), (top, left) = kernel, strides, dilation, padding
    h_row, h_const = _window_row(1, kh, sh, dh)
    w_row, w_const = _window_row(2, kw, sw, dw)
    return Propagator.affine(
        [[1, 0, 0, 0], h_row, w_row, channel_row],
        [0, h_const, w_const, channel_constant],
        [0, -top, -left, 0],
    )


def conv2d_propagator(
    kernel: tuple[int, int],
    in_channels: int,
    strides: tuple[int, int] = (1, 1),
    dilation: tuple[int, int] = (1, 1),
    padding: tuple[int, int] = (0, 0),
) -> Propagator:
    """Conv2D IFM: windows over H and W; every input channel for any output stripe (it is a reduction axis).

    `padding` is (top, left): where the windows start. Bottom/right padding only sets the output size, which the
    output stripe config already carries.
    """
    return _spatial(kernel, strides, dilation, padding, [0, 0, 0, 0], in_channels)


def depthwise_conv2d_propagator(
    kernel: tuple[int, int],
    strides: tuple[int, int] = (1, 1),
    dilation: tuple[int, int] = (1, 1),
    padding: tuple[int, int] = (0, 0),
    multiplier: int = 1,
) -> Propagator:
    """Depthwise IFM: windows over H and W; output channel o reads input channel o // multiplier."""
    return _spatial(kernel, strides, dilation, padding, [0, 0, 0, Fraction(1, multiplier)], 0)


def pooling_propagator(
    pool_shape: tuple[int, int], strides: tuple[int, int] = (1, 1), padding: tuple[int, int] = (0, 0)
) -> Propagator:
    """Pooling IFM: windows over H and W, channels one to one."""
    return _spatial(pool_shape, strides, (1, 1), padding, [0, 0, 0, 1], 0)


def binary_elementwise_propagator(in_shape: Sequence[int], out_shape: Sequence[int]) -> Propagator:
    """An elementwise operand: one to one, except that an axis of size 1 is always read at 0 (broadcast)."""
    if len(in_shape) != len(out_shape):
        raise ValueError(f"operand rank {len(in_shape)} differs from output rank {len(out_shape)}")
    n = len(out_shape)
    linear = [[int(i == j and in_shape[i] != 1) for j in range(n)] for i in range(n)]
    return Propagator.affine(linear, [int(d == 1) for d in in_shape], [0] * n)


def slice_propagator(begin: Sequence[int]) -> Propagator:
    """A box of the input: one to one, from `begin`."""
    n = len(begin)
    return Propagator.affine([[int(i == j) for j in range(n)] for i in range(n)], [0] * n, list(begin))


def concatenation_propagator(in_shape: Sequence[int], axis: int) -> Propagator:
    """An input of a concatenation along `axis`: one to one, but read whole along the axis."""
    n = len(in_shape)
    linear = [[int(i == j and i != axis) for j in range(n)] for i in range(n)]
    return Propagator.affine(linear, [in_shape[i] if i == axis else 0 for i in range(n)], [0] * n)


def whole_tensor_propagator(in_shape: Sequence[int], out_dims: int) -> Propagator:
    """Any output stripe needs the whole input: the safe answer when the index map is not affine."""
    return Propagator.affine([[0] * out_dims for _ in in_shape], list(in_shape), [0] * len(in_shape))


def identity_propagator(in_shape: Sequence[int], out_shape: Sequence[int]) -> Propagator:
    """A copy is one to one; a reshape (NHWC element order) needs the whole input, as its map is not affine."""
    if tuple(in_shape) == tuple(out_shape):
        return Propagator.identity(len(out_shape))
    return whole_tensor_propagator(in_shape, len(out_shape))


# ---------------------------------------------------------------------------------------------------------------
# Derivation from TE.


def derive_propagator(output: te.Tensor, input: te.Tensor) -> Propagator:
    """The propagator from `output` back to `input` through the te.compute stages between them.

    Raises ValueError if `input` does not feed `output`, NotAffineError if a stage on the way is not affine or
    if two paths need different regions (e.g. a tensor read at two different offsets).
    """
    memo: dict[tuple, Propagator | None] = {}

    def reach(tensor: te.Tensor) -> Propagator | None:
        key = _key(tensor)
        if key in memo:
            return memo[key]
        if key == _key(input):
            result = Propagator.identity(len(tensor.shape))
        elif not isinstance(tensor.op, te.ComputeOp):
            result = None
        else:
            found = set()
            for producer in _unique(tensor.op.input_tensors):
                rest = reach(producer)
                if rest is None:
                    continue
                step = stage_propagator(tensor, producer)
                try:
                    found.add(step.then(rest))
                except ValueError as error:  # a chain that would not be exact: let the caller fall back
                    raise NotAffineError(str(error)) from error
            if len(found) > 1:
                raise NotAffineError(f"{input.op.name} reaches {tensor.op.name} along paths needing different regions")
            result = found.pop() if found else None
        memo[key] = result
        return result

    propagator = reach(output)
    if propagator is None:
        raise ValueError(f"{input.op.name} does not feed {output.op.name}")
    return propagator


def propagator_for(output: te.Tensor, input: te.Tensor, fallback: Propagator | None = None) -> Propagator:
    """The derived propagator, or `fallback` (the operator's explicit definition) when the reads are not affine."""
    try:
        return derive_propagator(output, input)
    except NotAffineError:
        if fallback is None:
            raise
        return fallback


def stage_propagator(consumer: te.Tensor, producer: te.Tensor) -> Propagator:
    """The propagator of one te.compute stage for one of the tensors it reads."""
    op = consumer.op
    if not isinstance(op, te.ComputeOp):
        raise ValueError(f"{op.name} is not a te.compute")
    domain = {iv.var: iv.dom for iv in list(op.axis) + list(op.reduce_axis)}
    if any(int(dom.min) != 0 for dom in domain.values()):
        raise NotAffineError(f"{op.name} has a loop that does not start at 0")
    outputs = [iv.var for iv in op.axis]
    reads = set()
    for indices in _reads_of(op.body[consumer.value_index], _key(producer)):
        rows = [_row(index, outputs, domain, op.name) for index in indices]
        reads.add(Propagator.affine([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]))
    if not reads:
        raise ValueError(f"{op.name} does not read {producer.op.name}")
    if len(reads) > 1:
        raise NotAffineError(f"{op.name} reads {producer.op.name} at {len(reads)} different index maps")
    return reads.pop()


def _row(index, outputs: list, domain: dict, name: str) -> tuple[list, int, int]:
    """(linear coefficients over the output axes, constant column, offset) of one read index."""
    iter_sum = sym.normalize_to_iter_sum(index, domain)
    if not isinstance(iter_sum.base, tirx.IntImm):
        # Not printed: it may hold a tensor read, which TVM's printer cannot show without a warning.
        raise NotAffineError(f"{name}: a read index has a non-affine part (data-dependent or non-linear)")
    offset, extra = int(iter_sum.base.value), 0
    linear: list = [0] * len(outputs)
    seen = set()
    for split in iter_sum.args:
        var = split.source.source
        if not isinstance(var, tirx.Var) or var not in domain or not _all_int(split):
            raise NotAffineError(f"{name}: index {index} mixes loop variables inside one term")
        if var in seen:
            raise NotAffineError(f"{name}: index {index} uses {var} twice")
        seen.add(var)
        lower, extent, scale, whole = (
            int(x) for x in (split.lower_factor, split.extent, split.scale, split.source.extent)
        )
        if var in outputs:
            linear[outputs.index(var)] = _output_coefficient(lower, extent, scale, whole, name, index)
        elif lower == 1 and extent == whole:
            offset += min(0, scale * (whole - 1))  # a negative scale starts the window at the largest tap
            extra += abs(scale) * (whole - 1)
        else:
            raise NotAffineError(f"{name}: index {index} splits the reduction variable {var}")
    _patch_trivial_axes(index, outputs, domain, linear)
    followed = [a for a in linear if a != 0]
    if len(followed) > 1 or any(a < 0 for a in followed):
        raise NotAffineError(f"{name}: index {index} is not axis-separable (one output axis, positive scale)")
    if not followed:
        return linear, extra + 1, offset
    coefficient = followed[0]
    return linear, extra + (1 - coefficient if isinstance(coefficient, int) else 0), offset


def _output_coefficient(lower: int, extent: int, scale: int, whole: int, name: str, index) -> int | Fraction:
    if lower == 1 and extent == whole:
        return scale
    if lower > 1 and scale == 1 and extent == -(-whole // lower):  # var // lower, no modulo: a channel multiplier
        return Fraction(1, lower)
    raise NotAffineError(f"{name}: index {index} takes a floormod or a scaled floordiv of an output axis")


def _patch_trivial_axes(index, outputs: list, domain: dict, linear: list) -> None:
    """normalize_to_iter_sum drops loops of extent 1; recover their coefficient when nothing else is followed.

    Only the value 0 is ever taken there, so any coefficient is exact; recovering it keeps the derived matrix
    equal to the hand-written one (e.g. the batch axis of a conv reads batch n of its input).
    """
    if any(a != 0 for a in linear):
        return
    for axis, var in enumerate(outputs):
        if int(domain[var].extent) != 1:
            continue
        found = sym.detect_linear_equation(index, [var])
        if len(found) == 2 and isinstance(found[0], tirx.IntImm) and int(found[0]) > 0:
            linear[axis] = int(found[0])
            return


def _all_int(split) -> bool:
    return all(isinstance(x, tirx.IntImm) for x in (split.lower_factor, split.extent, split.scale, split.source.extent))


def _reads_of(expr, key) -> list[tuple]:
    """Index tuples of every read of the tensor `key` in `expr` (a te.compute body)."""
    found: list[tuple] = []
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, tirx.Reduce):
            stack.extend(node.source)
            stack.extend(node.init)
            stack.append(node.condition)
        elif isinstance(node, ir.Call):
            args = list(node.args)
            if isinstance(node.op, ir.Op) and node.op.name == TENSOR_LOAD:
                tensor, args = args[0], args[1:]
                if _key(tensor) == key:
                    found.append(tuple(args))
            stack.extend(args)
        elif isinstance(node, _LEAVES):
            continue
        else:
            children = [getattr(node, f) for f in _CHILD_FIELDS if hasattr(node, f)]
            if not children:
                raise NotAffineError(f"cannot look inside a {type(node).__name__} expression")
            stack.extend(c for c in children if c is not None)
    return found


def _key(tensor: te.Tensor) -> tuple:
    return (tensor.op, tensor.value_index)


def _unique(tensors) -> list[te.Tensor]:
    seen, out = set(), []
    for t in tensors:
        if _key(t) not in seen:
            seen.add(_key(t))
            out.append(t)
    return out
