"""The Ethos-U55/U65 command set: opcodes, their parameter fields, and decoding of a raw register stream.

A stream is a list of little-endian 32-bit words. Bits [9:0] of a command word are the opcode and bits [15:14]
select its length: 0 = cmd0 (one word, 16-bit parameter in bits [31:16]), 1 = cmd1 (a second, 32-bit payload word
follows). Address-like cmd1 registers keep value bits [39:32] in the parameter: strides and DMA sizes on both
products, addresses only on a U65 (40-bit addresses; a U55's are 32-bit); lengths of weight and scale streams
have none.
OFM/OPA_SCALE keep the shift there. The U65 adds the second core's weight and scale streams (WEIGHT1_*, SCALE1_*)
and PARALLEL_MODE DUAL_CORE_DEPTH.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Sequence

from .errors import SimulatorError


class Kind(Enum):
    """How a command's parameter and payload form its value."""

    OPERATION = "operation"  # cmd0 that starts work; the parameter selects a mode
    PARAM = "param"  # cmd0 register setter; the value is the 16-bit parameter
    WIDE = "wide"  # cmd1 register; value = payload | parameter << 32 (addresses, strides, lengths)
    SCALE = "scale"  # cmd1 scale register; payload = 32-bit multiplier, parameter[5:0] = shift


@dataclass(frozen=True)
class Field:
    """A bit field of the 16-bit parameter; `names` lists the meaning of each legal value when it is an enum."""

    name: str
    lsb: int
    width: int
    names: dict[int, str] | None = None
    signed: bool = False

    def extract(self, param: int) -> int:
        value = (param >> self.lsb) & ((1 << self.width) - 1)
        if self.signed and value >> (self.width - 1):
            value -= 1 << self.width
        return value

    @property
    def mask(self) -> int:
        return ((1 << self.width) - 1) << self.lsb


@dataclass(frozen=True)
class Opcode:
    """One command of the instruction set. `name` drops the NPU_SET_ prefix for registers (e.g. IFM_PRECISION)."""

    code: int
    long: bool
    name: str
    kind: Kind
    fields: tuple[Field, ...] = ()

    @property
    def mnemonic(self) -> str:
        """The name used by Arm's documentation and Vela, e.g. NPU_SET_IFM_PRECISION or NPU_OP_CONV."""
        return self.name if self.kind is Kind.OPERATION else f"NPU_SET_{self.name}"


def _whole(name: str, signed: bool = False) -> tuple[Field, ...]:
    return (Field(name, 0, 16, signed=signed),)


def _enum(*names: str) -> dict[int, str]:
    return {i: n for i, n in enumerate(names) if n}


_SIGNED = {0: "UNSIGNED", 1: "SIGNED"}
_FORMAT = _enum("NHWC", "NHCWB16")
_ROUND = _enum("TFL", "TRUNCATE", "NATURAL")
_ELEMENTWISE = _enum("MUL", "ADD", "SUB", "MIN", "MAX", "LRELU", "ABS", "CLZ", "SHR", "SHL")
_POOLING = _enum("MAX", "AVERAGE", "REDUCE_SUM")
_ACTIVATION = {0: "NONE", 3: "TANH", 4: "SIGMOID", **{16 + i: f"TABLE_{i}" for i in range(8)}}
_CLIP = {0: "OFM_PRECISION", 2: "FORCE_UINT8", 3: "FORCE_INT8", 5: "FORCE_INT16"}
_DMA_REGION = (
    Field("region", 0, 8),
    Field("internal", 8, 1, {0: "EXTERNAL", 1: "INTERNAL"}),
    Field("stride_mode", 9, 2, _enum("1D", "2D", "3D")),
)

_OPERATIONS = [
    (0x000, "NPU_OP_STOP", _whole("mask")),
    (0x001, "NPU_OP_IRQ", _whole("mask")),
    (0x002, "NPU_OP_CONV", ()),
    (0x003, "NPU_OP_DEPTHWISE", ()),
    (0x005, "NPU_OP_POOL", (Field("mode", 0, 16, _POOLING),)),
    (0x006, "NPU_OP_ELEMENTWISE", (Field("mode", 0, 16, _ELEMENTWISE),)),
    (0x010, "NPU_OP_DMA_START", _whole("channel_mode")),
    (0x011, "NPU_OP_DMA_WAIT", _whole("k")),
    (0x012, "NPU_OP_KERNEL_WAIT", _whole("n")),
    (0x013, "NPU_OP_PMU_MASK", _whole("mask")),
]

