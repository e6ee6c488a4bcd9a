"""`tvmc compile --dump-per-layer FILE.csv` and `-v`: one row per TFLite operator, in model order, whose cycles sum
to the compile summary's NPU figure and agree with what the simulator measures when the model runs."""
from __future__ import annotations

import csv
import io
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

import ethosu_tvm
from ethosu_tvm.cli import main as tvmc
from ethosu_tvm.debug_layers import layer_tensors, read_dump
from ethosu_tvm.frontend.attributes import op_outputs
from ethosu_tvm.layer_report import COLUMNS, layer_rows, operator_claims
from ethosu_tvm.testing import models, shared_model
from ethosu_tvm.testing.reference import random_inputs, run_litert

NUMBERS = COLUMNS[4:12]
DS_CNN_OPS = ["CONV_2D", "DEPTHWISE_CONV_2D", "CONV_2D", "DEPTHWISE_CONV_2D", "CONV_2D", "AVERAGE_POOL_2D",
              "RESHAPE", "FULLY_CONNECTED", "SOFTMAX"]
# MACs of the factory's DS-CNN from its shapes: a 10x4 stride-2 convolution 49x10x1 → 25x5x16, 3x3 depthwise and
# 1x1 pointwise convolutions on 25x5x16, the 16 → 12 fully connected layer.
DS_CNN_MACS = {0: 25 * 5 * 16 * 10 * 4, 1: 25 * 5 * 16 * 9, 2: 25 * 5 * 16 * 16, 3: 25 * 5 * 16 * 9,
               4: 25 * 5 * 16 * 16, 7: 16 * 12}


def _summary_cycles(text: str) -> tuple[int, int]:
    """The summary's sum of the operations' cycles, and its elapsed figure."""
    (figures,) = re.findall(r"^NPU: estimated (\d+) cycles per inference .*, (\d+) elapsed with weight DMAs", text,
                            re.MULTILINE)
    return int(figures[0]), int(figures[1])


def _measured(module, model: bytes):
    """Cycles, MACs and traffic the simulator measures at the memory interface while the model runs."""
    module.run(random_inputs(model, 0))
    ops = [op for launch in module._runner.stats for op in launch.ops]
    read = sum((Counter(op.bytes_read) for op in ops), Counter())
    written = sum((Counter(op.bytes_written) for op in ops), Counter())
    return sum(op.cycles for op in ops), sum(op.macs for op in ops), read, written


@pytest.mark.parametrize("cascader,system", [(False, "Ethos_U55_High_End_Embedded"),
                                             (True, "Ethos_U55_High_End_Embedded"),
                                             (False, "Ethos_U55_Deep_Embedded")])
def test_factory_ds_cnn_rows(cascader, system):
    """The rows, the summary and the simulator agree in the target's system (not only Vela's default one)."""
    model = models.make_graph("ds_cnn")
    target = f"ethos-u -accelerator-config=ethos-u55-128 -system-config={system}" \
             f"{' -enable-cascader=1' if cascader else ''},c"
    module = ethosu_tvm.build(ethosu_tvm.from_tflite(model), target=target)
    rows = layer_rows(module)
    assert [(r.index, r.operator, r.target) for r in rows] == \
        [(i, op, "NPU") for i, op in enumerate(DS_CNN_OPS)]
    assert {i: rows[i].macs for i in DS_CNN_MACS} == DS_CNN_MACS
    assert rows[6].became == "no operation: its input is written where its output goes (a view)"  # the RESHAPE
    single = [r for r in rows[:8] if "x" not in r.became and "DMA" not in r.became and r.index != 6]
    assert single and all(r.became.startswith("ethos_u_0 Npu") and r.cycles == max(r.compute_cycles, r.memory_cycles)
                          for r in single)  # one operation each: its cycles are max(compute, memory)
    # a convolution after the DMA of its weights into SRAM: its row also carries what the DMA outlasts the one before
    assert all(r.became.startswith("ethos_u_0 DMA, ethos_u_0 Npu")
               and r.cycles >= max(r.compute_cycles, r.memory_cycles) for r in rows[:8] if "DMA" in r.became)
    assert rows[8].became == "ethos_u_0 NpuElementWiseOperation x33, ethos_u_0 DMA"  # the softmax's sequence
    total, elapsed = _summary_cycles(module.summary())
    assert sum(r.cycles for r in rows) == total

    cycles, macs, read, written = _measured(module, model)
    assert elapsed == module.npu_cycles <= total  # what running it reports: the DMAs overlap the operations
    npu = rows
    assert sum(r.cycles for r in npu) == cycles
    assert sum(r.macs for r in npu) == macs
    assert sum(r.flash_read for r in npu) == read[0] and sum(r.flash_written for r in npu) == written[0] == 0
    assert sum(r.sram_read for r in npu) == sum(v for k, v in read.items() if k not in (0, "shram"))
    assert sum(r.sram_written for r in npu) == sum(v for k, v in written.items() if k not in (0, "shram"))
    if cascader:
        # the pool, the reshape (a view) and the FC run once each, as a cascade of one stripe
        assert [r.cascade for r in rows] == ["ethos_u_0 cascade 0: ops 0-4 in 25 stripes"] * 5 + \
            ["ethos_u_0 cascade 1: ops 5-7 in 1 stripes"] * 3 + [""]
        assert rows[0].became == "ethos_u_0 NpuConv2DOperation x25"
    else:
        assert all(r.cascade == "" for r in rows)


