"""Tutorials are documentation: they must run and say what they claim."""
import subprocess
import sys
from pathlib import Path

from ethosu_tvm.testing import shared_model

TUTORIALS = Path(__file__).resolve().parents[1] / "tutorials"
KWS = "mlperf_tiny_kws_dscnn_int8.tflite"


def test_factory_and_references_tutorial():
    result = subprocess.run([sys.executable, str(TUTORIALS / "factory_and_references.py")], capture_output=True,
                            text=True, check=True)
    assert "bit-exact agreement:         True" in result.stdout
    assert "TFLite Micro minimal arena:" in result.stdout


def test_compile_and_run_tutorial():
    """What `make demo` runs: the default model compiled, run, and bit-exact, with the three summaries (the
    fallback without the model folder: tests/test_fresh_clone.py)."""
    shared_model(KWS)
    result = subprocess.run([sys.executable, str(TUTORIALS / "compile_and_run.py")], capture_output=True, text=True,
                            check=True)
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"model: {KWS} (MLPerf Tiny keyword spotting, from ")
    assert lines[-1] == "bit-exact with LiteRT on 5 inputs: True"
    assert "Offload: 13 operators on ethos-u55-128, 0 on the host" in lines
    assert any(line.startswith("Memory: workspace ") for line in lines)
    assert any(line.startswith("NPU: estimated ") and line.split()[2] != "0" for line in lines)