_CMD0_REGISTERS = [
    (0x100, "IFM_PAD_TOP", _whole("pad")),
    (0x101, "IFM_PAD_LEFT", _whole("pad")),
    (0x102, "IFM_PAD_RIGHT", _whole("pad")),
    (0x103, "IFM_PAD_BOTTOM", _whole("pad")),
    (0x104, "IFM_DEPTH_M1", _whole("depth_m1")),
    (
        0x105,
        "IFM_PRECISION",
        (
            Field("type", 0, 1, _SIGNED),
            Field("precision", 2, 2, _enum("8BIT", "16BIT", "32BIT")),
            Field("format", 6, 2, _FORMAT),
            Field("scale_mode", 8, 2, _enum("OPA_OPB_16", "OPA_32", "OPB_32")),
            Field("round_mode", 14, 2, _ROUND),
        ),
    ),
    (0x107, "IFM_UPSCALE", (Field("mode", 0, 2, _enum("NONE", "NEAREST", "TRANSPOSE")),)),
    (0x109, "IFM_ZERO_POINT", _whole("zero_point", signed=True)),
    (0x10A, "IFM_WIDTH0_M1", _whole("width_m1")),
    (0x10B, "IFM_HEIGHT0_M1", _whole("height_m1")),
    (0x10C, "IFM_HEIGHT1_M1", _whole("height_m1")),
    (0x10D, "IFM_IB_END", _whole("ib_end")),
    (0x10F, "IFM_REGION", _whole("region")),
    (0x111, "OFM_WIDTH_M1", _whole("width_m1")),
    (0x112, "OFM_HEIGHT_M1", _whole("height_m1")),
    (0x113, "OFM_DEPTH_M1", _whole("depth_m1")),
    (
        0x114,
        "OFM_PRECISION",
        (
            Field("type", 0, 1, _SIGNED),
            Field("precision", 1, 2, _enum("8BIT", "16BIT", "32BIT")),
            Field("format", 6, 2, _FORMAT),
            Field("scale_mode", 8, 1, _enum("PER_CHANNEL", "GLOBAL")),
            Field("round_mode", 14, 2, _ROUND),
        ),
    ),
    (0x115, "OFM_BLK_WIDTH_M1", _whole("width_m1")),
    (0x116, "OFM_BLK_HEIGHT_M1", _whole("height_m1")),
    (0x117, "OFM_BLK_DEPTH_M1", _whole("depth_m1")),
    (0x118, "OFM_ZERO_POINT", _whole("zero_point", signed=True)),
    (0x11A, "OFM_WIDTH0_M1", _whole("width_m1")),
    (0x11B, "OFM_HEIGHT0_M1", _whole("height_m1")),
    (0x11C, "OFM_HEIGHT1_M1", _whole("height_m1")),
    (0x11F, "OFM_REGION", _whole("region")),
    (0x120, "KERNEL_WIDTH_M1", _whole("width_m1")),
    (0x121, "KERNEL_HEIGHT_M1", _whole("height_m1")),
    (
        0x122,
        "KERNEL_STRIDE",
        (
            Field("stride_x_lsb", 0, 1),
            Field("stride_y_lsb", 1, 1),
            Field("weight_order", 2, 1, _enum("DEPTH_FIRST", "PART_KERNEL_FIRST")),
            Field("dilation_x", 3, 1),
            Field("dilation_y", 4, 1),
            Field("decomposition", 5, 1, _enum("D8X8", "D4X4")),
            Field("stride_x_msb", 6, 3),
            Field("stride_y_msb", 9, 3),
        ),
    ),
    (0x123, "PARALLEL_MODE", (Field("mode", 0, 16, _enum("SINGLE_CORE", "DUAL_CORE_DEPTH")),)),
    (0x124, "ACC_FORMAT", (Field("format", 0, 16, _enum("INT_32BIT", "INT_40BIT", "FP_S5_10")),)),
    (0x125, "ACTIVATION", (Field("function", 0, 12, _ACTIVATION), Field("clip_range", 12, 4, _CLIP))),
    (0x126, "ACTIVATION_MIN", _whole("clip_boundary", signed=True)),
    (0x127, "ACTIVATION_MAX", _whole("clip_boundary", signed=True)),
    (0x128, "WEIGHT_REGION", _whole("region")),
    (0x129, "SCALE_REGION", _whole("region")),
    (0x12D, "AB_START", _whole("ab_start")),
    (0x12F, "BLOCKDEP", _whole("blockdep")),
    (0x130, "DMA0_SRC_REGION", _DMA_REGION),
    (0x131, "DMA0_DST_REGION", _DMA_REGION),
    (0x132, "DMA0_SIZE0", _whole("size")),
    (0x133, "DMA0_SIZE1", _whole("size")),
    (
        0x180,
        "IFM2_BROADCAST",
        (
            Field("broadcast_h", 0, 1),
            Field("broadcast_w", 1, 1),
            Field("broadcast_c", 2, 1),
            Field("operand_order", 6, 1, _enum("IFM_FIRST", "IFM2_FIRST")),
            Field("scalar", 7, 1),
        ),
    ),
    (0x181, "IFM2_SCALAR", _whole("scalar", signed=True)),
    (
        0x185,
        "IFM2_PRECISION",
        (
            Field("type", 0, 1, _SIGNED),
            Field("precision", 2, 2, _enum("8BIT", "16BIT", "32BIT")),
            Field("format", 6, 2, _FORMAT),
        ),
    ),
    (0x189, "IFM2_ZERO_POINT", _whole("zero_point", signed=True)),
    (0x18A, "IFM2_WIDTH0_M1", _whole("width_m1")),
    (0x18B, "IFM2_HEIGHT0_M1", _whole("height_m1")),
    (0x18C, "IFM2_HEIGHT1_M1", _whole("height_m1")),
    (0x18D, "IFM2_IB_START", _whole("ib_start")),
    (0x18F, "IFM2_REGION", _whole("region")),
]

