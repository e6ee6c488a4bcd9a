"""Tutorials are documentation: they must run and say what they claim."""
import subprocess
import sys
from pathlib import Path

TUTORIALS = Path(__file__).resolve().parents[1] / "tutorials"


def test_factory_and_references_tutorial():
    result = subprocess.run([sys.executable, str(TUTORIALS / "factory_and_references.py")], capture_output=True,
                            text=True, check=True)
    assert "bit-exact agreement:         True" in result.stdout
    assert "TFLite Micro minimal arena:" in result.stdout
