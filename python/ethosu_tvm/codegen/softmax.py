"""ethosu.softmax → the NPU operations Vela's compiler lowers an int8 SOFTMAX to, operation for operation.

The rows of the stripe (every position of its height and width) are laid out as the height of each operation, the
row's values along the depth (or, for the row maximum, along the width, which a pool's kernel spans). Per row: max;
exp = table[x − max] (a SUB whose int32 OFM goes through the 1 KiB exp table); the sum of the exps shifted right by
12 (rounding half up); CLZ of the sum; the sum normalised to [1, 2) by shifts; its reciprocal by Newton-Raphson with
32-bit MUL/ADD/SUB (a MUL at scale 1/2^31 is gemmlowp's rounding doubling high multiply); the reciprocal doubled
(saturating, by two MINs and an ADD where Vela's MUL by 2 overflows); exp times it, shifted right by 35 − CLZ into
the int8 OFM (the shift clamped at 31 for rows of more than 256 values, which only inputs LiteRT aborts on reach).

int16 follows TFLite's int16 kernel step for step, its two 513-entry tables as the NPU's 16-bit interpolating LUT
(the same interpolation, so the lookups are exact): max; x − max scaled by the kernel's input multiplier (a SUB whose
explicit rescale rounds as MultiplyByQuantizedMultiplier) into int32; + 32767 into int16 through the exp table; the
sum; CLZ; the sum normalised (shifted left by CLZ − 1, right by 14 rounding half up), − 98304 into int16 through the
1/(1 + x) table; exp times that in int32, shifted right by 31 − CLZ rounding half up into the int16 OFM.

Intermediates live in a scratch area of the stripe's own (`scratch_bytes`); the constants are one-element int32
IFM2 tensors in flash.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from ethosu.vela import api as vapi

from ..arch import LUT_REGION, round_up
from ..legalize.ops import Softmax
from ..te.primitives import (
    NR_48_OVER_17,
    NR_NEG_32_OVER_17,
    NR_ONE,
    NR_STEPS,
    SOFTMAX_INT16_EXP_OFFSET,
    SOFTMAX_INT16_RECIPROCAL_OFFSET,
    SOFTMAX_INT16_SUM_SHIFT,
    SOFTMAX_OUTPUT_SHIFT,
    SOFTMAX_SUM_SHIFT,
)
from .vela_calls import CodegenError

_I8, _I16, _I32 = vapi.NpuDataType.INT8, vapi.NpuDataType.INT16, vapi.NpuDataType.INT32
_OP = vapi.NpuElementWiseOp
_LUT_INDEX = 0
# Activation bounds as Vela's compiler writes them (real values; a 32-bit OFM ignores them).
_CLIP, _CLIP2 = (-128, 127), (-256, 254)


def _views(fm: vapi.NpuFeatureMap, what: str) -> tuple[int, int]:
    """(rows, depth) of a stripe's feature map, which must be one tile whose rows are evenly spaced."""
    shape, tiles = fm.shape, fm.tiles
    element = fm.strides.depth
    if tiles.height_0 != shape.height or tiles.width_0 != shape.width:
        raise CodegenError(f"{what}: a softmax sequence cannot wrap around a rolling buffer (see row_segments)")
    if fm.strides.width != shape.depth * element:
        raise CodegenError(f"{what}: a softmax stripe needs whole rows (the full depth)")
    if shape.height > 1 and fm.strides.height != shape.width * fm.strides.width:
        raise CodegenError(f"{what}: a softmax stripe of several rows needs the full width")
    return shape.height * shape.width, shape.depth


def _row_range(fm: vapi.NpuFeatureMap, start: int, stop: int) -> vapi.NpuFeatureMap:
    """Rows [start, stop) of a feature map as one tile (they must not cross its tiles' row boundary)."""
    part = _copy(fm)
    first = fm.tiles.height_0
    address = (fm.tiles.addresses[0] + start * fm.strides.height if start < first
               else fm.tiles.addresses[2] + (start - first) * fm.strides.height)
    part.shape = vapi.NpuShape3D(height=stop - start, width=fm.shape.width, depth=fm.shape.depth)
    part.tiles = vapi.NpuTileBox(height_0=stop - start, height_1=stop - start, width_0=fm.tiles.width_0,
                                 addresses=[address, 0, 0, 0])
    return part