def test_two_launches_keep_their_operators():
    """multi_io: CONV_2D + ADD in one NPU launch, MUL + MAX_POOL_2D in another; MAX_POOL_2D's single Relax binding
    is renamed by fusion, and still finds its row."""
    module = ethosu_tvm.build(ethosu_tvm.from_tflite(models.make_graph("multi_io")),
                              target="ethos-u -accelerator-config=ethos-u55-64,c")
    rows = layer_rows(module)
    assert [(r.operator, r.became) for r in rows] == [
        ("CONV_2D", "ethos_u_0 NpuConv2DOperation"), ("ADD", "ethos_u_0 NpuElementWiseOperation"),
        ("MUL", "ethos_u_1 NpuElementWiseOperation"), ("MAX_POOL_2D", "ethos_u_1 NpuPoolingOperation")]
    assert rows[0].macs == 8 * 8 * 4 * 3 * 3 * 4  # 3x3 convolution, 4 → 4 channels on 8x8
    assert all(r.cycles > 0 for r in rows)
    assert sum(r.cycles for r in rows) == _summary_cycles(module.summary())[0]


def test_kws_csv_and_verbose_table(tmp_path, capsys):
    model = tmp_path / "kws.tflite"
    model.write_bytes(shared_model("mlperf_tiny_kws_dscnn_int8.tflite"))
    dump = tmp_path / "layers.csv"
    assert tvmc(["compile", str(model), "--target=ethos-u -accelerator-config=ethos-u55-128,c", "-v",
                 "--dump-per-layer", str(dump), "-o", str(tmp_path / "kws.tar")]) == 0
    out = capsys.readouterr().out
    with dump.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert tuple(rows[0]) == COLUMNS
    assert [int(r["index"]) for r in rows] == list(range(13))
    assert [r["target"] for r in rows] == ["NPU"] * 13
    assert [r["operator"] for r in rows[:3]] == ["CONV_2D", "DEPTHWISE_CONV_2D", "CONV_2D"]
    assert int(rows[0]["macs"]) == 25 * 5 * 64 * 10 * 4  # 49x10x1 → 25x5x64, 10x4 kernel
    assert sum(int(r["cycles"]) for r in rows) == _summary_cycles(out)[0]

    table = out[out.index("index  operator"):out.index("\nWrote ")].splitlines()
    assert len(table) == 1 + 13 + 1
    assert table[-1].split() == ["total"] + [str(sum(int(r[c]) for r in rows)) for c in NUMBERS]
    assert table[13].split()[:3] == ["12", "SOFTMAX", "NPU"]


def test_quiet_and_verbose_exclude_each_other(tmp_path, capsys):
    model = tmp_path / "m.tflite"
    model.write_bytes(models.make("conv2d", 0))
    assert tvmc(["compile", str(model), "--target=c", "-q", "-v", "-o", str(tmp_path / "m.tar")]) == 2
    assert capsys.readouterr().err == "tvmc: error: -q and -v cannot be combined\n"
    assert not Path(tmp_path / "m.tar").exists()


