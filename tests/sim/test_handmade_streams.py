"""Semantics Vela's streams do not exercise, checked on hand-assembled streams against NumPy computations."""
import numpy as np
import pytest

from ethosu_tvm.arch import ACCELERATORS
from ethosu_tvm.sim import Simulator, SimulatorError
from simhelpers import assemble, elementwise, feature_map

MUL, ADD, SUB, MIN, MAX, LRELU, ABS, CLZ, SHR, SHL = range(10)
GLOBAL_SCALE = 1 << 8


def _run(program, ifm, ifm2=None, ofm_shape=None, ofm_dtype=np.int8, shram_program=(), regions=None):
    region = bytearray(0xC00)
    region[: ifm.nbytes] = ifm.tobytes()
    if ifm2 is not None:
        region[0x400 : 0x400 + ifm2.nbytes] = ifm2.tobytes()
    regions = {1: region, **(regions or {})}
    Simulator("ethos-u55-128").run(assemble(*shram_program, *program), regions)
    shape = ofm_shape or ifm.shape
    return np.frombuffer(region, ofm_dtype, count=int(np.prod(shape)), offset=0x800).reshape(shape)


def _with_precision(program, register, value):
    return [(register, value) if entry[0] == register else entry for entry in program]


def test_max_with_channel_broadcast():
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, (3, 4, 8), dtype=np.int8)
    b = rng.integers(-128, 128, (3, 4, 1), dtype=np.int8)
    out = _run(elementwise(MAX, a.shape, b.shape), a, b)
    assert np.array_equal(out, np.maximum(a, b))


def _padded_average(shape, precision, *scaling):
    """A 3x3 stride-1 AVERAGE pool padded by 1 on every side: IFM at 0x000, OFM at 0x800 of region 1."""
    program = feature_map("IFM", 1, 0x000, shape) + feature_map("OFM", 1, 0x800, shape)
    program = _with_precision(program, "OFM_PRECISION", precision)
    program += [(f"IFM_PAD_{side}", 1) for side in ("TOP", "LEFT", "BOTTOM", "RIGHT")]
    program += [("KERNEL_HEIGHT_M1", 2), ("KERNEL_WIDTH_M1", 2), ("ACTIVATION_MIN", -128), ("ACTIVATION_MAX", 127)]
    return program + list(scaling) + [("NPU_OP_POOL", 1)]