def row_segments(ifm: vapi.NpuFeatureMap, ofm: vapi.NpuFeatureMap) -> list[tuple[vapi.NpuFeatureMap,
                                                                                 vapi.NpuFeatureMap]]:
    """A stripe whose IFM or OFM wraps around a rolling buffer (two rows of tiles) as runs of rows that do not:
    each run is a sequence of its own."""
    height = ifm.shape.height
    cuts = sorted({0, height} | {fm.tiles.height_0 for fm in (ifm, ofm) if fm.tiles.height_0 < height})
    return [(_row_range(ifm, start, stop), _row_range(ofm, start, stop)) for start, stop in zip(cuts, cuts[1:])]


def _view(fm: vapi.NpuFeatureMap, rows: int, depth: int, along_width: bool) -> vapi.NpuFeatureMap:
    """The same bytes as (rows, 1, depth), or (rows, depth, 1) when `along_width`."""
    view = vapi.NpuFeatureMap()
    element = fm.strides.depth
    view.data_type, view.region, view.layout, view.name = fm.data_type, fm.region, fm.layout, fm.name
    view.quantization = fm.quantization
    width = depth if along_width else 1
    view.shape = vapi.NpuShape3D(height=rows, width=width, depth=1 if along_width else depth)
    view.strides = vapi.NpuShape3D(height=depth * element, width=element if along_width else depth * element,
                                   depth=element)
    view.tiles = vapi.NpuTileBox(height_0=rows, height_1=rows, width_0=width,
                                 addresses=[fm.tiles.addresses[0], 0, 0, 0])
    return view


# Rows of up to 256 values sum to at most 2^27 (Q12.19), which needs an output shift of at most 31.
MAX_EXACT_SHIFT_DEPTH = 256
_ROW_SCALARS = 7  # int32 per-row values alive at once in the sequences below (their slots are reused)


def scratch_bytes(rows: int, depth: int, element_bytes: int = 1) -> int:
    """Scratch one softmax stripe of `rows` rows of `depth` values of `element_bytes` needs: the row maxima, the
    per-row values and, for int8, the exps and a second int32 tensor of the stripe's size (the rounded exps, later
    the scaled ones); for int16, an int32 tensor (the scaled differences, later the products) and the int16 exps."""
    rows_bytes = round_up(rows * element_bytes) + _ROW_SCALARS * round_up(rows * 4)
    if element_bytes == 2:
        return rows_bytes + round_up(rows * depth * 4) + round_up(rows * depth * 2)
    return rows_bytes + 2 * round_up(rows * depth * 4)


@dataclass(frozen=True)
class _Value:
    """An intermediate: its feature map (as written) and the scale Vela gives it when read (zero point 0)."""

    fm: vapi.NpuFeatureMap
    scale: float | None

    def read(self) -> vapi.NpuFeatureMap:
        fm = _copy(self.fm)
        fm.quantization = vapi.NpuQuantization(scale_f32=self.scale, zero_point=0)
        return fm


def _copy(fm: vapi.NpuFeatureMap) -> vapi.NpuFeatureMap:
    copy = vapi.NpuFeatureMap()
    for name in ("data_type", "region", "shape", "strides", "tiles", "quantization", "layout", "name"):
        setattr(copy, name, getattr(fm, name))
    return copy


