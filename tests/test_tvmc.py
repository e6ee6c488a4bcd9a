"""The `tvmc` entry point exists and, until the compiler lands, says so instead of pretending."""
import subprocess
import sys


def _tvmc(*args):
    return subprocess.run([sys.executable, "-m", "ethosu_tvm", *args], capture_output=True, text=True)


def test_help():
    result = _tvmc("--help")
    assert result.returncode == 0 and "usage: tvmc" in result.stdout


def test_compile_is_not_faked():
    result = _tvmc("compile")
    assert result.returncode == 2
    assert result.stderr.strip() == "tvmc: 'compile' is not implemented yet in this version of ethosu-tvm"
    assert "Traceback" not in result.stderr