def test_csv_of_a_host_only_build(tmp_path, capsys):
    """No NPU: every row is a host kernel, no cycles, and the summary has no NPU line."""
    model = tmp_path / "m.tflite"
    model.write_bytes(models.make_graph("ds_cnn"))
    dump = tmp_path / "layers.csv"
    assert tvmc(["compile", str(model), "--target=c", "--dump-per-layer", str(dump), "-o",
                 str(tmp_path / "m.tar")]) == 0
    assert "NPU: estimated" not in capsys.readouterr().out
    rows = list(csv.DictReader(io.StringIO(dump.read_text())))
    assert [r["operator"] for r in rows] == DS_CNN_OPS
    assert all(r["target"] == "host" and r["cycles"] == "0" and r["became"].startswith("tvmgen_default_")
               for r in rows)


@pytest.mark.parametrize("op,outputs", [("split", 2), ("split_v", 3)])
def test_operator_with_several_host_kernels(op, outputs):
    """SPLIT becomes one one-binding slice kernel per output, none of which keeps a name of the operator's: all of
    them are SPLIT's (this used to end in StopIteration)."""
    module = ethosu_tvm.build(ethosu_tvm.from_tflite(models.make(op, 0)), target="c")
    (row,) = layer_rows(module)
    assert (row.index, row.operator, row.target) == (0, op.upper(), "host")
    assert row.became == ", ".join(f"tvmgen_default_strided_slice_{i}" for i in range(outputs))


@pytest.mark.parametrize("kind,name", [("op", op) for op in models.OPS] + [("graph", g) for g in models.GRAPHS])
def test_every_step_has_its_operator(kind, name):
    """Every factory op kind and graph on ethos-u55-128: each step (each composite of an NPU launch, each host
    kernel) is attributed to its TFLite operator, the report has a row of what each became and the layer-dump map
    is made. An NPU piece of an operator reported on the host (SPACE_TO_BATCH_ND's pad) and a composite legalized
    to several primitives (REDUCE_MIN, PACK, BATCH_MATMUL, ARG_MAX) used to end in an internal error."""
    model = models.make(name, 0) if kind == "op" else models.make_graph(name, 0)
    module = ethosu_tvm.build(ethosu_tvm.from_tflite(model), target="ethos-u -accelerator-config=ethos-u55-128,c")
    operators = len(module.offload.ops)
    claims = [claim for step in operator_claims(module) for claim in step]
    assert claims == ([{0}] * len(claims) if kind == "op" else [{i} for i in range(operators)])
    assert kind == "graph" or operators == 1
    rows = layer_rows(module)
    assert [row.index for row in rows] == list(range(operators))
    assert all(row.became and row.became != "fused into another" for row in rows)
    dumped = [tensor.operator for tensor in layer_tensors(module)]
    single = [i for i, outputs in enumerate(op_outputs(module.partitioned)) if len(outputs) == 1]
    assert dumped == single if kind == "op" else set(dumped) <= set(single) and dumped == sorted(set(dumped))


def test_operator_reported_on_the_host_with_an_npu_piece(tmp_path, capsys):
    """SPACE_TO_BATCH_ND stays on the host (its 6-D reshape), but its pad is the first NPU launch: its row holds
    the launch and the three host kernels, and tvmc run --debug-layers dumps its output."""
    model = tmp_path / "m.tflite"
    model.write_bytes(models.make("space_to_batch_nd", 0))
    dump = tmp_path / "layers.csv"
    archive = tmp_path / "m.tar"
    assert tvmc(["compile", str(model), "--target=ethos-u -accelerator-config=ethos-u55-128,c", "-v", "--debug-info",
                 "--dump-per-layer", str(dump), "-o", str(archive)]) == 0
    summary = _summary_cycles(capsys.readouterr().out)
    (row,) = csv.DictReader(io.StringIO(dump.read_text()))
    assert (row["operator"], row["target"], row["became"]) == (
        "SPACE_TO_BATCH_ND", "host", "ethos_u_0 NpuPoolingOperation x4, tvmgen_default_reshape_0, "
        "tvmgen_default_transpose_0, tvmgen_default_reshape_1")
    assert int(row["cycles"]) == summary[0] > 0
    assert tvmc(["run", str(archive), "--debug-layers", str(tmp_path / "dump")]) == 0
    index, arrays = read_dump(tmp_path / "dump")
    assert [(entry["operator"], entry["kind"]) for entry in index] == [(0, "SPACE_TO_BATCH_ND")]
    rng = np.random.default_rng(0)  # tvmc run's seeded random inputs
    inputs = [rng.integers(-128, 128, size=(1, 6, 6, 4), dtype=np.int8)]
    assert np.array_equal(arrays[index[0]["name"]], run_litert(models.make("space_to_batch_nd", 0), inputs)[0])