_CMD1_REGISTERS = [
    (0x000, "IFM_BASE0"), (0x001, "IFM_BASE1"), (0x002, "IFM_BASE2"), (0x003, "IFM_BASE3"),
    (0x004, "IFM_STRIDE_X"), (0x005, "IFM_STRIDE_Y"), (0x006, "IFM_STRIDE_C"),
    (0x010, "OFM_BASE0"), (0x011, "OFM_BASE1"), (0x012, "OFM_BASE2"), (0x013, "OFM_BASE3"),
    (0x014, "OFM_STRIDE_X"), (0x015, "OFM_STRIDE_Y"), (0x016, "OFM_STRIDE_C"),
    (0x020, "WEIGHT_BASE"), (0x021, "WEIGHT_LENGTH"), (0x022, "SCALE_BASE"), (0x023, "SCALE_LENGTH"),
    (0x024, "OFM_SCALE"), (0x025, "OPA_SCALE"), (0x026, "OPB_SCALE"),
    (0x030, "DMA0_SRC"), (0x031, "DMA0_DST"), (0x032, "DMA0_LEN"), (0x033, "DMA0_SKIP0"), (0x034, "DMA0_SKIP1"),
    (0x080, "IFM2_BASE0"), (0x081, "IFM2_BASE1"), (0x082, "IFM2_BASE2"), (0x083, "IFM2_BASE3"),
    (0x084, "IFM2_STRIDE_X"), (0x085, "IFM2_STRIDE_Y"), (0x086, "IFM2_STRIDE_C"),
    (0x090, "WEIGHT1_BASE"), (0x091, "WEIGHT1_LENGTH"), (0x092, "SCALE1_BASE"), (0x093, "SCALE1_LENGTH"),
]
_SCALE_REGISTERS = {"OFM_SCALE", "OPA_SCALE"}  # parameter = shift; OPB_SCALE has no shift
_LENGTHS = {"WEIGHT_LENGTH", "SCALE_LENGTH", "WEIGHT1_LENGTH", "SCALE1_LENGTH"}  # 32-bit, no upper bits
_ADDRESSES = {f"{fm}_BASE{tile}" for fm in ("IFM", "IFM2", "OFM") for tile in range(4)} | {
    "WEIGHT_BASE", "SCALE_BASE", "WEIGHT1_BASE", "SCALE1_BASE", "DMA0_SRC", "DMA0_DST"}


def _build_table() -> dict[tuple[bool, int], Opcode]:
    table: dict[tuple[bool, int], Opcode] = {}
    for code, name, fields in _OPERATIONS:
        table[(False, code)] = Opcode(code, False, name, Kind.OPERATION, fields)
    for code, name, fields in _CMD0_REGISTERS:
        table[(False, code)] = Opcode(code, False, name, Kind.PARAM, fields)
    for code, name in _CMD1_REGISTERS:
        if name in _SCALE_REGISTERS:
            table[(True, code)] = Opcode(code, True, name, Kind.SCALE, (Field("shift", 0, 6),))
        elif name == "OPB_SCALE":
            table[(True, code)] = Opcode(code, True, name, Kind.SCALE)
        else:
            table[(True, code)] = Opcode(code, True, name, Kind.WIDE)
    return table


