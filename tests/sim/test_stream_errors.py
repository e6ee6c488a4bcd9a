"""Malformed, out-of-bounds and unsupported streams raise SimulatorError with a message that locates the fault."""
import struct
import sys

import numpy as np
import pytest

from ethosu_tvm.sim import Simulator, SimulatorError
from simhelpers import assemble, command, elementwise, feature_map

MAX = 4


@pytest.fixture(autouse=True, params=["run", "check"])
def mode(request, monkeypatch):
    """Every stream here is rejected alike by `Simulator.run` and by its check without arithmetic."""
    monkeypatch.setattr(sys.modules[__name__], "MODE", request.param)


MODE = "run"


def _run(words, regions=None, accelerator="ethos-u55-128"):
    simulator = Simulator(accelerator)
    return getattr(simulator, MODE)(words, regions if regions is not None else {1: bytearray(0xC00)})


def _payload(stream_words, macs_log2=7, declared=None, actions=(), product=0):
    """A COP1 driver payload: Config (macs, product), NOPs, optional extra actions, then CmdStream."""
    words = [int.from_bytes(b"COP1", "little"), 0x00100001, (product << 28) | (24 << 8) | macs_log2, 0, *actions,
             0x05, 0x05]
    length = len(stream_words) if declared is None else declared
    words.append(0x02 | ((length >> 16) << 8) | ((length & 0xFFFF) << 16))
    return struct.pack(f"<{len(words) + len(stream_words)}I", *words, *stream_words)


def test_truncated_stream():
    words = assemble(("IFM_REGION", 1))[:1] + [command("IFM_BASE0", 0x40).words()[0]]
    with pytest.raises(SimulatorError, match=r"command 1 \(word 1\): NPU_SET_IFM_BASE0 needs a payload word"):
        _run(words)


def test_stream_bytes_must_be_whole_words():
    with pytest.raises(SimulatorError, match="7 bytes is not a whole number of 32-bit words"):
        _run(b"\x0f\x01\x01\x00\x00\x00\x00")


def test_unknown_opcodes():
    with pytest.raises(SimulatorError, match=r"command 1 \(word 1\): unknown cmd0 opcode 0x07f"):
        _run([command("IFM_REGION", 1).words()[0], 0x0000007F])
    with pytest.raises(SimulatorError, match=r"command 0 \(word 0\): unknown cmd1 opcode 0x050"):
        _run([0x00004050, 0])
    with pytest.raises(SimulatorError, match=r"word 0x0000810f has reserved bits or an undefined length"):
        _run([0x0000810F])  # payload-size field 2 does not exist


def test_undefined_field_values_and_reserved_bits():
    with pytest.raises(SimulatorError, match=r"NPU_SET_ACTIVATION = 0x0005 has undefined function value 5"):
        _run(assemble(("ACTIVATION", 5)))
    with pytest.raises(SimulatorError, match=r"NPU_SET_IFM_PRECISION = 0x0002 sets reserved bits 0x0002"):
        _run(assemble(("IFM_PRECISION", 2)))
    with pytest.raises(SimulatorError, match=r"NPU_OP_POOL = 0x0003 has undefined mode value 3"):
        _run(assemble(("NPU_OP_POOL", 3)))


def test_stop_is_required_and_final():
    with pytest.raises(SimulatorError, match="ends after 1 commands without NPU_OP_STOP"):
        _run([command("IFM_REGION", 1).words()[0]])
    words = assemble() + list(command("IFM_REGION", 1).words())
    with pytest.raises(SimulatorError, match=r"command 0 \(NPU_OP_STOP\): 1 commands follow it"):
        _run(words)


def test_out_of_bounds_ofm_names_command_register_and_range():
    program = elementwise(MAX, (4, 4, 8), (4, 4, 8))
    base_index = program.index(("OFM_BASE0", 0x800))
    program[base_index] = ("OFM_BASE0", 0xBC0)  # 128 bytes from 0xbc0 run 64 bytes past the 0xc00-byte region
    with pytest.raises(SimulatorError) as error:
        _run(assemble(*program))
    assert str(error.value) == (
        f"command {len(program) - 1} (NPU_OP_ELEMENTWISE): OFM tile 0 at NPU_SET_OFM_BASE0 = 0xbc0 "
        f"(set by command {base_index}): access to bytes [0xbc0, 0xc40) is outside region 1 of 0xc00 bytes"
    )


