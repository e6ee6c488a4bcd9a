"""Test helpers: a tiny assembler for hand-written streams and the FULLY_CONNECTED rounding patch."""
from __future__ import annotations

from ethosu_tvm.sim.regfile import RegisterFile
from ethosu_tvm.sim.registers import OPCODES, Command, Kind, decode_stream

ACCELERATORS = ("ethos-u55-32", "ethos-u55-64", "ethos-u55-128", "ethos-u55-256")
OPTIMISE = ("Performance", "Size")
_BY_NAME = {op.mnemonic: op for op in OPCODES.values()} | {op.name: op for op in OPCODES.values()}
ROUND_NATURAL = 2 << 14


def command(name: str, value: int = 0, shift: int = 0) -> Command:
    """A command by register name (with or without NPU_SET_) or operation name; scales take a shift."""
    opcode = _BY_NAME[name]
    if opcode.kind is Kind.WIDE:
        return Command(0, 0, opcode, value >> 32, value & 0xFFFFFFFF)
    if opcode.kind is Kind.SCALE:
        return Command(0, 0, opcode, shift, value)
    return Command(0, 0, opcode, value & 0xFFFF)


def assemble(*program: tuple) -> list[int]:
    """Words of a stream given as (name, value[, shift]) tuples; NPU_OP_STOP is appended."""
    words: list[int] = []
    for entry in (*program, ("NPU_OP_STOP", 0xFFFF)):
        words.extend(command(*entry).words())
    return words


def is_fully_connected(regs: RegisterFile) -> bool:
    """Vela lowers FULLY_CONNECTED to a 1x1 convolution producing a 1x1 spatial OFM."""
    return all(regs.param(name) == 0 for name in ("OFM_HEIGHT_M1", "OFM_WIDTH_M1", "KERNEL_HEIGHT_M1",
                                                    "KERNEL_WIDTH_M1"))


def patch_fc_rounding(words: list[int], rounding_bits: int = ROUND_NATURAL) -> tuple[list[int], int]:
    """The stream with every FULLY_CONNECTED convolution's OFM rounding replaced (NATURAL: LiteRT's single
    rounding); the original OFM_PRECISION is restored after each. Returns the words and the number patched."""
    regs = RegisterFile()
    patched: list[int] = []
    count = 0
    for cmd in decode_stream(words):
        if cmd.opcode.kind is not Kind.OPERATION:
            regs.set(cmd)
        elif cmd.opcode.name == "NPU_OP_CONV" and is_fully_connected(regs):
            precision = regs.param("OFM_PRECISION")
            patched += command("OFM_PRECISION", (precision & 0x3FFF) | rounding_bits).words()
            patched += cmd.words()
            patched += command("OFM_PRECISION", precision).words()
            count += 1
            continue
        patched += cmd.words()
    return patched, count


_PRECISION = {"uint8": 0, "int8": 1, "uint16": 4, "int16": 5, "int32": 9}  # IFM/IFM2 encoding (size in bits 3:2)
_OFM_PRECISION = {"uint8": 0, "int8": 1, "uint16": 2, "int16": 3, "int32": 5}  # OFM encoding (size in bits 2:1)


def feature_map(prefix: str, region: int, base: int, shape: tuple[int, int, int], dtype: str = "int8",
                zero_point: int = 0) -> list[tuple]:
    """Register settings of a single-tile NHWC feature map (prefix IFM, IFM2 or OFM)."""
    height, width, depth = shape
    elem = {"uint8": 1, "int8": 1, "uint16": 2, "int16": 2, "int32": 4}[dtype]
    precision = (_OFM_PRECISION if prefix == "OFM" else _PRECISION)[dtype]
    program = [(f"{prefix}_REGION", region), *((f"{prefix}_BASE{t}", base) for t in range(4)),
               (f"{prefix}_HEIGHT0_M1", height - 1), (f"{prefix}_HEIGHT1_M1", height - 1),
               (f"{prefix}_WIDTH0_M1", width - 1), (f"{prefix}_STRIDE_Y", width * depth * elem),
               (f"{prefix}_STRIDE_X", depth * elem), (f"{prefix}_STRIDE_C", elem),
               (f"{prefix}_ZERO_POINT", zero_point), (f"{prefix}_PRECISION", precision)]
    if prefix == "IFM":
        program.append(("IFM_DEPTH_M1", depth - 1))
    if prefix == "OFM":
        program += [("OFM_HEIGHT_M1", height - 1), ("OFM_WIDTH_M1", width - 1), ("OFM_DEPTH_M1", depth - 1),
                    ("OFM_BLK_HEIGHT_M1", 0), ("OFM_BLK_WIDTH_M1", 0), ("OFM_BLK_DEPTH_M1", 7)]
    return program


def elementwise(mode: int, shape, ifm2_shape=None, dtype: str = "int8", ofm_dtype: str | None = None,
                activation: int = 0, act_min: int = -128, act_max: int = 127, scale=(1, 0)) -> list[tuple]:
    """An elementwise operation in region 1: IFM at 0x000, IFM2 at 0x400, OFM at 0x800 (all NHWC)."""
    program = feature_map("IFM", 1, 0x000, shape, dtype) + feature_map("OFM", 1, 0x800, shape, ofm_dtype or dtype)
    if ifm2_shape is not None:
        program += feature_map("IFM2", 1, 0x400, ifm2_shape, dtype)
        program.append(("IFM2_BROADCAST", sum(1 << i for i, (a, b) in enumerate(zip(ifm2_shape, shape)) if a != b)))
    program += [("ACTIVATION", activation), ("ACTIVATION_MIN", act_min), ("ACTIVATION_MAX", act_max),
                ("OFM_SCALE", scale[0], scale[1]), ("NPU_OP_ELEMENTWISE", mode)]
    return program
