"""The Vela API's operands of one stripe: its feature maps (a box of a buffer, split into the NPU's tiles where it wraps
around a rolling buffer), an IFM2 scalar, strides, padding and the activation clamp, as both code generation
(`codegen.operations`) and the stripe cost model (`codegen.stripe_cost`) hand them to Vela.
"""
from __future__ import annotations

import numpy as np
from ethosu.vela import api as vapi

from ..legalize.ops import BinaryElementwise, Clamp, Operand
from .memory import Placement
from .tir_regions import Interval
from .tir_to_npu import FeatureMapRegion
from .vela_calls import CodegenError

_DTYPES = {"int8": vapi.NpuDataType.INT8, "uint8": vapi.NpuDataType.UINT8, "int16": vapi.NpuDataType.INT16,
           "int32": vapi.NpuDataType.INT32}
POOLING_OPS = {"MAX": vapi.NpuPoolingOp.MAX, "AVG": vapi.NpuPoolingOp.AVERAGE,
               "REDUCE_SUM": vapi.NpuPoolingOp.REDUCE_SUM}


def _segments(interval: Interval, size: int, ring: bool) -> list[tuple[int, int]]:
    """(first index in the buffer, count) of the pieces of an interval along one axis: two when it wraps around."""
    if not ring:
        return [(interval.start, interval.extent)]
    if interval.extent > size:
        raise CodegenError(f"a stripe of {interval.extent} does not fit in a rolling buffer of {size}")
    start = interval.start % size
    first = min(interval.extent, size - start)
    return [(start, first)] + ([(0, interval.extent - first)] if first < interval.extent else [])


def feature_map(operand: Operand, region: FeatureMapRegion, placement: Placement) -> vapi.NpuFeatureMap:
    """The NPU's view of a stripe's box: its shape, the byte strides of the buffer around it, and where each tile
    starts (the buffer's placement plus the box's offset)."""
    if region.rings[0] or region.rings[3]:
        raise CodegenError(f"{region.tensor}: the NPU's tiles cannot wrap a rolling buffer on batch or depth")
    element = np.dtype(region.dtype).itemsize
    _, height, width, depth = region.layout
    strides = (height * width * depth * element, width * depth * element, depth * element, element)
    rows = _segments(region.box[1], height, region.rings[1])
    columns = _segments(region.box[2], width, region.rings[2])
    corner = placement.offset + region.box[0].start * strides[0] + region.box[3].start * strides[3]
    # Tiles 0, 1, 2, 3: top-left, top-right, bottom-left, bottom-right; unused ones have address 0.
    addresses = [corner + rows[r][0] * strides[1] + columns[c][0] * strides[2]
                 if r < len(rows) and c < len(columns) else 0 for r, c in ((0, 0), (0, 1), (1, 0), (1, 1))]
    _, box_height, box_width, box_depth = region.shape
    fm = vapi.NpuFeatureMap()
    fm.data_type = _DTYPES[region.dtype]
    fm.region = placement.region
    fm.shape = vapi.NpuShape3D(height=box_height, width=box_width, depth=box_depth)
    fm.strides = vapi.NpuShape3D(height=strides[1], width=strides[2], depth=strides[3])
    fm.tiles = vapi.NpuTileBox(height_0=rows[0][1], height_1=rows[0][1], width_0=columns[0][1], addresses=addresses)
    fm.quantization = vapi.NpuQuantization(scale_f32=operand.scale, zero_point=operand.zero_point)
    fm.layout = vapi.NpuLayout.NHWC
    fm.name = region.tensor
    return fm


def scalar_feature_map(operand: Operand, ifm: vapi.NpuFeatureMap) -> vapi.NpuFeatureMap:
    """IFM2 of an operation with an IFM2 scalar: only its data type and quantization are read (the IFM's region and
    tiles stand in for the rest)."""
    fm = vapi.NpuFeatureMap()
    fm.data_type, fm.region, fm.tiles, fm.layout = ifm.data_type, ifm.region, ifm.tiles, ifm.layout
    fm.shape = vapi.NpuShape3D(height=1, width=1, depth=1)
    fm.strides = ifm.strides
    fm.quantization = vapi.NpuQuantization(scale_f32=operand.scale, zero_point=operand.zero_point)
    fm.name = operand.tensor.name
    return fm


def window_strides(strides: tuple[int, int], ofm: FeatureMapRegion) -> tuple[int, int]:
    """(y, x) strides with those of single-element output axes set to 1: they never move the window, and the
    hardware only takes strides up to 3 (partitioning admits larger ones on such axes)."""
    _, height, width, _ = ofm.shape
    return (strides[0] if height > 1 else 1, strides[1] if width > 1 else 1)


def padding(region: FeatureMapRegion) -> vapi.NpuPadding:
    pad = region.padding
    return vapi.NpuPadding(top=pad.top, left=pad.left, bottom=pad.bottom, right=pad.right)


def activation(clamp: Clamp, ofm: Operand) -> vapi.NpuActivation:
    """Vela takes the clamp in real values and quantizes it with the OFM's quantization; invert that exactly. A
    32-bit OFM is not clamped."""
    activation = vapi.NpuActivation(vapi.NpuActivationOp.NONE_OR_RELU)
    if ofm.tensor.dtype == "int32":
        return activation
    activation.min = float(np.float32((clamp.min - ofm.zero_point) * np.float32(ofm.scale)))
    activation.max = float(np.float32((clamp.max - ofm.zero_point) * np.float32(ofm.scale)))
    return activation


def scalar_value(op: BinaryElementwise) -> float:
    """Vela takes an IFM2 scalar as a real value and quantizes it with IFM2's quantization (in float32): the real
    value of the raw integer, which quantizes back to it exactly (|q − zp| < 2^17 needs far less than float32's
    precision)."""
    return float(np.float32(op.ifm2_scalar - op.ifm2.zero_point) * np.float32(op.ifm2.scale))
