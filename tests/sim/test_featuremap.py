"""NHWC / NHCWB16 addressing with up to four tiles, checked element by element against the address formulas."""
import numpy as np
import pytest

from ethosu_tvm.sim import SimulatorError
from ethosu_tvm.sim.featuremap import FeatureMap, read, write
from ethosu_tvm.sim.memory import Memory


def _fm(shape, dtype, brick, bases, width0, height0, height1, stride_y, stride_x, stride_c):
    return FeatureMap("OFM", 1, tuple(bases), *shape, width0, height0, height1, stride_y, stride_x, stride_c,
                      np.dtype(dtype), brick, 0, tuple(f"tile {t}" for t in range(4)))


def _address(fm: FeatureMap, y: int, x: int, c: int) -> int:
    """The addressing rule, one element at a time."""
    tile = 0
    if x >= fm.width0:
        x -= fm.width0
        tile = 1
        if y >= fm.height1:
            y -= fm.height1
            tile = 3
    elif y >= fm.height0:
        y -= fm.height0
        tile = 2
    elem = fm.dtype.itemsize
    if fm.brick:
        return fm.bases[tile] + y * fm.stride_y + x * 16 * elem + (c // 16) * fm.stride_c + (c % 16) * elem
    return fm.bases[tile] + y * fm.stride_y + x * fm.stride_x + c * elem


def _check(fm: FeatureMap, size: int = 1 << 16):
    values = np.random.default_rng(0).integers(np.iinfo(fm.dtype).min, np.iinfo(fm.dtype).max, size=fm.shape,
                                               dtype=fm.dtype)
    region = bytearray(size)
    memory = Memory({1: region}, 1024)
    write(memory, fm, values)
    for (y, x, c), value in np.ndenumerate(values):
        address = _address(fm, y, x, c)
        assert np.frombuffer(region, fm.dtype, count=1, offset=address)[0] == value, (y, x, c)
    assert np.array_equal(read(memory, fm), values)
    assert memory.bytes_written[1] == memory.bytes_read[1] == values.nbytes


def test_nhwc_single_tile_with_padded_strides():
    _check(_fm((3, 4, 5), np.int8, False, [64, 0, 0, 0], 4, 3, 3, stride_y=40, stride_x=8, stride_c=999))


def test_nhcwb16_partial_last_brick():
    # 20 channels: one whole brick and 4 channels of the second; STRIDE_X is not used in this layout
    _check(_fm((2, 3, 20), np.int8, True, [16, 0, 0, 0], 3, 2, 2, stride_y=2 * 3 * 32, stride_x=0, stride_c=48))


def test_nhcwb16_int16_and_int32():
    _check(_fm((2, 2, 17), np.int16, True, [0, 0, 0, 0], 2, 2, 2, stride_y=256, stride_x=0, stride_c=64))
    _check(_fm((2, 2, 3), np.int32, True, [0, 0, 0, 0], 2, 2, 2, stride_y=128, stride_x=0, stride_c=128))


def test_four_tiles_nhwc():
    # width 5 split at 2, tile 0/2 split at row 3, tile 1/3 split at row 1; each tile in its own buffer
    _check(_fm((5, 5, 3), np.int8, False, [0, 1000, 2000, 3000], width0=2, height0=3, height1=1, stride_y=32,
               stride_x=4, stride_c=1))


def test_four_tiles_nhcwb16_int16():
    _check(_fm((4, 6, 18), np.int16, True, [0, 16384, 32768, 49152], width0=4, height0=2, height1=3,
               stride_y=2048, stride_x=0, stride_c=256))


def test_ring_buffer_wraps_rows():
    """A ring buffer of 3 rows: rows 3.. continue at the start of the buffer (tile 2 base = tile 0 base)."""
    fm = _fm((5, 2, 4), np.int8, False, [0, 0, 0, 0], width0=2, height0=3, height1=5, stride_y=8, stride_x=4,
             stride_c=1)
    values = np.arange(40, dtype=np.int8).reshape(5, 2, 4)
    region = bytearray(24)
    memory = Memory({1: region}, 1024)
    write(memory, fm, values)  # rows 3 and 4 overwrite rows 0 and 1
    assert np.frombuffer(region, np.int8).reshape(3, 2, 4).tolist() == [values[3].tolist(), values[4].tolist(),
                                                                        values[2].tolist()]


def test_tile_outside_region_is_reported():
    fm = _fm((4, 4, 4), np.int8, False, [0, 0, 60, 0], width0=4, height0=2, height1=4, stride_y=16, stride_x=4,
             stride_c=1)
    memory = Memory({1: bytearray(64)}, 1024)
    with pytest.raises(SimulatorError, match=r"tile 2: access to bytes \[0x3c, 0x5c\) is outside region 1 of 0x40"):
        write(memory, fm, np.zeros((4, 4, 4), np.int8))