def test_out_of_bounds_read():
    program = elementwise(MAX, (4, 4, 8), (4, 4, 8))
    program[program.index(("IFM2_BASE0", 0x400))] = ("IFM2_BASE0", 0xBFF)
    with pytest.raises(SimulatorError, match=r"NPU_OP_ELEMENTWISE\): IFM2 tile 0 at NPU_SET_IFM2_BASE0 = 0xbff "
                                             r"\(set by command \d+\): access to bytes \[0xbff, 0xc7f\) is outside "
                                             r"region 1 of 0xc00 bytes"):
        _run(assemble(*program))


def test_out_of_bounds_dma_and_unmapped_or_read_only_regions():
    dma = [("DMA0_SRC_REGION", 0), ("DMA0_SRC", 0x10), ("DMA0_DST_REGION", 1), ("DMA0_DST", 0), ("DMA0_LEN", 0x20),
           ("NPU_OP_DMA_START", 0)]
    expected = (r"command 5 \(NPU_OP_DMA_START\): DMA source at NPU_SET_DMA0_SRC = 0x10 "
                r"\(set by command 1\): access to bytes \[0x10, 0x30\) is outside region 0")
    with pytest.raises(SimulatorError, match=expected):
        _run(assemble(*dma), {0: bytes(0x20), 1: bytearray(0x40)})
    with pytest.raises(SimulatorError, match="region 1 is not mapped"):
        _run(assemble(*dma), {0: bytes(0x40)})
    with pytest.raises(SimulatorError, match="DMA destination at NPU_SET_DMA0_DST = 0x0 .*region 1 is read-only"):
        _run(assemble(*dma), {0: bytes(0x40), 1: bytes(0x40)})


def test_bad_driver_payloads():
    stream = assemble()
    assert _run(_payload(stream)).ops == []
    with pytest.raises(SimulatorError, match=r"CmdStream declares 5 words but only 1 follow \(truncated payload\)"):
        _run(_payload(stream, declared=5))
    with pytest.raises(SimulatorError, match="unknown driver action 9"):
        _run(_payload(stream, actions=(0x09,)))
    with pytest.raises(SimulatorError, match="compiled for Ethos-U55 with 256 MACs/cycle, the simulator models "
                                             "ethos-u55-128"):
        _run(_payload(stream, macs_log2=8))
    with pytest.raises(SimulatorError, match="no CmdStream action"):
        _run(struct.pack("<4I", int.from_bytes(b"COP1", "little"), 0x05, 0x05, 0x05))
    with pytest.raises(SimulatorError, match="Config action is truncated"):
        _run(struct.pack("<2I", int.from_bytes(b"COP1", "little"), 0x00100001))


def test_unsupported_values_name_the_register():
    program = elementwise(MAX, (2, 2, 8), (2, 2, 8), act_min=10, act_max=5)
    with pytest.raises(SimulatorError, match=r"NPU_SET_ACTIVATION_MIN = 0xa \(set by command \d+\): the clip range "
                                             r"\[10, 5\] is empty"):
        _run(assemble(*program))
    program = elementwise(MAX, (2, 2, 8), (2, 2, 8))
    program.insert(-1, ("KERNEL_STRIDE", 1 << 5))
    program[-1] = ("NPU_OP_POOL", 0)
    with pytest.raises(SimulatorError, match="NPU_SET_KERNEL_STRIDE = 0x20 .*4x4 kernel decomposition"):
        _run(assemble(*program))


def test_unknown_accelerator():
    with pytest.raises(ValueError, match="unknown accelerator 'ethos-u85-256'"):
        Simulator("ethos-u85-256")


def test_results_are_unchanged_by_a_failed_write():
    """Bounds are checked before anything is written."""
    region = bytearray(0xC00)
    region[0x800:0x880] = np.full(128, 7, np.uint8).tobytes()
    program = elementwise(MAX, (4, 4, 8), (4, 4, 8))
    program[program.index(("OFM_BASE0", 0x800))] = ("OFM_BASE0", 0xBC0)
    with pytest.raises(SimulatorError):
        _run(assemble(*program), {1: region})
    assert region[0xBC0:] == bytes(0x40)


