"""te.compute definitions of the NPU primitives: bit-exact integer arithmetic of what the hardware computes.

Each function takes the legalized op, its input te.Tensors and (for convolutions) the constant tensors, and returns
the output te.Tensor in the op's 4-D NHWC shape. Reads outside the IFM see the IFM zero point (centred value 0).
`attrs` go on every stage a primitive creates: they become the annotations of its TIR blocks, which is how code
generation finds the blocks of one primitive after scheduling.
"""
from __future__ import annotations

from dataclasses import dataclass

from tvm import te, tirx

from ..host.ops.sigmoid_int16 import sigmoid_int16
from ..legalize.ops import (
    BinaryElementwise,
    Concatenate,
    Conv2D,
    DepthwiseConv2D,
    Identity,
    Pad,
    Padding,
    Pooling,
    Slice,
    Softmax,
    Transpose,
    TransposeConv2D,
    Upscale,
)
from .arithmetic import bind, clamp_to, i64, requantize

INT32 = "int32"


@dataclass(frozen=True)
class ConvConstants:
    """The constant inputs of a convolution as TE placeholders (their values live in the NpuGraph op)."""

    weights: te.Tensor
    bias: te.Tensor
    scale: te.Tensor
    shift: te.Tensor


def _inside(iy, ix, h: int, w: int, padding: Padding) -> list:
    """The conditions for IFM row iy and column ix to lie inside an h x w IFM, on the sides that have padding only
    (elsewhere they hold): te.create_prim_func analyses each condition, about 0.2 ms apiece."""
    return [bound for pad, bound in ((padding.top, iy >= 0), (padding.bottom, iy < h), (padding.left, ix >= 0),
                                     (padding.right, ix < w)) if pad]


def _where_inside(bounds: list, value, outside):
    return tirx.if_then_else(tirx.all(*bounds), value, outside) if bounds else value


def _centred_padded(ifm: te.Tensor, zero_point: int, padding: Padding, name: str, attrs: dict,
                    dtype: str = INT32, nearest: bool = False) -> te.Tensor:
    """ifm − zero_point as `dtype`, padded with zeros (i.e. with the zero point) on the spatial axes; with `nearest`
    the IFM upscaled by 2 first, each element repeated into 2x2 (the NPU's NEAREST upscaling)."""
    n, h, w, c = (int(d) for d in ifm.shape)
    scale = 2 if nearest else 1
    h, w = scale * h, scale * w
    shape = (n, h + padding.top + padding.bottom, w + padding.left + padding.right, c)

    def value(b, y, x, ch):
        iy, ix = y - padding.top, x - padding.left
        read = ifm[b, tirx.floordiv(iy, scale), tirx.floordiv(ix, scale), ch] if nearest else ifm[b, iy, ix, ch]
        return _where_inside(_inside(iy, ix, h, w, padding), read.astype(dtype) - zero_point, tirx.const(0, dtype))

    return te.compute(shape, value, name=name, attrs=attrs)


def _centred_upscaled(ifm: te.Tensor, zero_point: int, padding: Padding, name: str, attrs: dict,
                      dtype: str = INT32) -> te.Tensor:
    """ifm − zero_point as `dtype` at the even rows and columns of twice its height and width, 0 (the zero point)
    between them and in the padding around them: the NPU's TRANSPOSE upscaling."""
    n, h, w, c = (int(d) for d in ifm.shape)
    shape = (n, 2 * h + padding.top + padding.bottom, 2 * w + padding.left + padding.right, c)

    def value(b, y, x, ch):
        uy, ux = y - padding.top, x - padding.left
        inside = tirx.all(uy >= 0, uy < 2 * h, ux >= 0, ux < 2 * w,
                          tirx.floormod(uy, 2) == 0, tirx.floormod(ux, 2) == 0)
        read = ifm[b, tirx.floordiv(uy, 2), tirx.floordiv(ux, 2), ch]
        return tirx.if_then_else(inside, read.astype(dtype) - zero_point, tirx.const(0, dtype))

    return te.compute(shape, value, name=name, attrs=attrs)


def _channel(values: te.Tensor, channel):
    """Per-channel parameter lookup that also accepts a single per-tensor value."""
    return values[channel] if int(values.shape[0]) > 1 else values[0]


