"""Activation functions of the output unit: table lookups in SHRAM and the built-in 16-bit TANH and SIGMOID.

LUT: an 8-bit clip type indexes 256 entries of the OFM element size at SHRAM slot base + 256 * k
(index = value - type minimum); a 16-bit clip type indexes 512 32-bit entries (base in bits [15:0], slope in bits
[31:16]) by (value + 32768) >> 7 and adds slope * (low 7 bits) / 128 rounded half up.

TANH/SIGMOID take the scaled 32-bit value v (the OFM scale already includes TFLite's input multiplier) and
interpolate a table of sigmoid(i/24) in 0.16 fixed point, the arithmetic of TFLite's int16 reference kernels:
sigmoid indexes |v| >> 9 with 9 fraction bits, tanh (= 2 sigmoid(2x) - 1) indexes |v| >> 8 with 8 fraction bits;
indices of 255 and above saturate.
"""
from __future__ import annotations

import numpy as np

from ..arch import LUT_BYTES, LUT_SLOT_BYTES, Accelerator
from ..arch.cycles import SHRAM
from .memory import Memory
from .operation import OutputStage
from .regfile import RegisterFile

TANH, SIGMOID, LUT_FIRST, LUT_LAST = 3, 4, 16, 23

# sigmoid(i / 24) in unsigned 0.16 fixed point, i = 0..255: the values of the table in TFLite's and CMSIS-NN's
# int16 reference kernels (`sigmoid_table_uint16`), which the hardware functions reproduce.
SIGMOID_TABLE = np.array([
    32768, 33451, 34133, 34813, 35493, 36169, 36843, 37513, 38180, 38841, 39498, 40149, 40794, 41432, 42064, 42688,
    43304, 43912, 44511, 45102, 45683, 46255, 46817, 47369, 47911, 48443, 48964, 49475, 49975, 50464, 50942, 51409,
    51865, 52311, 52745, 53169, 53581, 53983, 54374, 54755, 55125, 55485, 55834, 56174, 56503, 56823, 57133, 57433,
    57724, 58007, 58280, 58544, 58800, 59048, 59288, 59519, 59743, 59959, 60168, 60370, 60565, 60753, 60935, 61110,
    61279, 61441, 61599, 61750, 61896, 62036, 62172, 62302, 62428, 62549, 62666, 62778, 62886, 62990, 63090, 63186,
    63279, 63368, 63454, 63536, 63615, 63691, 63765, 63835, 63903, 63968, 64030, 64090, 64148, 64204, 64257, 64308,
    64357, 64405, 64450, 64494, 64536, 64576, 64614, 64652, 64687, 64721, 64754, 64786, 64816, 64845, 64873, 64900,
    64926, 64950, 64974, 64997, 65019, 65039, 65060, 65079, 65097, 65115, 65132, 65149, 65164, 65179, 65194, 65208,
    65221, 65234, 65246, 65258, 65269, 65280, 65291, 65301, 65310, 65319, 65328, 65337, 65345, 65352, 65360, 65367,
    65374, 65381, 65387, 65393, 65399, 65404, 65410, 65415, 65420, 65425, 65429, 65433, 65438, 65442, 65445, 65449,
    65453, 65456, 65459, 65462, 65465, 65468, 65471, 65474, 65476, 65479, 65481, 65483, 65485, 65488, 65489, 65491,
    65493, 65495, 65497, 65498, 65500, 65501, 65503, 65504, 65505, 65507, 65508, 65509, 65510, 65511, 65512, 65513,
    65514, 65515, 65516, 65517, 65517, 65518, 65519, 65520, 65520, 65521, 65522, 65522, 65523, 65523, 65524, 65524,
    65525, 65525, 65526, 65526, 65526, 65527, 65527, 65528, 65528, 65528, 65529, 65529, 65529, 65529, 65530, 65530,
    65530, 65530, 65531, 65531, 65531, 65531, 65531, 65532, 65532, 65532, 65532, 65532, 65532, 65533, 65533, 65533,
    65533, 65533, 65533, 65533, 65533, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65535,
], dtype=np.int64)


