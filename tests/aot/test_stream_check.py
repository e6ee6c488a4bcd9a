"""A compile never writes a command stream the NPU cannot execute: every stream runs in the simulator first.

The depth-multiplier case is the one that used to slip through (Vela's API encoded a DEPTHWISE with IFM depth 1
and OFM depth 8, which the NPU cannot run); a corrupted operation shows the check itself fires, and so does a missing
wait (a race between DMA and compute)."""
from __future__ import annotations

import re

import pytest
from aot_support import ACCELERATORS, assert_bit_exact, compile_model, npu_target
from ethosu.vela import register_command_stream_generator
from ethosu.vela.register_command_stream_util import MemoryAccessSet

from ethosu_tvm.cli import main as tvmc
from ethosu_tvm.codegen.operations import OperationBuilder
from ethosu_tvm.testing import models


@pytest.mark.parametrize("target", [npu_target(a) for a in ACCELERATORS] + ["c"])
@pytest.mark.parametrize("per_channel", [True, False])
@pytest.mark.parametrize("multiplier", [2, 8])
def test_depth_multiplier_on_one_channel_runs_bit_exactly(multiplier, per_channel, target, tmp_path, capsys):
    """On the NPU (as a convolution) and, with --target=c, as a host convolution."""
    model = models.make("depthwise_conv2d", 0, in_shape=(1, 9, 7, 1), depth_multiplier=multiplier,
                        per_channel=per_channel)
    archive = compile_model(model, tmp_path, target)
    assert ("Offload: 1 operators on" if target != "c" else "Offload: 0 operators") in capsys.readouterr().out
    assert_bit_exact(model, archive, tmp_path)


def test_an_invalid_operation_is_an_internal_error_and_nothing_is_written(tmp_path, capsys, monkeypatch):
    """Code generation made to emit one DEPTHWISE whose IFM is deeper than its OFM: the compile must stop."""
    build = OperationBuilder.build

    def corrupted(self, op, stripe):
        npu_ops = build(self, op, stripe)
        ifm = npu_ops[-1].ifm
        ifm.shape = type(ifm.shape)(ifm.shape.height, ifm.shape.width, ifm.shape.depth + 1)
        return npu_ops

    monkeypatch.setattr(OperationBuilder, "build", corrupted)
    model = models.make("depthwise_conv2d", 0, in_shape=(1, 8, 8, 4))
    (tmp_path / "m.tflite").write_bytes(model)
    status = tvmc(["compile", str(tmp_path / "m.tflite"), f"--target={npu_target('ethos-u55-128')}",
                   "-o", str(tmp_path / "m.tar")])
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert status == 1
    assert error.startswith("tvmc: internal error: InvalidCommandStream: ethos_u_0: the generated command stream "
                            "cannot run on the NPU (depthwise_conv2d:"), error
    assert "DEPTHWISE needs IFM depth = OFM depth (4)" in error
    assert not (tmp_path / "m.tar").exists()


def test_a_race_between_dma_and_compute_is_an_internal_error(tmp_path, capsys, monkeypatch):
    """Vela's API made to believe a DMA touches no memory emits no wait for it: the LUT a logistic's ADD reads
    from SHRAM may then still be loading when the ADD runs, which the sequential run alone would not see."""
    monkeypatch.setattr(register_command_stream_generator, "get_dma_memory_accesses", lambda op: MemoryAccessSet())
    (tmp_path / "m.tflite").write_bytes(models.make("logistic", 0))
    status = tvmc(["compile", str(tmp_path / "m.tflite"), f"--target={npu_target('ethos-u55-128')}",
                   "-o", str(tmp_path / "m.tar")])
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert status == 1
    assert re.fullmatch(r"tvmc: internal error: InvalidCommandStream: ethos_u_0: the generated command stream cannot "
                        r"run on the NPU \(logistic:lv\): command \d+ \(NPU_OP_POOL\) reads region shram "
                        r"\[0x5800, 0x5900\) that command \d+ \(NPU_OP_DMA_START\) may still be writing "
                        r"\(no wait completes it\) \(set ETHOSU_TVM_DEBUG=1 for the traceback\)", error), error
    assert not (tmp_path / "m.tar").exists()
