"""Smoke test of benchmarks/compare.py: the AD model on ethos-u55-128, TFLite Micro skipped."""
from __future__ import annotations

import csv
import importlib.util
import sys
from pathlib import Path

import pytest

from ethosu_tvm.testing import shared_models_dir

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "compare.py"
MODEL = "mlperf_tiny_ad_fc_autoencoder_int8.tflite"


def load_compare():
    spec = importlib.util.spec_from_file_location("benchmarks_compare", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is created
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def compare():
    return load_compare()


def test_compare_ad_model(compare, tmp_path, capsys):
    if not (shared_models_dir() / MODEL).is_file():
        pytest.skip(f"{MODEL} not in {shared_models_dir()}")
    status = compare.main(["--models", MODEL, "--accelerators", "ethos-u55-128", "--skip-tflm",
                           "--out-dir", str(tmp_path)])
    assert status == 0
    assert "### Peak SRAM" in capsys.readouterr().out
    with (tmp_path / "compare.csv").open(newline="") as handle:
        (row,) = list(csv.DictReader(handle))
    assert (row["model"], row["accelerator"]) == (Path(MODEL).stem, "ethos-u55-128")
    assert row["ours_bit_exact"] == "yes"
    assert row["tflm_arena"] == "" and row["sram_vs_tflm"] == ""
    assert int(row["ours_sram"]) == int(row["ours_workspace"]) + int(row["ours_io"])
    for prefix in ("ours", "vela_perf", "vela_size"):
        for measure in ("sram", "flash", "cycles"):
            assert int(row[f"{prefix}_{measure}"]) > 0, f"{prefix}_{measure}"
    for name, (ours_field, vela_fields) in compare.COMPARED.items():
        for prefix in ("vela_perf", "vela_size"):
            expected = int(row[f"ours_{ours_field}"]) / sum(int(row[f"{prefix}_{field}"]) for field in vela_fields)
            assert float(row[f"{name}_vs_{prefix}"]) == pytest.approx(expected, abs=5e-5), name
    sizes = {name: int(row[f"planner_{name}"]) for name in compare.PLANNERS}
    assert all(size >= int(row["planner_lower_bound"]) for size in sizes.values())
    met = min(sizes["hill_climb"], sizes["exact"]) <= sizes["greedy_by_size"]
    assert row["planner_target_met"] == ("yes" if met else "no")
    assert (tmp_path / "compare.md").read_text().startswith("### Peak SRAM")


def test_missing_model_is_one_line(compare, tmp_path, capsys):
    status = compare.main(["--models", "no_such_model.tflite", "--models-dir", str(tmp_path),
                           "--out-dir", str(tmp_path / "out")])
    error = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(error) == 1
    assert error[0].startswith("compare.py: error: model no_such_model.tflite not found in ")
    assert not (tmp_path / "out").exists()