def test_padded_average_in_global_mode_divides_by_the_valid_taps():
    """Vela's compiler's encoding: global scale mode, OFM_SCALE 1; each window's sum over its taps inside the IFM,
    divided by their number, rounded half away from zero."""
    ifm = np.random.default_rng(3).integers(-128, 128, (4, 5, 8), dtype=np.int8)
    out = _run(_padded_average(ifm.shape, 1 | GLOBAL_SCALE, ("OFM_SCALE", 1, 0)), ifm)
    padded = np.pad(ifm.astype(np.int64), ((1, 1), (1, 1), (0, 0)))
    counts = np.pad(np.ones(ifm.shape[:2], np.int64), 1)
    total = sum(padded[y:y + 4, x:x + 5] for y in range(3) for x in range(3))
    count = sum(counts[y:y + 4, x:x + 5] for y in range(3) for x in range(3))[..., None]
    expected = np.sign(total) * ((2 * np.abs(total) + count) // (2 * count))
    assert np.array_equal(out, expected)


@pytest.mark.parametrize("length", [0, 40])
def test_padded_average_in_per_channel_mode_needs_a_scale_stream(length):
    """The encoding of Vela's API (per-channel mode, no scale stream) is refused, as an independent interpreter
    refuses it."""
    ifm = np.zeros((4, 5, 8), np.int8)
    program = _padded_average(ifm.shape, 1, ("SCALE_LENGTH", length))
    with pytest.raises(SimulatorError, match=rf"NPU_SET_SCALE_LENGTH = {length:#x} .*: per-channel AVERAGE pooling "
                                             rf"reads a scale stream: {length} < 80 bytes for 8 channels"):
        _run(program, ifm)
    with pytest.raises(SimulatorError, match="AVERAGE pooling with a per-channel scale stream is not modelled"):
        _run(_padded_average(ifm.shape, 1, ("SCALE_LENGTH", 80)), ifm)


def test_reversed_sub_with_scalar():
    a = np.arange(-40, 40, dtype=np.int8).reshape(2, 5, 8)
    program = elementwise(SUB, a.shape, (1, 1, 1))
    program = [("IFM2_BROADCAST", (1 << 7) | (1 << 6)) if entry[0] == "IFM2_BROADCAST" else entry for entry in program]
    program.insert(-1, ("IFM2_SCALAR", 9))
    program = _with_precision(program, "OFM_PRECISION", 1 | GLOBAL_SCALE)
    program.insert(-1, ("OPA_SCALE", 1, 0))
    program.insert(-1, ("OPB_SCALE", 1))
    out = _run(program, a)
    assert np.array_equal(out, 9 - a.astype(np.int16))  # reversed operands: scalar - IFM


def test_shifts_and_count_leading_zeros_int32():
    rng = np.random.default_rng(1)
    a = rng.integers(-(1 << 20), 1 << 20, (2, 2, 8), dtype=np.int32)
    amounts = rng.integers(0, 12, (2, 2, 8), dtype=np.int32)
    natural = np.right_shift(a.astype(np.int64) + np.where(amounts > 0, 1 << np.maximum(amounts - 1, 0), 0), amounts)
    shr = _with_precision(elementwise(SHR, a.shape, a.shape, dtype="int32"), "OFM_PRECISION", 5 | (2 << 14))
    assert np.array_equal(_run(shr, a, amounts, ofm_dtype=np.int32), natural)
    shl = elementwise(SHL, a.shape, a.shape, dtype="int32")
    assert np.array_equal(_run(shl, a, amounts, ofm_dtype=np.int32), a.astype(np.int64) << amounts)
    clz = elementwise(CLZ, a.shape, dtype="int32")
    expected = [32 - int(v & 0xFFFFFFFF).bit_length() for v in a.ravel().tolist()]
    assert _run(clz, a, ofm_dtype=np.int32).ravel().tolist() == expected


def test_mul_with_32_bit_operands_applies_only_the_shift():
    a = np.array([1 << 30, -(1 << 29), 12345, -7] * 2, np.int32).reshape(1, 1, 8)
    b = np.array([1 << 30, 3 << 28, -99999, 3] * 2, np.int32).reshape(1, 1, 8)
    program = _with_precision(elementwise(MUL, a.shape, a.shape, dtype="int32", scale=(1 << 30, 31)),
                              "OFM_PRECISION", 5 | GLOBAL_SCALE)
    expected = [(int(x) * int(y) + (1 << 30)) >> 31 for x, y in zip(a.ravel(), b.ravel())]  # SRDHM
    assert _run(program, a, b, ofm_dtype=np.int32).ravel().tolist() == expected


def _dma(src_region, src, dst_region, dst, length, src_mode=0, dst_mode=0, size0=0, size1=0, skip0=0, skip1=0,
         internal=False):
    return [("DMA0_SRC_REGION", src_region | (src_mode << 9)), ("DMA0_SRC", src),
            ("DMA0_DST_REGION", dst_region | (internal << 8) | (dst_mode << 9)), ("DMA0_DST", dst),
            ("DMA0_LEN", length), ("DMA0_SIZE0", size0), ("DMA0_SIZE1", size1), ("DMA0_SKIP0", skip0),
            ("DMA0_SKIP1", skip1), ("NPU_OP_DMA_START", 0), ("NPU_OP_DMA_WAIT", 0)]


def test_dma_1d_2d_3d():
    source = bytes(range(256))
    destination = bytearray(512)
    program = (_dma(0, 0x10, 1, 0x00, 32)  # 1D: 32 contiguous bytes
               + _dma(0, 0x40, 1, 0x40, 4, dst_mode=1, size0=5, skip0=12)  # 2D: 5 rows of 4, pitch 16
               + _dma(0, 0x80, 1, 0x100, 3, src_mode=2, size0=2, size1=3, skip1=10))  # 3D source: planes of 2x3
    stats = Simulator().run(assemble(*program), {0: source, 1: destination})
    assert destination[:32] == source[0x10:0x30]
    for row in range(5):
        assert destination[0x40 + 16 * row : 0x44 + 16 * row] == source[0x40 + 4 * row : 0x44 + 4 * row]
        assert destination[0x44 + 16 * row : 0x50 + 16 * row] == bytes(12)
    planes = [source[0x80 + 16 * p : 0x86 + 16 * p] for p in range(3)]  # plane pitch 3 * 2 + 10
    assert destination[0x100:0x112] == b"".join(planes)
    assert [op.bytes_read for op in stats.ops] == [{0: 32}, {0: 20}, {0: 18}]


def test_lut_8bit_from_shram():
    """Vela's LUT pattern: DMA the table into SHRAM, then ADD a zero scalar with ACTIVATION = TABLE_k."""
    table = np.random.default_rng(2).integers(-128, 128, 256, dtype=np.int8)
    lut_slot = 2
    shram_address = ACCELERATORS["ethos-u55-128"].lut_base + 256 * lut_slot
    a = np.arange(-128, 128, dtype=np.int8).reshape(4, 8, 8)
    program = elementwise(ADD, a.shape, (1, 1, 1), activation=16 + lut_slot)
    program = [("IFM2_BROADCAST", 1 << 7) if entry[0] == "IFM2_BROADCAST" else entry for entry in program]
    program = _with_precision(program, "OFM_PRECISION", 1 | GLOBAL_SCALE)
    program[-1:-1] = [("IFM2_SCALAR", 0), ("OPA_SCALE", 1, 0), ("OPB_SCALE", 1)]
    dma = _dma(2, 0, 3, shram_address, 256, internal=True)
    out = _run(program, a, shram_program=dma, regions={2: table.tobytes()})
    assert np.array_equal(out, table[a.astype(np.int64) + 128])


def test_lut_16bit_interpolation():
    values = np.linspace(-30000, 30000, 513).round().astype(np.int64)  # a LUT of a straight-ish curve
    values = values + (np.arange(513) % 3) * 50
    base, slope = values[:512], np.diff(values)
    words = ((slope & 0xFFFF) << 16) | (base & 0xFFFF)
    a = np.random.default_rng(3).integers(-32768, 32768, (2, 4, 8), dtype=np.int16)
    program = elementwise(ADD, a.shape, (1, 1, 1), dtype="int16", activation=16, act_min=-32768, act_max=32767)
    program = [("IFM2_BROADCAST", 1 << 7) if entry[0] == "IFM2_BROADCAST" else entry for entry in program]
    program = _with_precision(program, "OFM_PRECISION", 3 | GLOBAL_SCALE)
    program[-1:-1] = [("IFM2_SCALAR", 0), ("OPA_SCALE", 1, 0), ("OPB_SCALE", 1)]
    dma = _dma(2, 0, 3, ACCELERATORS["ethos-u55-128"].lut_base, 2048, internal=True)
    out = _run(program, a, ofm_dtype=np.int16, shram_program=dma,
               regions={2: words.astype("<u4").tobytes()})
    expected = []
    for v in a.ravel().tolist():
        index, fraction = (v + 32768) >> 7, (v + 32768) & 127
        expected.append(int(base[index]) + ((int(slope[index]) * fraction + 64) >> 7))
    assert out.ravel().tolist() == expected


def test_uint8_min_with_zero_points_and_clamp():
    """Unsigned feature maps: operands are corrected by their zero points, the result clamped to 0..255."""
    rng = np.random.default_rng(4)
    a = rng.integers(0, 256, (2, 3, 8), dtype=np.uint8)
    b = rng.integers(0, 256, (2, 3, 8), dtype=np.uint8)
    program = elementwise(MIN, a.shape, b.shape, dtype="uint8", act_min=0, act_max=255)
    program = [(name, 128 if name in ("IFM_ZERO_POINT", "IFM2_ZERO_POINT") else 200 if name == "OFM_ZERO_POINT"
                else value, *rest) for name, value, *rest in program]
    expected = np.clip(np.minimum(a.astype(int), b.astype(int)) - 128 + 200, 0, 255)
    assert np.array_equal(_run(program, a, b, ofm_dtype=np.uint8), expected)
