"""RESIZE_NEAREST_NEIGHBOR and RESIZE_BILINEAR (int8, int16) of NHWC height and width, as TFLite's reference kernels.

Shapes are static, so the source rows and columns are computed here, once, exactly as TFLite computes them, and
passed to the kernel as constant tables. NEAREST: TFLite's float32 index (x + 0.5 with half-pixel centres) · scale,
rounded half away from zero with align_corners and floored otherwise. BILINEAR (ResizeBilinearInteger): 10-bit
fixed-point source coordinates and weights, the four products summed in int64 and divided by 2^20 with rounding
half away from zero. Both copy or blend raw integers: the output integers ignore its quantization, as TFLite's.
"""
from __future__ import annotations

import numpy as np
from tvm import te, tirx

from ..fixed_point import const, select
from ..spec import Resize, UnsupportedHostOp, op_name
from ..te_kernel import TeKernel, activation, constant, require, require_dtype

_DTYPES = ("int8", "int16")
_ONE = 1 << 10  # 1.0 in TFLite's 10-bit fixed-point coordinates


def nearest_indices(in_size: int, out_size: int, align_corners: bool, half_pixel_centers: bool) -> np.ndarray:
    """TFLite's GetNearestNeighbor for every output index, in float32 as TFLite computes it."""
    f32 = np.float32
    if align_corners and out_size > 1:
        scale = f32(in_size - 1) / f32(out_size - 1)
    else:
        scale = f32(in_size) / f32(out_size)
    offset = f32(0.5 if half_pixel_centers else 0.0)
    source = (np.arange(out_size, dtype=f32) + offset) * scale  # non-negative
    whole = np.floor(source)
    index = whole + (source - whole >= 0.5) if align_corners else whole  # std::round: half away from zero
    index = np.minimum(index.astype(np.int64), in_size - 1)
    return np.maximum(index, 0) if half_pixel_centers else index


def bilinear_taps(in_size: int, out_size: int, align_corners: bool, half_pixel_centers: bool) -> np.ndarray:
    """Per output index TFLite's (lower, upper, weight of upper) in 10-bit fixed point, as int32 [out_size, 3]."""
    if align_corners and out_size > 1:
        scale = (_ONE * (in_size - 1) + (out_size - 1) // 2) // (out_size - 1)
    else:
        scale = (_ONE * in_size + out_size // 2) // out_size
    taps = []
    for value in range(out_size):
        source = value * scale + (scale // 2 - _ONE // 2 if half_pixel_centers else 0)
        lower = max(_c_div(source, _ONE), 0)
        upper = min(_c_div(source + _ONE - 1, _ONE), in_size - 1)
        taps.append((lower, upper, source - _ONE * lower))
    return np.array(taps, dtype=np.int32)


def _c_div(a: int, b: int) -> int:
    """C's integer division (truncation towards zero), for b > 0."""
    return -(-a // b) if a < 0 else a // b


def define(op: Resize) -> TeKernel:
    name = op_name(op)
    require_dtype(name, op.input, _DTYPES)
    require_dtype(name, op.output, (op.input.dtype,))
    require(len(op.input.shape) == 4 and len(op.output.shape) == 4, name, "input and output must be NHWC")
    (batches, height, width, depth), (_, out_h, out_w, _) = op.input.shape, op.output.shape
    require((op.output.shape[0], op.output.shape[3]) == (batches, depth), name,
            f"output {op.output.shape} changes batches or channels of {op.input.shape}")
    flags = (op.align_corners, op.half_pixel_centers)
    x = activation(op.input, "input")
    if op.kind == "resize_nearest_neighbor":
        rows = constant(nearest_indices(height, out_h, *flags).astype(np.int32), "rows")
        cols = constant(nearest_indices(width, out_w, *flags).astype(np.int32), "cols")
        y = te.compute(op.output.shape, lambda b, i, j, c: x[b, rows[i], cols[j], c], name="output")
        return TeKernel(inputs=(x,), output=y, constants=(rows, cols))
    if op.kind != "resize_bilinear":
        raise UnsupportedHostOp(f"{name}: unknown resize")
    if op.align_corners and op.half_pixel_centers:
        raise UnsupportedHostOp(f"{name}: align_corners with half_pixel_centers (TFLite rejects the pair)")
    row_taps, col_taps = bilinear_taps(height, out_h, *flags), bilinear_taps(width, out_w, *flags)
    require(row_taps[:, :2].max() < height and col_taps[:, :2].max() < width, name,
            f"TFLite's coordinates for {op.input.shape} → {op.output.shape} fall outside the input")
    rows, cols = constant(row_taps, "rows"), constant(col_taps, "cols")

    def output(b, i, j, c):
        terms = []
        for row, row_weight in ((rows[i, 0], _ONE - rows[i, 2]), (rows[i, 1], rows[i, 2])):
            for col, col_weight in ((cols[j, 0], _ONE - cols[j, 2]), (cols[j, 1], cols[j, 2])):
                terms.append(x[b, row, col, c].astype("int64") * (row_weight * col_weight).astype("int64"))
        total = terms[0] + terms[1] + terms[2] + terms[3]
        half = select(total > 0, const(1 << 19, "int64"), const(-(1 << 19), "int64"))
        return tirx.truncdiv(total + half, const(1 << 20, "int64")).astype(op.output.dtype)

    y = te.compute(op.output.shape, output, name="output")
    return TeKernel(inputs=(x,), output=y, constants=(rows, cols))
