"""16x8 convolutions (int16 IFM, int8 weights, int64 bias) in Vela 5.2's command streams and in ours, read back by the
simulator: the requantization each programs, and what LiteRT's reference kernels say about it.

CONV_2D and DEPTHWISE_CONV_2D: Vela programs TFLite's 16x8 requantization, the Q31 multiplier rounded to 16 bits with
a right shift of 15 − e, OFM round mode NATURAL (one rounding, half up) and 40-bit accumulators; our streams carry
the same scale records byte for byte, and both equal LiteRT. FULLY_CONNECTED: Vela uses the 16-bit multiplier too,
where LiteRT 2.3's reference kernel scales with the 32-bit one (still rounding once), so Vela's stream differs from
LiteRT by 1 LSB here and there; ours carries the 32-bit multiplier and is exact.
"""
import numpy as np
import pytest

from ethosu_tvm.codegen import compile_npu_graphs
from ethosu_tvm.frontend.importer import from_tflite
from ethosu_tvm.legalize import legalize
from ethosu_tvm.partition import partition_for_ethosu
from ethosu_tvm.sim import Simulator, scales, vela_tflite
from ethosu_tvm.sim.quant import Rounding
from ethosu_tvm.sim.regfile import RegisterFile
from ethosu_tvm.sim.registers import Kind
from ethosu_tvm.target import EthosuTarget
from ethosu_tvm.testing import models
from ethosu_tvm.testing.reference import random_inputs, run_litert

ACCELERATOR = "ethos-u55-128"
ACC_40_BIT = 1  # ACC_FORMAT.format
CONVOLUTIONS = {"conv2d": dict(in_shape=(1, 9, 9, 20), stride=(2, 2)), "depthwise_conv2d": dict(kernel=(5, 5))}
FULLY_CONNECTED = dict(in_shape=(64, 24), units=32)  # 2048 outputs: enough for the rounding differences to show


def _programmed(stream, regions: dict[int, bytes]) -> list[tuple[Rounding, int, scales.ChannelScales]]:
    """(OFM round mode, ACC_FORMAT, scale records) of each convolution command of a stream."""
    regs, found = RegisterFile(), []
    for command in Simulator(ACCELERATOR).commands(stream):
        if command.opcode.kind is not Kind.OPERATION:
            regs.set(command)
        elif command.opcode.name in ("NPU_OP_CONV", "NPU_OP_DEPTHWISE"):
            base, length = regs.raw("SCALE_BASE"), regs.raw("SCALE_LENGTH")
            records = scales.parse_records(regions[regs.param("SCALE_REGION")][base:base + length],
                                           length // scales.RECORD_BYTES)
            found.append((Rounding(regs.field("OFM_PRECISION", "round_mode")), regs.field("ACC_FORMAT", "format"),
                          records))
    return found


def _vela(name: str, model: bytes, vela) -> tuple[vela_tflite.VelaModel, list]:
    parsed = vela_tflite.parse(vela(name, model, ACCELERATOR, "Performance"))
    regions = {index: region.data for index, region in parsed.regions.items() if region.data is not None}
    return parsed, _programmed(parsed.command_stream, regions)


def _ours(model: bytes):
    mod, _ = partition_for_ethosu(from_tflite(model), ACCELERATOR)
    (artifact,) = compile_npu_graphs(legalize(mod), EthosuTarget(ACCELERATOR))
    return artifact, _programmed(artifact.driver_payload, {0: artifact.constants})


def _same(a: scales.ChannelScales, b: scales.ChannelScales) -> bool:
    return all(np.array_equal(getattr(a, f), getattr(b, f)) for f in ("bias", "multiplier", "shift"))


@pytest.mark.parametrize("op", CONVOLUTIONS)
def test_16x8_convolution_scale_records_equal_velas(op, vela):
    model = models.make(op, 4, dtype="int16", **CONVOLUTIONS[op])
    _, theirs = _vela(f"{op}_16x8", model, vela)
    _, ours = _ours(model)
    assert len(theirs) == len(ours) == 1
    (rounding, acc_format, records), (our_rounding, our_acc_format, our_records) = theirs[0], ours[0]
    assert (rounding, acc_format) == (our_rounding, our_acc_format) == (Rounding.NATURAL, ACC_40_BIT)
    assert _same(records, our_records)
    assert np.all(records.multiplier < 1 << 15)


def test_16x8_fully_connected_needs_the_32_bit_multiplier(vela):
    """The same model as tests/codegen/test_sixteen_by_eight.py's "fc_batch", whose stream (ours) equals LiteRT."""
    model = models.make("fully_connected", 4, dtype="int16", **FULLY_CONNECTED)
    parsed, ((rounding, _, records),) = _vela("fully_connected_16x8", model, vela)
    _, ((our_rounding, _, our_records),) = _ours(model)
    assert rounding == our_rounding == Rounding.NATURAL
    assert np.all(records.multiplier < 1 << 15) and np.all(our_records.multiplier >= 1 << 30)
    for seed in range(3):
        inputs = random_inputs(model, seed)
        assert not np.array_equal(vela_tflite.execute(parsed, inputs, ACCELERATOR)[0][0], run_litert(model, inputs)[0])