def _interpolate(magnitude: np.ndarray, fraction_bits: int) -> tuple[np.ndarray, np.ndarray]:
    """(interpolated table value scaled by 2**fraction_bits, saturated mask) for |v|."""
    index = magnitude >> fraction_bits
    saturated = index >= 255
    index = np.minimum(index, 254)
    low, high = SIGMOID_TABLE[index], SIGMOID_TABLE[index + 1]
    fraction = magnitude & ((1 << fraction_bits) - 1)
    return (low << fraction_bits) + fraction * (high - low), saturated


def sigmoid(values: np.ndarray) -> np.ndarray:
    """The built-in SIGMOID on scaled values, giving signed 16-bit results (0..32767)."""
    interpolated, saturated = _interpolate(np.abs(values), 9)
    interpolated = np.where(saturated, 0x7FFF << 10, interpolated)
    rounded = np.where(values >= 0, interpolated + (1 << 9), (1 << 25) - interpolated + (1 << 9) - 1)
    return rounded >> 10


def tanh(values: np.ndarray) -> np.ndarray:
    """The built-in TANH on scaled values, giving signed 16-bit results."""
    interpolated, saturated = _interpolate(np.abs(values), 8)
    interpolated = np.where(saturated, 0xFFFF << 8, interpolated)
    rounded = np.where(values >= 0, interpolated - (1 << 23) + (1 << 7), -interpolated + (1 << 23) + (1 << 7) - 1)
    return rounded >> 8


def is_lut(function: int) -> bool:
    return LUT_FIRST <= function <= LUT_LAST


def table_bytes(stage: OutputStage) -> int:
    """Bytes of SHRAM a table lookup reads: 256 OFM-sized entries, or 512 words (the whole LUT area) for a 16-bit
    clip type."""
    return 256 * stage.ofm_dtype.itemsize if stage.clip_type.itemsize == 1 else LUT_BYTES


def check_table(stage: OutputStage, regs: RegisterFile) -> None:
    """The rules of a table lookup that do not depend on the values: the table fits the LUT area from its slot,
    and an 8-bit table gives no 16-bit OFM. `lookup` relies on them having been checked."""
    slot = stage.function - LUT_FIRST
    if slot * LUT_SLOT_BYTES + table_bytes(stage) > LUT_BYTES:
        raise regs.error("ACTIVATION", f"a {table_bytes(stage)}-byte table does not fit from slot {slot}")
    if stage.clip_type.itemsize == 1 and stage.ofm_dtype.itemsize == 2:
        raise regs.error("ACTIVATION", "an 8-bit LUT cannot produce a 16-bit OFM")


def table(stage: OutputStage, regs: RegisterFile, memory: Memory, accelerator: Accelerator) -> np.ndarray:
    """The LUT slot the activation names, as a lookup reads it (`check_table` passed): 256 OFM-typed entries for an
    8-bit clip type, else 512 words."""
    slot = stage.function - LUT_FIRST
    address = accelerator.lut_base + slot * LUT_SLOT_BYTES
    what = f"{regs.where()}: LUT slot {slot} ({regs.describe('ACTIVATION')})"
    if stage.clip_type.itemsize == 1:
        return memory.view(SHRAM, address, (256,), (stage.ofm_dtype.itemsize,), stage.ofm_dtype, what)
    return memory.view(SHRAM, address, (512,), (4,), np.dtype("<u4"), what)


def lookup(values: np.ndarray, stage: OutputStage, regs: RegisterFile, memory: Memory,
           accelerator: Accelerator) -> np.ndarray:
    """Table lookup of clipped values in the LUT slot the activation names (`check_table` passed)."""
    entries = table(stage, regs, memory, accelerator).astype(np.int64)
    if stage.clip_type.itemsize == 1:
        return entries[values - np.iinfo(stage.clip_type).min]
    base = (entries & 0xFFFF).astype(np.int16).astype(np.int64)
    slope = (entries >> 16).astype(np.int16).astype(np.int64)
    index, fraction = (values + 32768) >> 7, (values + 32768) & 0x7F
    return base[index] + ((slope[index] * fraction + 64) >> 7)
