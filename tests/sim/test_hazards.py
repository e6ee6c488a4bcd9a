"""Races between DMA and compute (sim/hazards.py) on hand-assembled streams: a wait missing, the waits present, and
the completions the hardware's queue depths imply."""
import numpy as np
import pytest

from ethosu_tvm.sim import Simulator, SimulatorError
from simhelpers import assemble, elementwise

ABS = 6
SHAPE = (2, 4, 8)  # 64 int8 bytes: IFM at 0x000, OFM at 0x800 of region 1
SOURCE = np.arange(-32, 32, dtype=np.int8).reshape(SHAPE)


def _dma(src: int, dst: int, length: int = 64) -> list[tuple]:
    """A 1D copy from region 0 to region 1."""
    return [("DMA0_SRC_REGION", 0), ("DMA0_SRC", src), ("DMA0_DST_REGION", 1), ("DMA0_DST", dst),
            ("DMA0_LEN", length), ("NPU_OP_DMA_START", 0)]


def _kernel() -> list[tuple]:
    """ABS of the IFM at 0x000 into the OFM at 0x800."""
    return elementwise(ABS, SHAPE)


def _run(program: list[tuple], accelerator: str = "ethos-u55-128") -> bytearray:
    scratch = bytearray(0xC00)
    Simulator(accelerator).run(assemble(*program), {0: SOURCE.tobytes() * 4, 1: scratch}, check_hazards=True)
    return scratch


def _index(program: list[tuple], name: str, occurrence: int = 0) -> int:
    """The command number of the `occurrence`-th command `name` in the program."""
    return [i for i, entry in enumerate(program) if entry[0] == name][occurrence]


def test_kernel_reading_what_a_dma_may_still_write():
    program = _dma(0, 0x000) + _kernel()
    message = (f"command {_index(program, 'NPU_OP_ELEMENTWISE')} (NPU_OP_ELEMENTWISE) reads region 1 [0x0, 0x40) "
               f"that command {_index(program, 'NPU_OP_DMA_START')} (NPU_OP_DMA_START) may still be writing "
               f"(no wait completes it)")
    with pytest.raises(SimulatorError) as error:
        _run(program)
    assert str(error.value) == message


def test_dma_overwriting_what_a_kernel_may_still_read():
    program = _kernel() + _dma(0x40, 0x000)
    message = (f"command {_index(program, 'NPU_OP_DMA_START')} (NPU_OP_DMA_START) writes region 1 [0x0, 0x40) "
               f"that command {_index(program, 'NPU_OP_ELEMENTWISE')} (NPU_OP_ELEMENTWISE) may still be reading "
               f"(no wait completes it)")
    with pytest.raises(SimulatorError) as error:
        _run(program)
    assert str(error.value) == message


def test_dma_reading_what_a_kernel_may_still_write():
    program = _kernel() + [("DMA0_SRC_REGION", 1), ("DMA0_SRC", 0x810), ("DMA0_DST_REGION", 1), ("DMA0_DST", 0x400),
                           ("DMA0_LEN", 16), ("NPU_OP_DMA_START", 0)]
    with pytest.raises(SimulatorError, match=r"\(NPU_OP_DMA_START\) reads region 1 \[0x810, 0x820\) that command "
                                             r"\d+ \(NPU_OP_ELEMENTWISE\) may still be writing"):
        _run(program)


def test_waits_order_them():
    scratch = _run(_dma(0, 0x000) + [("NPU_OP_DMA_WAIT", 0)] + _kernel() + [("NPU_OP_KERNEL_WAIT", 0)]
                   + _dma(0x40, 0x000))
    assert scratch[0x800:0x840] == np.abs(SOURCE).tobytes()
    assert scratch[:0x40] == SOURCE.tobytes()


def test_dma_queue_depth_completes_older_transfers():
    """The U55 runs one DMA at a time, so issuing a second completes the first; the U65 runs two."""
    program = _dma(0, 0x000) + _dma(0x40, 0x400) + _kernel()
    assert _run(program)[0x800:0x840] == np.abs(SOURCE).tobytes()
    with pytest.raises(SimulatorError, match=r"reads region 1 \[0x0, 0x40\) that command 5 \(NPU_OP_DMA_START\)"):
        _run(program, "ethos-u65-256")
    _run(_dma(0, 0x000) + _dma(0x40, 0x400) + [("NPU_OP_DMA_WAIT", 1)] + _kernel(), "ethos-u65-256")


def test_kernel_queue_depth_completes_older_kernels():
    """At most two kernels run at once: a DMA after three kernels may overwrite the first one's input."""
    moved = {**{f"IFM_BASE{t}": 0x400 for t in range(4)}, **{f"OFM_BASE{t}": 0x900 for t in range(4)}}
    later = [(entry[0], moved[entry[0]]) if entry[0] in moved else entry for entry in _kernel()]
    _run(_kernel() + later + later + _dma(0x40, 0x000))
    with pytest.raises(SimulatorError, match=r"writes region 1 \[0x0, 0x40\) that command \d+ \(NPU_OP_ELEMENTWISE"):
        _run(_kernel() + later + _dma(0x40, 0x000))


def test_lut_load_waits_for_kernels_using_its_banks():
    """Without a table a kernel may use every bank of a 16-bank SHRAM, the LUT's included; larger ones keep them
    in reserve."""
    lut = [("DMA0_SRC_REGION", 0), ("DMA0_SRC", 0), ("DMA0_DST_REGION", 1 << 8), ("DMA0_DST", 0x3800),
           ("DMA0_LEN", 256), ("NPU_OP_DMA_START", 0)]
    with pytest.raises(SimulatorError, match=r"writes region shram \[0x3800, 0x3900\) that command \d+ "
                                             r"\(NPU_OP_ELEMENTWISE\) may still be writing"):
        _run(_kernel() + lut, "ethos-u55-64")
    _run(_kernel() + [("NPU_OP_KERNEL_WAIT", 0)] + lut, "ethos-u55-64")
    _run(_kernel() + lut[:3] + [("DMA0_DST", 0x5800)] + lut[4:], "ethos-u55-128")
