"""Smoke test of benchmarks/compare.py: the AD model on ethos-u55-128, TFLite Micro skipped, the cascader curve
with 2 points, and on ethos-u65-256 without the curve; the curve of KWS (two proposals on its frontier) measured
directly."""
from __future__ import annotations

import csv
import importlib.util
from pathlib import Path

import pytest

from ethosu_tvm.testing import shared_model, shared_models_dir

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "compare.py"
MODEL = "mlperf_tiny_ad_fc_autoencoder_int8.tflite"
KWS = "mlperf_tiny_kws_dscnn_int8.tflite"
CURVE_COLUMNS = ["model", "accelerator", "point", "limit", "proposal", "sram", "npu_scratch", "cycles",
                 "estimated_cycles", "estimated_memory", "bit_exact", "compile_s", "cascades", "error",
                 "estimated_vs_measured_cycles"]


def load_compare():
    """compare.py loaded by file path; it puts its folder on sys.path, so its sibling modules import by name."""
    spec = importlib.util.spec_from_file_location("benchmarks_compare", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def compare():
    return load_compare()


@pytest.fixture(scope="module")
def rows(compare):
    return importlib.import_module("rows")


@pytest.fixture(scope="module")
def measure(compare):
    return importlib.import_module("measure")


def test_compare_ad_model(compare, rows, tmp_path, capsys):
    shared_model(MODEL)  # compare.py reads it from the shared folder: missing, the test skips (fails in CI)
    status = compare.main(["--models", MODEL, "--accelerators", "ethos-u55-128", "--skip-tflm",
                           "--cascader-points", "2", "--out-dir", str(tmp_path)])
    assert status == 0
    out = capsys.readouterr().out
    assert "### Peak SRAM" in out and "### Cascader: SRAM vs cycles, mlperf_tiny_ad_fc_autoencoder_int8" in out
    with (tmp_path / "compare.csv").open(newline="") as handle:
        (row,) = list(csv.DictReader(handle))
    assert (row["model"], row["accelerator"]) == (Path(MODEL).stem, "ethos-u55-128")
    assert row["ours_bit_exact"] == "yes"
    assert row["tflm_arena"] == "" and row["sram_vs_tflm"] == ""
    assert int(row["ours_sram"]) == int(row["ours_workspace"]) + int(row["ours_io"])
    for prefix in ("ours", "vela_perf", "vela_size"):
        for measure in ("sram", "flash", "cycles"):
            assert int(row[f"{prefix}_{measure}"]) > 0, f"{prefix}_{measure}"
    for name, (ours_field, vela_fields) in rows.COMPARED.items():
        for prefix in ("vela_perf", "vela_size"):
            expected = int(row[f"ours_{ours_field}"]) / sum(int(row[f"{prefix}_{field}"]) for field in vela_fields)
            assert float(row[f"{name}_vs_{prefix}"]) == pytest.approx(expected, abs=5e-5), name
    sizes = {name: int(row[f"planner_{name}"]) for name in rows.PLANNERS}
    assert all(size >= int(row["planner_lower_bound"]) for size in sizes.values())
    met = min(sizes["hill_climb"], sizes["exact"]) <= sizes["greedy_by_size"]
    assert row["planner_target_met"] == ("yes" if met else "no")
    assert (tmp_path / "compare.md").read_text().startswith("### Peak SRAM")
    check_cascader_files(tmp_path, row)


def test_compare_u65_in_its_own_system(compare, tmp_path, capsys):
    """A U65 row is measured in Ethos_U65_High_End, our build's default: Vela is told that system and our
    simulator costs Vela's stream in it, so on the weight-bound AD model they agree with Vela's own estimate
    (in the U55's system, as before, Vela's stream cost 100,592 cycles, half Vela's own 201,184), and Vela's
    constants are read from the DRAM, where they are on that board."""
    shared_model(MODEL)
    status = compare.main(["--models", MODEL, "--accelerators", "ethos-u65-256", "--skip-tflm", "--skip-cascader",
                           "--out-dir", str(tmp_path)])
    assert status == 0
    assert "| ethos-u65-256 | Ethos_U65_High_End Shared_Sram |" in capsys.readouterr().out
    with (tmp_path / "compare.csv").open(newline="") as handle:
        (row,) = list(csv.DictReader(handle))
    assert row["system"] == "Ethos_U65_High_End Shared_Sram" and row["ours_bit_exact"] == "yes"
    assert 0.95 <= int(row["vela_perf_cycles"]) / int(row["vela_perf_own_total_cycles"]) <= 1.05
    for prefix in ("vela_perf", "vela_size"):
        assert 0.99 <= int(row[f"{prefix}_flash"]) / int(row["ours_flash"]) <= 1, prefix


def check_cascader_files(out_dir: Path, row: dict[str, str]) -> None:
    """AD's frontier has one proposal: a cascaded point at T1's budget (0.9 × Vela Size's SRAM), which no schedule
    fits, one at its memory (also T2's budget, Vela Performance's SRAM), then the default build; both bit-exact."""
    with (out_dir / "compare_cascader.csv").open(newline="") as handle:
        reader = csv.DictReader(handle)
        rows_read = list(reader)
    assert reader.fieldnames == CURVE_COLUMNS
    assert [p["point"] for p in rows_read] == ["cascader", "cascader", "default"]
    refused, *points = rows_read
    cascaded, default = points
    assert int(refused["limit"]) == int(row["vela_size_sram"]) * 9 // 10 and refused["cycles"] == ""
    assert refused["error"] == (f"ethos_u_0: no schedule fits the cascader's SRAM limit of {refused['limit']} bytes;"
                                f" the smallest one found needs {cascaded['npu_scratch']} bytes of NPU scratch")
    assert cascaded["limit"] == row["vela_perf_sram"]
    assert cascaded["proposal"] == "0 of 1" and cascaded["limit"] == cascaded["estimated_memory"]
    assert int(cascaded["npu_scratch"]) <= int(cascaded["limit"])
    assert default["limit"] == "" and default["estimated_cycles"] == ""
    for point in points:
        assert point["bit_exact"] == "yes" and point["error"] == ""
        assert int(point["npu_scratch"]) <= int(point["sram"])
        assert int(point["cycles"]) > 0 and float(point["compile_s"]) > 0
    # The default point is the same build as the main table's I/O-in-workspace column.
    assert int(default["sram"]) == int(row["ours_sram_io_in_workspace"])
    with (out_dir / "compare_cascader_targets.csv").open(newline="") as handle:
        (targets,) = list(csv.DictReader(handle))
    assert int(targets["t1_vela_size_sram"]) == int(row["vela_size_sram"])
    assert int(targets["t2_vela_perf_cycles"]) == int(row["vela_perf_cycles"])
    t1_ok = [p for p in points if int(p["cycles"]) <= int(row["vela_size_cycles"])]
    if t1_ok:
        assert int(targets["t1_sram"]) == min(int(p["sram"]) for p in t1_ok)
    expected_t1 = bool(t1_ok) and 10 * int(targets["t1_sram"]) <= 9 * int(row["vela_size_sram"])
    assert targets["t1_met"] == ("yes" if expected_t1 else "no")
    t2_ok = [p for p in points if int(p["sram"]) <= int(row["vela_perf_sram"])]
    assert targets["t2_met"] == ("yes" if t2_ok and min(int(p["cycles"]) for p in t2_ok)
                                 <= int(row["vela_perf_cycles"]) else "no")
    assert (out_dir / "compare_cascader.md").read_text().startswith("### Cascader: SRAM vs cycles")


def test_cascader_curve_kws(measure):
    """Two limits on KWS's frontier (the fastest proposals buffer weights): the smallest and the largest proposal's
    memory, each getting that proposal, within the limit and bit-exact; a limit below the smallest proposal is a
    failed point with the cascader's one-line message."""
    from ethosu_tvm.testing.reference import random_inputs, run_litert

    model = shared_model(KWS)
    inputs = random_inputs(model, 0)
    expected = run_litert(model, inputs)
    limits = measure.cascader_limits(model, "ethos-u55-128", 2)
    assert len(limits) == 2 and limits[0] < limits[1]
    points = measure.measure_cascader(model, "ethos-u55-128", 2, inputs, expected)
    assert [p.point for p in points] == ["cascader", "cascader", "default"]
    count = int(points[0].proposal.split(" of ")[1])
    assert [p.proposal for p in points[:2]] == [f"0 of {count}", f"{count - 1} of {count}"]
    for point, limit in zip(points, limits):
        assert point.valid and point.limit == limit and point.estimated_memory <= limit
        assert point.npu_scratch <= limit <= point.sram
    assert points[0].sram < points[1].sram and points[0].cycles > points[1].cycles
    assert points[2].valid and points[2].estimated_cycles is None
    failed = measure.measure_cascader_point(model, "ethos-u55-128", limits[0] - 1, inputs, expected)
    assert not failed.valid and failed.sram is None
    assert "no schedule fits the cascader's SRAM limit" in failed.error and "\n" not in failed.error


def test_cascader_points_below_two_is_one_line(compare, tmp_path, capsys):
    status = compare.main(["--models", MODEL, "--cascader-points", "1", "--out-dir", str(tmp_path / "out")])
    error = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and error == ["compare.py: error: --cascader-points must be at least 2 (the smallest and "
                                     "the largest proposal), got 1"]
    assert not (tmp_path / "out").exists()


def test_missing_model_is_one_line(compare, tmp_path, capsys):
    status = compare.main(["--models", "no_such_model.tflite", "--models-dir", str(tmp_path),
                           "--out-dir", str(tmp_path / "out")])
    error = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(error) == 1
    assert error[0].startswith("compare.py: error: model no_such_model.tflite not found in ")
    assert not (tmp_path / "out").exists()


def test_compile_time_table():
    """compile_time.py's row: the ratio of whole processes, and our time after imports against the vela CLI."""
    spec = importlib.util.spec_from_file_location("benchmarks_compile_time", SCRIPT.with_name("compile_time.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    table = module.table({"m": {"vela": 0.25, "ours": 1.5, "imports": 1.0, "after": 0.45}})
    assert table.splitlines()[2] == "| m | 0.25 | 1.50 | 6.0 | 1.00 | 0.45 | 1.8 |"
    inf = float("inf")
    scaling = module.table({"m": {"vela": 0.5, "ours": 1.5, "imports": 1.0, "after": 0.5, "cascader": 2.25},
                            "v": {"vela": 0.5, "ours": inf, "imports": inf, "after": inf, "cascader": inf}},
                           {"m": 84, "v": 1}).splitlines()
    assert scaling[2:] == ["| m | 84 | 0.50 | 1.50 | 3.0 | 1.00 | 0.50 | 1.0 | 2.25 | 4.5 |",
                           "| v | 1 | 0.50 | fails | - | fails | fails | - | fails | - |"]
    assert module.operators(shared_models_dir() / "mlperf_tiny_kws_dscnn_int8.tflite") == 13


@pytest.fixture(scope="module")
def host_ops(compare):
    return importlib.import_module("host_ops")


def test_host_ops_counts_log_softmax_and_conv2d(host_ops, tmp_path):
    """LOG_SOFTMAX has no NPU pattern with us and none in Vela: one operator on each CPU. CONV_2D runs on both
    NPUs: Vela's output is its ethos-u operator alone, our report has no host entry."""
    from ethosu_tvm.testing import models

    softmax, conv = models.make("log_softmax", 0), models.make("conv2d", 0)
    assert host_ops.tflite_operators(softmax) == ["LOG_SOFTMAX"]
    assert host_ops.tflite_operators(conv) == ["CONV_2D"]
    rows = [host_ops.measure_row("log_softmax int8", softmax, "ethos-u55-128", tmp_path),
            host_ops.measure_row("conv2d int8", conv, "ethos-u55-128", tmp_path)]
    assert rows[0].ours == host_ops.Count(("LOG_SOFTMAX (no NPU pattern for LOG_SOFTMAX)",))
    assert rows[0].vela == host_ops.Count(("LOG_SOFTMAX",))
    assert rows[1].ours == rows[1].vela == host_ops.Count(())
    assert host_ops.tflite_operators((tmp_path / "conv2d_int8" / "conv2d_int8_vela.tflite").read_bytes()) == \
        ["ethos-u"]
    assert [row.verdict for row in rows] == ["ok", "ok"]
    assert host_ops.csv_text(rows).splitlines() == [
        "model,ours_host_ops,vela_cpu_ops,verdict,ours_host,vela_cpu",
        "log_softmax int8,1,1,ok,LOG_SOFTMAX (no NPU pattern for LOG_SOFTMAX),LOG_SOFTMAX",
        "conv2d int8,0,0,ok,,"]


def test_host_ops_verdicts(host_ops):
    """More on our host than on Vela's CPU is the verdict to fix; a failure of either tool is named, not counted."""
    Count, Row = host_ops.Count, host_ops.HostOpsRow
    one, none = Count(("EXP (a reason)",)), Count(())
    rows = [Row("a", one, none), Row("b", Count(error="UnsupportedHostOp: x"), none),
            Row("c", one, Count(error="vela failed on c.tflite: y")), Row("d", none, one)]
    assert [row.verdict for row in rows] == ["ours > Vela", "ours failed", "vela failed", "ok"]
    table = host_ops.markdown_table(rows, "ethos-u55-128").splitlines()
    assert table[0] == "### Operators left on the CPU, ethos-u55-128: ours <= Vela on 1 of 4 rows"
    assert table[5] == "| b |  | 0 | ours failed | UnsupportedHostOp: x |  |"
