"""A clone with nothing beside it: `make demo` works with the factory's DS-CNN, and the tests that need the real
model files skip naming ETHOSU_TVM_MODELS, except in CI, where they fail."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# One test that reads a model in its body, and one whose module-scoped fixture does.
NEEDS_MODELS = ["tests/partition/test_offload.py::test_report_table_and_package_export",
                "tests/sim/test_cli.py::test_stats_executed_and_static_agree"]


def _environment(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("ETHOSU_TVM_MODELS", "CI")}
    return {**env, **extra}


def _pytest(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", *NEEDS_MODELS],
                          cwd=ROOT, capture_output=True, text=True,
                          env=_environment(ETHOSU_TVM_MODELS=str(tmp_path), **env))


def test_missing_models_skip_with_the_reason(tmp_path):
    result = _pytest(tmp_path)
    assert result.returncode == 0, result.stdout
    assert result.stdout.splitlines()[-1].startswith("2 skipped")
    reason = f"model mlperf_tiny_kws_dscnn_int8.tflite not found in {tmp_path}; set ETHOSU_TVM_MODELS to the " \
             "folder of the shared models"
    skipped = [line.split(": ", 1) for line in result.stdout.splitlines() if line.startswith("SKIPPED [1] ")]
    assert [(where.split(":")[0], why) for where, why in skipped] == [
        ("SKIPPED [1] tests/partition/test_offload.py", reason), ("SKIPPED [1] tests/sim/test_cli.py", reason)]


def test_missing_models_fail_in_ci(tmp_path):
    result = _pytest(tmp_path, CI="true")
    assert result.returncode == 1
    assert result.stdout.splitlines()[-1].startswith("1 failed, 1 error")
    assert "SharedModelMissing: model mlperf_tiny_kws_dscnn_int8.tflite not found in" in result.stdout


def test_demo_on_a_fresh_clone(tmp_path):
    """`make demo` in a clone of this commit with no model folder beside it (the package from the clone, run by this
    interpreter instead of a new .venv)."""
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    installed = tmp_path / "installed"
    installed.touch()
    result = subprocess.run(["make", "-s", "demo", f"PY={sys.executable}", f"INSTALLED={installed}"], cwd=clone,
                            capture_output=True, text=True, env=_environment(PYTHONPATH=str(clone / "python")))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == ('model: ds_cnn, a KWS-shaped DS-CNN from ethosu_tvm.testing.models.make_graph("ds_cnn") '
                        f"(mlperf_tiny_kws_dscnn_int8.tflite is not in {tmp_path / 'shared' / 'models'}; set "
                        "ETHOSU_TVM_MODELS to the folder that has it)")
    assert "Offload: 9 operators on ethos-u55-128, 0 on the host" in lines
    assert lines[-1] == "bit-exact with LiteRT on 5 inputs: True"