OPCODES: dict[tuple[bool, int], Opcode] = _build_table()


@dataclass(frozen=True)
class Command:
    """One decoded command: its position in the stream (command number and word offset) and raw operands."""

    index: int
    offset: int
    opcode: Opcode
    param: int
    payload: int | None = None

    @property
    def value(self) -> int:
        """The register value: the parameter (cmd0) or payload with the parameter as upper bits (cmd1)."""
        if self.opcode.kind is Kind.WIDE:
            return self.payload | (self.param << 32)
        if self.opcode.kind is Kind.SCALE:
            return self.payload
        return self.param

    def words(self) -> tuple[int, ...]:
        first = self.opcode.code | (0x4000 if self.opcode.long else 0) | (self.param << 16)
        return (first,) if self.payload is None else (first, self.payload)


def _check_fields(opcode: Opcode, param: int, index: int, offset: int) -> None:
    """Reject parameters with reserved bits set or enum fields holding a value the hardware does not define."""
    defined = 0
    for field in opcode.fields:
        defined |= field.mask
        if field.names is not None and field.extract(param) not in field.names:
            raise SimulatorError(
                f"command {index} (word {offset}): {opcode.mnemonic} = {param:#06x} has undefined "
                f"{field.name} value {field.extract(param)}"
            )
    if opcode.kind is not Kind.WIDE and param & ~defined & 0xFFFF:
        raise SimulatorError(
            f"command {index} (word {offset}): {opcode.mnemonic} = {param:#06x} sets reserved bits "
            f"{param & ~defined & 0xFFFF:#06x}"
        )


def _check_upper_bits(opcode: Opcode, param: int, index: int, offset: int, address_bits: int) -> None:
    """Reject value bits above bit 31 the register does not have on this accelerator: a stream length has none, an
    address `address_bits` - 32, a stride or DMA size 8."""
    width = 32 if opcode.name in _LENGTHS else address_bits if opcode.name in _ADDRESSES else 40
    if param >> (width - 32):
        raise SimulatorError(f"command {index} (word {offset}): {opcode.mnemonic} sets value bits beyond bit "
                             f"{width - 1} (parameter {param:#06x}); it has {width} bits on this accelerator")


def decode_stream(words: Sequence[int], address_bits: int = 32) -> list[Command]:
    """Split a register stream into commands, rejecting unknown opcodes, reserved bits, addresses wider than
    `address_bits` and truncation."""
    commands: list[Command] = []
    offset = 0
    n_words = len(words)
    while offset < n_words:
        index = len(commands)
        word = int(words[offset])
        if not 0 <= word < 1 << 32:
            raise SimulatorError(f"command {index} (word {offset}): {word!r} is not a 32-bit word")
        code, mode, param = word & 0x3FF, (word >> 14) & 0x3, word >> 16
        if (word >> 10) & 0xF or mode > 1:
            raise SimulatorError(f"command {index} (word {offset}): word {word:#010x} has reserved bits or an "
                                 f"undefined length in bits [15:10] ({(word >> 10) & 0x3F:#x})")
        opcode = OPCODES.get((mode == 1, code))
        if opcode is None:
            kind = "cmd1" if mode else "cmd0"
            raise SimulatorError(
                f"command {index} (word {offset}): unknown {kind} opcode {code:#05x} (word {word:#010x})"
            )
        _check_fields(opcode, param, index, offset)
        if opcode.kind is Kind.WIDE:
            _check_upper_bits(opcode, param, index, offset, address_bits)
        if opcode.long:
            if offset + 1 >= n_words:
                raise SimulatorError(
                    f"command {index} (word {offset}): {opcode.mnemonic} needs a payload word but the stream ends"
                )
            payload = int(words[offset + 1])
            if not 0 <= payload < 1 << 32:
                raise SimulatorError(f"command {index} (word {offset + 1}): payload {payload!r} is not a 32-bit word")
            commands.append(Command(index, offset, opcode, param, payload))
            offset += 2
        else:
            commands.append(Command(index, offset, opcode, param))
            offset += 1
    return commands
