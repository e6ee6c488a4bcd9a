"""The stage display of long compiles, and `tvmc compile -q`: nothing but errors, the same tarball."""
from __future__ import annotations

import io
import time
from pathlib import Path

from ethosu_tvm.cli import main as tvmc
from ethosu_tvm.cli import progress
from ethosu_tvm.cli.progress import StageDisplay
from ethosu_tvm.testing import models

TARGET = "--target=ethos-u -accelerator-config=ethos-u55-128 -enable-cascader=1,c"
STAGES = ("frontend: importing ", "partition for ethos-u55-128", "legalization", "cascader search ",
          "code generation: ", "memory planning")


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _stages(display: StageDisplay, stages: list[str], pause: float) -> None:
    with display:
        for stage in stages:
            display(stage)
            time.sleep(pause)


def test_short_compile_shows_nothing():
    stream = io.StringIO()
    _stages(StageDisplay(stream, delay=5.0), ["partition", "memory planning"], 0.01)
    assert stream.getvalue() == ""


def test_long_compile_shows_each_stage_once():
    stream = io.StringIO()
    _stages(StageDisplay(stream, delay=0.0, interval=0.01), ["partition", "cascader search 1/2 (g)",
                                                            "cascader search 2/2 (g)"], 0.2)
    assert stream.getvalue() == "tvmc: partition\ntvmc: cascader search 1/2 (g)\ntvmc: cascader search 2/2 (g)\n"


def test_terminal_line_is_rewritten_and_cleared():
    stream = _Terminal()
    _stages(StageDisplay(stream, delay=0.0, interval=0.01), ["partition", "memory planning"], 0.2)
    assert stream.getvalue() == "\r\x1b[Ktvmc: partition\r\x1b[Ktvmc: memory planning\r\x1b[K"


def _compile(tmp_path: Path, name: str, *flags: str) -> tuple[int, Path]:
    model = tmp_path / "m.tflite"
    model.write_bytes(models.make_graph("ds_cnn"))
    output = tmp_path / name
    return tvmc(["compile", str(model), TARGET, "-o", str(output), *flags]), output


def test_quiet_prints_nothing_and_progress_does_not_change_the_tarball(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(progress, "DELAY", 0.0)
    monkeypatch.setattr(progress, "INTERVAL", 0.001)
    status, shown = _compile(tmp_path, "shown.tar")
    out = capsys.readouterr()
    assert status == 0
    lines = out.err.splitlines()
    assert lines and all(line.startswith("tvmc: ") for line in lines)
    assert all(line[len("tvmc: "):].startswith(STAGES) for line in lines), lines
    assert out.out.splitlines()[-1].startswith(f"Wrote {shown} (")

    status, quiet = _compile(tmp_path, "quiet.tar", "-q")
    out = capsys.readouterr()
    assert (status, out.out, out.err) == (0, "", "")
    assert quiet.read_bytes() == shown.read_bytes()


def test_quiet_still_reports_errors(tmp_path, capsys):
    status, output = _compile(tmp_path, "m.tar", "--quiet", "--cascader-sram-limit", "16")
    out = capsys.readouterr()
    assert status == 2 and out.out == "" and not output.exists()
    assert out.err == ("tvmc: error: ethos_u_0: no schedule fits the cascader's SRAM limit of 16 bytes; the smallest "
                       "one found needs 2640 bytes of NPU scratch\n")