def test_payload_product_and_cores():
    """A payload names its product and its MACs of all cores; the simulator checks both."""
    stream = assemble()
    assert _run(_payload(stream, macs_log2=9, product=1), accelerator="ethos-u65-512").ops == []
    with pytest.raises(SimulatorError, match=r"^the driver payload was compiled for Ethos-U65 with 256 MACs/cycle, "
                                             r"the simulator models ethos-u55-256 \(256 MACs/cycle\)$"):
        _run(_payload(stream, macs_log2=8, product=1), accelerator="ethos-u55-256")
    with pytest.raises(SimulatorError, match="compiled for Ethos-U65 with 512 MACs/cycle, the simulator models "
                                             "ethos-u65-256"):
        _run(_payload(stream, macs_log2=9, product=1), accelerator="ethos-u65-256")
    with pytest.raises(SimulatorError, match="compiled for unknown product 2 with 256 MACs/cycle"):
        _run(_payload(stream, macs_log2=8, product=2), accelerator="ethos-u65-256")


def test_address_width():
    """Addresses have 40 bits on a U65 (bits 39:32 in the parameter), 32 on a U55; stream lengths 32 on both."""
    program = elementwise(MAX, (2, 2, 8), (2, 2, 8))
    program[program.index(("IFM_BASE0", 0))] = ("IFM_BASE0", 1 << 32)
    with pytest.raises(SimulatorError, match=r"NPU_SET_IFM_BASE0 = 0x100000000 .*access to bytes \[0x100000000, "
                                             r"0x100000020\) is outside region 1"):
        _run(assemble(*program), accelerator="ethos-u65-256")
    with pytest.raises(SimulatorError, match=r"^command \d+ \(word \d+\): NPU_SET_IFM_BASE0 sets value bits beyond "
                                             r"bit 31 \(parameter 0x0001\); it has 32 bits on this accelerator$"):
        _run(assemble(*program))
    with pytest.raises(SimulatorError, match=r"NPU_SET_DMA0_SRC sets value bits beyond bit 39 \(parameter 0x0100\)"):
        _run(assemble(("DMA0_SRC", 1 << 40)), accelerator="ethos-u65-512")
    with pytest.raises(SimulatorError, match=r"NPU_SET_WEIGHT1_LENGTH sets value bits beyond bit 31 \(parameter "
                                             r"0x0001\); it has 32 bits"):
        _run(assemble(("WEIGHT1_LENGTH", 1 << 32)), accelerator="ethos-u65-512")


@pytest.mark.parametrize("accelerator", ["ethos-u55-256", "ethos-u65-256"])
def test_dual_core_mode_needs_two_cores(accelerator):
    program = [("PARALLEL_MODE", 1)] + elementwise(MAX, (2, 2, 8), (2, 2, 8))
    with pytest.raises(SimulatorError, match=rf"^command \d+ \(NPU_OP_ELEMENTWISE\): NPU_SET_PARALLEL_MODE = 0x1 "
                                             rf"\(set by command 0\): 2 cores work on the operation, the "
                                             rf"{accelerator} has 1$"):
        _run(assemble(*program), accelerator=accelerator)
    assert len(_run(assemble(*program), accelerator="ethos-u65-512").ops) == 1


def test_dual_core_reduce_sum_needs_nhwc():
    """Vela's rule for the U65-512: REDUCE_SUM split over two cores reads an NHWC IFM."""
    program = [("PARALLEL_MODE", 1), *feature_map("IFM", 1, 0, (2, 2, 16)), *feature_map("OFM", 1, 0x400, (2, 2, 1),
                                                                                         "int32"),
               ("OFM_SCALE", 1, 0), ("NPU_OP_POOL", 2)]
    assert len(_run(assemble(*program), accelerator="ethos-u65-512").ops) == 1
    program[program.index(("IFM_PRECISION", 1))] = ("IFM_PRECISION", 1 | 1 << 6)
    with pytest.raises(SimulatorError, match=r"NPU_SET_IFM_PRECISION = 0x41 .*: REDUCE_SUM on two cores needs an "
                                             r"NHWC IFM$"):
        _run(assemble(*program), accelerator="ethos-u65-512")
    assert len(_run(assemble(*program[1:]), accelerator="ethos-u65-512").ops) == 1  # one core: any layout