class SoftmaxSequence:
    """Builds the operations of one stripe. `constant(bytes)` stores flash data and returns its address range;
    `scratch` is (region, offset) of this stripe's scratch area; `lut_base` is the SHRAM address of LUT slot 0."""

    def __init__(self, op: Softmax, ifm: vapi.NpuFeatureMap, ofm: vapi.NpuFeatureMap, scratch: tuple[int, int],
                 constant: Callable[[bytes], vapi.NpuAddressRange], lut_base: int, what: str):
        self.op = op
        self.rows, self.depth = _views(ifm, what)
        if _views(ofm, what) != (self.rows, self.depth):
            raise CodegenError(f"{what}: the softmax stripe's IFM and OFM differ in shape")
        self.ifm, self.ofm = ifm, ofm
        self.region, self.offset = scratch
        self.constant, self.lut_base = constant, lut_base
        self.zero_point = op.ifm.zero_point
        self.free_rows: list[int] = []

    # -- feature maps ---------------------------------------------------------------------------------------
    def _allocate(self, size: int) -> int:
        address = self.offset
        self.offset += round_up(size)
        return address

    def _scratch(self, name: str, depth: int, dtype: vapi.NpuDataType, address: int,
                 quant: tuple[float | None, int]) -> vapi.NpuFeatureMap:
        element = dtype.size_in_bytes()
        fm = vapi.NpuFeatureMap()
        fm.data_type, fm.region, fm.layout, fm.name = dtype, self.region, vapi.NpuLayout.NHWC, name
        fm.shape = vapi.NpuShape3D(height=self.rows, width=1, depth=depth)
        fm.strides = vapi.NpuShape3D(height=depth * element, width=depth * element, depth=element)
        fm.tiles = vapi.NpuTileBox(height_0=self.rows, height_1=self.rows, width_0=1, addresses=[address, 0, 0, 0])
        fm.quantization = vapi.NpuQuantization(scale_f32=quant[0], zero_point=quant[1])
        return fm

    def _row(self, name: str, scale: float | None, zero_point: int = 0, dtype: vapi.NpuDataType = _I32) -> _Value:
        """A new per-row value (int32 unless `dtype`), in a free row slot."""
        address = self.free_rows.pop() if self.free_rows else self._allocate(self.rows * 4)
        return _Value(self._scratch(name, 1, dtype, address, (scale, zero_point)), scale)

    def _release(self, *values: _Value) -> None:
        self.free_rows.extend(value.fm.tiles.addresses[0] for value in values)

    def _const(self, value: int, scale: float | None = None) -> vapi.NpuFeatureMap:
        fm = vapi.NpuFeatureMap()
        stored = self.constant(np.int32(value).tobytes())
        fm.data_type, fm.region, fm.layout, fm.name = _I32, stored.region, vapi.NpuLayout.NHWC, f"const_{value}"
        fm.shape = vapi.NpuShape3D(height=1, width=1, depth=1)
        fm.strides = vapi.NpuShape3D(height=4, width=4, depth=4)
        fm.tiles = vapi.NpuTileBox(height_0=1, height_1=1, width_0=1, addresses=[stored.address, 0, 0, 0])
        fm.quantization = vapi.NpuQuantization(scale_f32=scale, zero_point=0)
        return fm

    # -- operations -----------------------------------------------------------------------------------------
    @staticmethod
    def _activation(bounds: tuple[int, int] | None, table: bool = False) -> vapi.NpuActivation | None:
        if bounds is None:
            return None
        activation = vapi.NpuActivation(vapi.NpuActivationOp.TABLE_LOOKUP if table
                                        else vapi.NpuActivationOp.NONE_OR_RELU)
        activation.min, activation.max = bounds
        if table:
            activation.lookup_table_index = _LUT_INDEX
        return activation

    def _elementwise(self, kind, ifm, ifm2, ofm, bounds=_CLIP, reversed_operands=False, rounding="TFL",
                     rescale=None, table=False) -> vapi.NpuElementWiseOperation:
        npu_op = vapi.NpuElementWiseOperation(kind)
        npu_op.ifm, npu_op.ifm2, npu_op.ofm = ifm, ifm2, ofm
        npu_op.activation = self._activation(bounds, table)
        npu_op.rounding_mode = getattr(vapi.NpuRoundingMode, rounding)
        npu_op.reversed_operands = reversed_operands
        npu_op.rescale = rescale
        return npu_op

    def _pool(self, kind, ifm, ofm, kernel_width: int, bounds) -> vapi.NpuPoolingOperation:
        npu_op = vapi.NpuPoolingOperation(kind)
        npu_op.ifm, npu_op.ofm = ifm, ofm
        npu_op.kernel = vapi.NpuKernel(kernel_width, 1)
        npu_op.padding = vapi.NpuPadding(top=0, left=0, bottom=0, right=0)
        npu_op.activation = self._activation(bounds)
        npu_op.rounding_mode = vapi.NpuRoundingMode.TFL
        return npu_op

    def _binary(self, ops: list, kind, a: _Value, b, name: str, scale: float | None, zero_point: int = 0,
                dtype: vapi.NpuDataType = _I32, **options) -> _Value:
        """Append `a kind b` (b a _Value or a constant's feature map) into a new row value."""
        out = self._row(name, scale, zero_point, dtype)
        ops.append(self._elementwise(kind, a.read(), b.read() if isinstance(b, _Value) else b, out.fm, **options))
        return out

    def _row_max(self, ops: list, dtype: vapi.NpuDataType) -> vapi.NpuFeatureMap:
        """Append the row maximum (a MAX pool along the row, as the width), in the IFM's type and zero point."""
        row_max = self._scratch("softmax_max", 1, dtype, self._allocate(self.rows * dtype.size_in_bytes()),
                                (None, self.zero_point))
        ops.append(self._pool(vapi.NpuPoolingOp.MAX, _view(self.ifm, self.rows, self.depth, True), row_max,
                              self.depth, None))
        return row_max

    def _load_table(self, ops: list, table: np.ndarray) -> None:
        """Append the DMA of a lookup table into LUT slot 0 (Vela's command stream generator makes it wait for the
        operations that read the slot before)."""
        stored = self.constant(table.tobytes())
        ops.append(vapi.NpuDmaOperation(stored, vapi.NpuAddressRange(LUT_REGION, self.lut_base, stored.length)))

    def operations(self) -> list[vapi.NpuOperation]:
        """The whole sequence (block configs not chosen yet)."""
        if self.ifm.data_type == _I16:
            return self._int16_operations()
        rows, depth, zp = self.rows, self.depth, self.zero_point
        ops: list[vapi.NpuOperation] = []
        row_max = self._row_max(ops, _I8)
        self._load_table(ops, self.op.exp_lut.astype("<i4"))
        exps = _Value(self._scratch("softmax_exp", depth, _I32, self._allocate(rows * depth * 4), (1.0, 127)), 1.0)
        ops.append(self._elementwise(_OP.SUB, _view(self.ifm, rows, depth, False), row_max, exps.fm,
                                     bounds=(-255, 0), table=True))
        work = self._allocate(rows * depth * 4)
        rescaled = _Value(self._scratch("softmax_rescaled", depth, _I32, work, (None, zp)), None)
        ops.append(self._elementwise(_OP.SHR, exps.read(), self._const(SOFTMAX_SUM_SHIFT), rescaled.fm,
                                     rounding="NATURAL"))
        total = self._row("softmax_sum", None, zp)
        ops.append(self._pool(vapi.NpuPoolingOp.REDUCE_SUM, rescaled.read(), total.fm, 1, _CLIP))
        zeros = self._row("softmax_clz", None, zp)
        ops.append(self._elementwise(_OP.CLZ, total.read(), None, zeros.fm))

        right_shift = self._binary(ops, _OP.SUB, zeros, self._const(SOFTMAX_OUTPUT_SHIFT), "softmax_shift", None,
                                   zp, reversed_operands=True)
        if depth > MAX_EXACT_SHIFT_DEPTH:
            # A row of more values can sum to 2^28 and more (LiteRT aborts there): keep the shift executable.
            unclamped = right_shift
            right_shift = self._binary(ops, _OP.MIN, unclamped, self._const(31), "softmax_shift_clamped", None, zp)
            self._release(unclamped)
        headroom = self._binary(ops, _OP.SUB, zeros, self._const(1), "softmax_headroom", None, zp)
        normalised = self._binary(ops, _OP.SHL, total, headroom, "softmax_normalised", None, zp)
        self._release(zeros, headroom, total)
        fraction = self._binary(ops, _OP.SUB, normalised, self._const(1 << 30), "softmax_fraction", None, zp)
        doubled = self._binary(ops, _OP.SHL, fraction, self._const(1), "softmax_fraction2", None, zp)
        self._release(normalised, fraction)
        half = self._binary(ops, _OP.ADD, doubled, self._const((1 << 31) - 1), "softmax_half_denominator", 1.0,
                            rescale=(1, 1))
        self._release(doubled)
        product = self._binary(ops, _OP.MUL, half, self._const(NR_NEG_32_OVER_17, 1.0), "softmax_x0_product", 2.0,
                               bounds=_CLIP2)
        x = self._binary(ops, _OP.ADD, product, self._const(NR_48_OVER_17), "softmax_x", 1.0)
        self._release(product)
        for step in range(NR_STEPS):
            hx = self._binary(ops, _OP.MUL, x, half, f"softmax_nr{step}_hx", 2.0, bounds=_CLIP2)
            error = self._binary(ops, _OP.SUB, hx, self._const(NR_ONE), f"softmax_nr{step}_error", 1.0,
                                 reversed_operands=True)
            correction = self._binary(ops, _OP.MUL, x, error, f"softmax_nr{step}_correction", 2.0, bounds=_CLIP2)
            scaled = self._binary(ops, _OP.MUL, correction, self._const(4), f"softmax_nr{step}_scaled", None, zp)
            self._release(hx, error, correction)
            updated = self._binary(ops, _OP.ADD, x, scaled, f"softmax_nr{step}_x", 1.0)
            self._release(x, scaled)
            x = updated
        # 2x saturated to int32, as TFLite's reciprocal saturates it (x reaches 2.0 when the sum is a power of two):
        # min(x, 2^30) + min(x, 2^30 − 1). Vela multiplies by 2 instead, which overflows the 32-bit OFM there.
        upper = self._binary(ops, _OP.MIN, x, self._const(1 << 30), "softmax_x_upper", 1.0)
        lower = self._binary(ops, _OP.MIN, x, self._const((1 << 30) - 1), "softmax_x_lower", None)  # unscaled ADD
        factor = self._binary(ops, _OP.ADD, upper, lower, "softmax_factor", 1.0)
        scaled_exps = _Value(self._scratch("softmax_scaled", depth, _I32, work, (2.0, 0)), 2.0)
        ops.append(self._elementwise(_OP.MUL, exps.read(), factor.read(), scaled_exps.fm, bounds=_CLIP2))
        ops.append(self._elementwise(_OP.SHR, scaled_exps.read(), right_shift.read(),
                                     _view(self.ofm, rows, depth, False), bounds=None, rounding="NATURAL"))
        return ops

    def _int16_operations(self) -> list[vapi.NpuOperation]:
        """TFLite's int16 kernel as NPU operations (see the module's docstring)."""
        rows, depth = self.rows, self.depth
        ops: list[vapi.NpuOperation] = []
        row_max = self._row_max(ops, _I16)
        work = self._allocate(rows * depth * 4)
        scaled = _Value(self._scratch("softmax_scaled_diff", depth, _I32, work, (None, 0)), None)
        ops.append(self._elementwise(_OP.SUB, _view(self.ifm, rows, depth, False), row_max, scaled.fm, bounds=None,
                                     rescale=self.op.input_rescale))
        self._load_table(ops, self.op.exp_lut.astype("<u4"))
        exps = _Value(self._scratch("softmax_exp", depth, _I16, self._allocate(rows * depth * 2), (None, 0)), None)
        ops.append(self._elementwise(_OP.ADD, scaled.read(), self._const(SOFTMAX_INT16_EXP_OFFSET), exps.fm,
                                     bounds=(-32768, 32767), table=True))
        total = self._row("softmax_sum", None)
        ops.append(self._pool(vapi.NpuPoolingOp.REDUCE_SUM, exps.read(), total.fm, 1, None))
        zeros = self._row("softmax_clz", None)
        ops.append(self._elementwise(_OP.CLZ, total.read(), None, zeros.fm, bounds=None))

        headroom = self._binary(ops, _OP.SUB, zeros, self._const(1), "softmax_headroom", None, bounds=None)
        normalised = self._binary(ops, _OP.SHL, total, headroom, "softmax_normalised", None, bounds=None)
        self._release(total, headroom)
        rounded = self._binary(ops, _OP.SHR, normalised, self._const(SOFTMAX_INT16_SUM_SHIFT),
                               "softmax_normalised_q15", None, bounds=None, rounding="NATURAL")
        self._release(normalised)
        self._load_table(ops, self.op.reciprocal_lut.astype("<u4"))
        reciprocal = self._binary(ops, _OP.SUB, rounded, self._const(SOFTMAX_INT16_RECIPROCAL_OFFSET),
                                  "softmax_reciprocal", None, dtype=_I16, bounds=(-32768, 32767), table=True)
        self._release(rounded)
        right_shift = self._binary(ops, _OP.SUB, zeros, self._const(31), "softmax_shift", None, bounds=None,
                                   reversed_operands=True)
        products = _Value(self._scratch("softmax_products", depth, _I32, work, (None, 0)), None)
        ops.append(self._elementwise(_OP.MUL, exps.read(), reciprocal.read(), products.fm, bounds=None))
        ops.append(self._elementwise(_OP.SHR, products.read(), right_shift.read(),
                                     _view(self.ofm, rows, depth, False), bounds=None, rounding="NATURAL"))
        return ops