def convolution(op: Conv2D, ifm: te.Tensor, const: ConvConstants, name: str, attrs: dict) -> te.Tensor:
    """Conv2D, DepthwiseConv2D and TransposeConv2D: accumulation of centred products (int32; int64 for 16-bit
    IFMs, whose 40-bit accumulators int32 cannot hold), 40-bit bias, requant, clamp."""
    acc_dtype = "int64" if op.ifm.tensor.dtype == "int16" else INT32
    window = _centred_upscaled if isinstance(op, TransposeConv2D) else _centred_padded
    padded = window(ifm, op.ifm.zero_point, op.padding, f"{name}_ifm", attrs, acc_dtype)
    kernel_h, kernel_w = op.kernel
    (stride_h, stride_w), (dil_h, dil_w) = op.strides, op.dilation
    ofm_shape = op.ofm.tensor.shape
    ry = te.reduce_axis((0, kernel_h), name="ry")
    rx = te.reduce_axis((0, kernel_w), name="rx")
    wzp = op.weight_zero_point
    if isinstance(op, DepthwiseConv2D):
        multiplier = ofm_shape[3] // int(ifm.shape[3])

        def accumulate(b, y, x, o):
            tap = padded[b, y * stride_h + ry * dil_h, x * stride_w + rx * dil_w, o // multiplier]
            return te.sum(tap * (const.weights[o, ry, rx, 0].astype(acc_dtype) - wzp), axis=[ry, rx])
    else:
        rc = te.reduce_axis((0, int(ifm.shape[3])), name="rc")

        def accumulate(b, y, x, o):
            tap = padded[b, y * stride_h + ry * dil_h, x * stride_w + rx * dil_w, rc]
            return te.sum(tap * (const.weights[o, ry, rx, rc].astype(acc_dtype) - wzp), axis=[ry, rx, rc])

    acc = te.compute(ofm_shape, accumulate, name=f"{name}_acc", attrs=attrs)
    rounding = op.requant.rounding

    def output(b, y, x, o):
        # The biased sum is bound (a Let around the body): the requantization uses it several times.
        return bind(i64(acc[b, y, x, o]) + _channel(const.bias, o), lambda total: clamp_to(
            requantize(total, _channel(const.scale, o), _channel(const.shift, o), rounding) + op.ofm.zero_point,
            op.clamp.min, op.clamp.max, op.ofm.tensor.dtype))

    return te.compute(ofm_shape, output, name=name, attrs=attrs)


def _valid_count(start, size: int, extent: int):
    """Number of taps of a window [start, start+size) that fall inside [0, extent)."""
    return tirx.max(tirx.min(start + size, extent) - tirx.max(start, 0), 0)


def pooling(op: Pooling, ifm: te.Tensor, name: str, attrs: dict) -> te.Tensor:
    """MAX: largest valid tap. AVG: sum of valid centred taps / their count, rounded half away from zero.
    REDUCE_SUM (1x1, unpadded): the sum of the centred IFM over its depth, requantized."""
    if op.pooling_type == "REDUCE_SUM":
        return _reduce_sum(op, ifm, name, attrs)
    scale = 2 if op.upscale else 1
    _, h, w, _ = (scale * int(d) for d in ifm.shape)
    pad = op.padding
    kernel_h, kernel_w = op.pool_shape
    stride_h, stride_w = op.strides
    ry = te.reduce_axis((0, kernel_h), name="ry")
    rx = te.reduce_axis((0, kernel_w), name="rx")
    ofm_shape = op.ofm.tensor.shape
    padded = _centred_padded(ifm, op.ifm.zero_point, pad, f"{name}_ifm", attrs, nearest=op.upscale)

    if op.pooling_type == "MAX":
        lowest = tirx.min_value(INT32)

        def reduce(b, y, x, c):
            tap = padded[b, y * stride_h + ry, x * stride_w + rx, c]
            bounds = _inside(y * stride_h + ry - pad.top, x * stride_w + rx - pad.left, h, w, pad)
            return te.max(_where_inside(bounds, tap, lowest), axis=[ry, rx])

        pooled = te.compute(ofm_shape, reduce, name=f"{name}_max", attrs=attrs)

        def output(b, y, x, c):
            return clamp_to(pooled[b, y, x, c] + op.ofm.zero_point, op.clamp.min, op.clamp.max, op.ofm.tensor.dtype)
    else:
        pooled = te.compute(
            ofm_shape,
            lambda b, y, x, c: te.sum(padded[b, y * stride_h + ry, x * stride_w + rx, c], axis=[ry, rx]),
            name=f"{name}_sum",
            attrs=attrs,
        )

        def output(b, y, x, c):
            rows = _valid_count(y * stride_h - pad.top, kernel_h, h)
            count = rows * _valid_count(x * stride_w - pad.left, kernel_w, w)
            total = pooled[b, y, x, c]
            half = tirx.truncdiv(count, 2)
            average = tirx.if_then_else(
                total > 0, tirx.truncdiv(total + half, count), tirx.truncdiv(total - half, count)
            )
            if op.requant is not None:
                average = requantize(average, int(op.requant.scale[0]), int(op.requant.shift[0]),
                                     op.requant.rounding)
            return clamp_to(average + op.ofm.zero_point, op.clamp.min, op.clamp.max, op.ofm.tensor.dtype)

    return te.compute(ofm_shape, output, name=name, attrs=attrs)


def _reduce_sum(op: Pooling, ifm: te.Tensor, name: str, attrs: dict) -> te.Tensor:
    rc = te.reduce_axis((0, int(ifm.shape[3])), name="rc")
    total = te.compute(op.ofm.tensor.shape, lambda b, y, x, _: te.sum(i64(ifm[b, y, x, rc]) - op.ifm.zero_point,
                                                                       axis=rc), name=f"{name}_sum", attrs=attrs)

    def output(b, y, x, c):
        value = total[b, y, x, c]
        if op.requant is not None:
            value = requantize(value, int(op.requant.scale[0]), int(op.requant.shift[0]), op.requant.rounding)
        return clamp_to(value + op.ofm.zero_point, op.clamp.min, op.clamp.max, op.ofm.tensor.dtype)

    return te.compute(op.ofm.tensor.shape, output, name=name, attrs=attrs)


def _broadcast_read(tensor: te.Tensor, index):
    """Read with size-1 dimensions broadcast against the output index."""
    return tensor[tuple(i if int(d) > 1 else 0 for i, d in zip(index, tensor.shape))]


def binary_elementwise(op: BinaryElementwise, lhs: te.Tensor, rhs: te.Tensor | None, name: str,
                       attrs: dict) -> te.Tensor:
    """ADD/SUB (TFLite's rescale-both-operands scheme), MUL (requant of the centred product), MIN/MAX (raw).
    `rhs` is IFM2 (a placeholder for a constant one); without it IFM2 is the op's scalar. With reversed operands
    IFM2 is the left one."""

    def raw(tensor, index):
        return tirx.const(op.ifm2_scalar, "int64") if tensor is None else i64(_broadcast_read(tensor, index))

    def centred(tensor, operand, index):
        return raw(tensor, index) - operand.zero_point

    def rescaled(tensor, operand, requant, index):
        shifted = centred(tensor, operand, index) * (1 << op.input_shift)
        return requantize(shifted, int(requant.scale[0]), int(requant.shift[0]), requant.rounding)

    def ordered(a, b):
        return (b, a) if op.reversed_operands else (a, b)

    def added(a, b):
        a, b = ordered(a, b)
        return a + b if op.operator == "ADD" else a - b

    def result(value):
        if op.requant is not None:
            value = requantize(value, int(op.requant.scale[0]), int(op.requant.shift[0]), op.requant.rounding)
            value = value + op.ofm.zero_point
        return clamp_to(value, op.clamp.min, op.clamp.max, op.ofm.tensor.dtype)

    shape = op.ofm.tensor.shape
    if op.operator in ("ADD", "SUB") and op.ifm_requant is not None:
        # The rescaled sum is a stage of its own: the output's requantization reads it several times, and copies
        # of its tree in each read made te.create_prim_func, which simplifies every copy, take most of ResNet-8's
        # compile time (a Let around the body instead trips TVM's simplifier when built for the host).
        total = te.compute(shape, lambda *index: added(rescaled(lhs, op.ifm, op.ifm_requant, index),
                                                       rescaled(rhs, op.ifm2, op.ifm2_requant, index)),
                           name=f"{name}_sum", attrs=attrs)
        return te.compute(shape, lambda *index: result(total[index]), name=name, attrs=attrs)

    def output(*index):
        if op.operator in ("ADD", "SUB"):
            return result(added(centred(lhs, op.ifm, index), centred(rhs, op.ifm2, index)))
        if op.operator == "MUL":
            return result(centred(lhs, op.ifm, index) * centred(rhs, op.ifm2, index))
        a, b = raw(lhs, index), raw(rhs, index)
        return result(tirx.min(a, b) if op.operator == "MIN" else tirx.max(a, b))

    return te.compute(shape, output, name=name, attrs=attrs)


def identity(op: Identity, ifm: te.Tensor, lut: te.Tensor | None, name: str, attrs: dict) -> te.Tensor:
    """A copy in NHWC element order (so also a reshape between equal-sized shapes), optionally via a table; with a
    built-in function, `lut` is the sigmoid table it interpolates."""
    in_shape = [int(d) for d in ifm.shape]
    out_shape = op.ofm.tensor.shape
    if op.function:
        scale = op.input_scale

        # The rescaled input is a stage of its own: the function reads it several times (see binary_elementwise).
        rescaled = te.compute(out_shape, lambda *i: requantize(i64(ifm[i]) - op.ifm.zero_point, int(scale.scale[0]),
                                                               int(scale.shift[0]), scale.rounding).astype(INT32),
                              name=f"{name}_rescaled", attrs=attrs)
        return te.compute(out_shape, lambda *i: sigmoid_int16(op.function, rescaled[i], lut), name=name, attrs=attrs)

    def element(*index):
        if tuple(in_shape) == tuple(out_shape):
            return ifm[index]
        return ifm[_unflattened(_flattened(index, out_shape), in_shape)]

    if lut is not None:
        return te.compute(out_shape, lambda *i: lut[element(*i).astype(INT32) + 128], name=name, attrs=attrs)
    return te.compute(out_shape, element, name=name, attrs=attrs)


def _flattened(index, shape):
    """The position of `index` in the row-major (NHWC) element order of `shape`."""
    flat = 0
    for i, extent in zip(index, shape):
        flat = flat * extent + i
    return flat


def _unflattened(flat, shape) -> tuple:
    """The index of row-major position `flat` in `shape`."""
    index = []
    for extent in reversed(shape):
        index.append(tirx.floormod(flat, extent))
        flat = tirx.floordiv(flat, extent)
    return tuple(reversed(index))


def concatenate(op: Concatenate, ifms: list[te.Tensor], name: str, attrs: dict) -> te.Tensor:
    """Each OFM element from the input whose range along the axis holds it: the last one starting at or before it."""

    def value(*index):
        position = index[op.axis]
        result = None
        for ifm, start in zip(ifms, op.offsets):
            shifted = list(index)
            shifted[op.axis] = position - start
            read = ifm[tuple(shifted)]
            result = read if result is None else tirx.if_then_else(position >= start, read, result)
        return result

    return te.compute(op.ofm.tensor.shape, value, name=name, attrs=attrs)


def pad(op: Pad, ifm: te.Tensor, name: str, attrs: dict) -> te.Tensor:
    """The IFM element at the OFM index minus `before` where there is one, else the pad value."""

    def value(*index):
        inner = [i - before for i, before in zip(index, op.before)]
        inside = tirx.all(*(tirx.all(i >= 0, i < int(extent)) for i, extent in zip(inner, ifm.shape)))
        return tirx.if_then_else(inside, ifm[tuple(inner)], tirx.const(op.value, ifm.dtype))

    return te.compute(op.ofm.tensor.shape, value, name=name, attrs=attrs)


def slice_box(op: Slice, ifm: te.Tensor, name: str, attrs: dict) -> te.Tensor:
    """The IFM element at `begin` plus the OFM index, times the strides on height and width."""
    strides = (1, *op.strides, 1)
    return te.compute(op.ofm.tensor.shape,
                      lambda *index: ifm[tuple(b + i * s for i, b, s in zip(index, op.begin, strides))],
                      name=name, attrs=attrs)


def upscale(op: Upscale, ifm: te.Tensor, name: str, attrs: dict) -> te.Tensor:
    """The IFM element at half the OFM's row and column (rounded down)."""
    return te.compute(op.ofm.tensor.shape,
                      lambda b, y, x, c: ifm[b, tirx.floordiv(y, 2), tirx.floordiv(x, 2), c], name=name, attrs=attrs)


def transpose(op: Transpose, ifm: te.Tensor, name: str, attrs: dict) -> te.Tensor:
    """OFM element (b, a, c) of the (B, A, C) order is IFM element (a, b, c) of the (A, B, C) view."""
    rows, columns, depth = op.view
    in_shape = [int(d) for d in ifm.shape]

    def value(*index):
        b, a, c = _unflattened(_flattened(index, op.ofm.tensor.shape), (columns, rows, depth))
        return ifm[_unflattened(_flattened((a, b, c), op.view), in_shape)]

    return te.compute(op.ofm.tensor.shape, value, name=name, attrs=attrs)


# Constants of the softmax sequence: Q12.19 sum rounding, the Newton-Raphson reciprocal in Q2.29 (gemmlowp's).
SOFTMAX_SUM_SHIFT = 12
SOFTMAX_OUTPUT_SHIFT = 12 + 31 - 8
NR_48_OVER_17, NR_NEG_32_OVER_17, NR_ONE = 1515870810, -1010580540, 1 << 29
NR_STEPS = 3


def _high_mul(a, b):
    """The NPU's 32-bit MUL at scale 1/2^31, TFL rounding: gemmlowp's rounding doubling high multiply."""
    return requantize(i64(a) * i64(b), 1, 31, "TFL")


def _leading_zeros(value):
    """Leading zeros of a positive int32: 31 less the index of its top bit."""
    return 31 - sum((value >= (1 << bit)).astype("int64") for bit in range(1, 31))


# int16 constants of TFLite's kernel: the offset of x − max into exp's table; the normalised sum's right shift to
# Q1.15; the offset that takes the sum in [1, 2), less 1, from [0, 65535] to 1/(1 + x)'s table's int16 input
SOFTMAX_INT16_EXP_OFFSET = 32767
SOFTMAX_INT16_SUM_SHIFT = 14
SOFTMAX_INT16_RECIPROCAL_OFFSET = (1 << 15) + (1 << 16)


def _int16(value):
    """An int64 expression saturated to the int16 range (the clip before a 16-bit LUT)."""
    return tirx.max(tirx.min(value, i64(32767)), i64(-32768))


def _interpolate(table: te.Tensor, value):
    """The NPU's 16-bit LUT at an int16 value: the word at (value + 32768) >> 7 holds base (bits 15:0) and slope
    (bits 31:16); base + (slope · low 7 bits + 64) >> 7."""
    word = i64(table[tirx.shift_right(value + 32768, 7)])
    base = tirx.bitwise_xor(tirx.bitwise_and(word, i64(0xFFFF)), i64(0x8000)) - i64(0x8000)
    slope = tirx.shift_right(word, i64(16))
    return base + tirx.shift_right(slope * tirx.bitwise_and(value + 32768, i64(0x7F)) + i64(64), i64(7))


def softmax_int16(op: Softmax, ifm: te.Tensor, exp_lut: te.Tensor, reciprocal_lut: te.Tensor, name: str,
                  attrs: dict) -> te.Tensor:
    """What the int16 NPU sequence computes per row: x − max rescaled (TFL rounding), + 32767 through the exp LUT;
    the sum normalised by CLZ through the 1/(1 + x) LUT; exp times it shifted right by 31 − CLZ, rounded half up."""
    shape = op.ofm.tensor.shape
    depth = shape[3]
    multiplier, shift = op.input_rescale
    k = te.reduce_axis((0, depth), name="k")
    row_max = te.compute(shape[:3], lambda b, y, x: te.max(ifm[b, y, x, k].astype(INT32), axis=k),
                         name=f"{name}_max", attrs=attrs)

    def exp(b, y, x, c):
        scaled = requantize(ifm[b, y, x, c].astype(INT32) - row_max[b, y, x], multiplier, shift, "TFL")
        return _interpolate(exp_lut, _int16(scaled + SOFTMAX_INT16_EXP_OFFSET)).astype(INT32)

    exps = te.compute(shape, exp, name=f"{name}_exp", attrs=attrs)
    j = te.reduce_axis((0, depth), name="j")
    sums = te.compute(shape[:3], lambda b, y, x: te.sum(exps[b, y, x, j], axis=j), name=f"{name}_sum", attrs=attrs)
    zeros = te.compute(shape[:3], lambda *row: _leading_zeros(sums[row]), name=f"{name}_clz", attrs=attrs)

    def reciprocal(*row):
        normalised = requantize(tirx.shift_left(i64(sums[row]), zeros[row] - 1), 1, SOFTMAX_INT16_SUM_SHIFT,
                                "NATURAL")
        return _interpolate(reciprocal_lut, _int16(normalised - SOFTMAX_INT16_RECIPROCAL_OFFSET))

    reciprocals = te.compute(shape[:3], reciprocal, name=f"{name}_reciprocal", attrs=attrs)

    def output(b, y, x_, c):
        value = requantize(i64(exps[b, y, x_, c]) * reciprocals[b, y, x_], 1, 31 - zeros[b, y, x_], "NATURAL")
        return clamp_to(value, 0, 32767, op.ofm.tensor.dtype)

    return te.compute(shape, output, name=name, attrs=attrs)


def softmax(op: Softmax, ifm: te.Tensor, lut: te.Tensor, name: str, attrs: dict) -> te.Tensor:
    """What the NPU sequence computes per row (the depth axis): exps from the table at x − max, their sum rounded
    to Q12.19, the reciprocal, then each exp times it rounded once (half up) to 1/256, + the zero point."""
    shape = op.ofm.tensor.shape
    depth = shape[3]
    k = te.reduce_axis((0, depth), name="k")
    row_max = te.compute(shape[:3], lambda b, y, x: te.max(ifm[b, y, x, k].astype(INT32), axis=k),
                         name=f"{name}_max", attrs=attrs)
    exps = te.compute(shape, lambda b, y, x, c: lut[ifm[b, y, x, c].astype(INT32) - row_max[b, y, x] + 255],
                      name=f"{name}_exp", attrs=attrs)
    j = te.reduce_axis((0, depth), name="j")
    sums = te.compute(shape[:3], lambda b, y, x: te.sum(
        requantize(exps[b, y, x, j], 1, SOFTMAX_SUM_SHIFT, "NATURAL"), axis=j), name=f"{name}_sum", attrs=attrs)

    def per_row(stage: str, value) -> te.Tensor:
        return te.compute(shape[:3], value, name=f"{name}_{stage}", attrs=attrs)

    # The reciprocal of the sum: CLZ normalises it to [1, 2) (the fraction doubled into Q0.31), then Newton-Raphson
    # in Q2.29 from 48/17 − 32/17 · d, d = (1 + fraction) / 2.
    zeros = per_row("clz", lambda *row: _leading_zeros(sums[row]))
    half = per_row("half_denominator", lambda *row: tirx.shift_right(
        (tirx.shift_left(sums[row], zeros[row] - 1) - (1 << 30)) * 2 + (1 << 31), 1))
    x = per_row("x0", lambda *row: _high_mul(half[row], NR_NEG_32_OVER_17) + NR_48_OVER_17)

    def newton_raphson(step: int, x: te.Tensor) -> te.Tensor:
        # The inner product is bound (a Let around the body): the outer high multiply uses it several times, and
        # te.create_prim_func simplifies every copy of its tree (most of the softmax's compile time).
        return per_row(f"x{step}", lambda *row: bind(_high_mul(x[row], half[row]), lambda inner: x[row] + _high_mul(
            x[row], NR_ONE - inner) * 4))

    for step in range(NR_STEPS):
        x = newton_raphson(step + 1, x)
    # 2x saturated to int32 without overflowing: min(x, 2^30) + min(x, 2^30 − 1)
    factor = per_row("factor", lambda *row: tirx.min(x[row], 1 << 30) + tirx.min(x[row], (1 << 30) - 1))

    def output(b, y, x_, c):
        shift = tirx.min(SOFTMAX_OUTPUT_SHIFT - zeros[b, y, x_], 31)  # beyond 31 only where LiteRT aborts
        value = requantize(_high_mul(exps[b, y, x_, c], factor[b, y, x_]), 1, shift, "NATURAL")
        return clamp_to(value + op.ofm.zero_point, -128, 127, op.ofm.tensor.dtype)

    return te.compute(shape, output, name=name, attrs=attrs)
