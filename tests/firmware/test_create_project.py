"""`tvmc micro create-project`: the project's files, and its errors in one line with nothing left behind.
Building and running the projects: tests/qemu/test_qemu_project.py."""
from __future__ import annotations

import io
import tarfile
from pathlib import Path

import numpy as np
import pytest

from ethosu_tvm.cli import main as tvmc
from ethosu_tvm.testing import models


@pytest.fixture(scope="module")
def module(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("module")
    (folder / "m.tflite").write_bytes(models.make("conv2d"))
    assert tvmc(["compile", "--target=c", str(folder / "m.tflite"), "-o", str(folder / "m.tar"), "-q"]) == 0
    return folder / "m.tar"


def _create(*args: str) -> int:
    return tvmc(["micro", "create-project", *args])


def test_project_files(tmp_path, module, capsys):
    assert _create(str(tmp_path / "p"), str(module), "corstone300", "--fill-mode", "zeros") == 0
    files = sorted(str(p.relative_to(tmp_path / "p")) for p in (tmp_path / "p").rglob("*") if p.is_file())
    assert files[:6] == ["CMakeLists.txt", "arm-none-eabi.cmake", "corstone300.cmake", "corstone300.ld", "dump.h",
                         "main.c"]
    assert "model/CMakeLists.txt" in files and "startup.c" in files
    with tarfile.open(module) as tar:
        assert sorted(f"model/{m.name[2:]}" for m in tar.getmembers() if m.isfile()) == \
            [f for f in files if f.startswith("model/")]
    main_c = (tmp_path / "p/main.c").read_text()
    assert "ethosu_init" not in main_c and "0x00, 0x00, 0x00" in main_c  # host-only; --fill-mode zeros
    assert capsys.readouterr().out.startswith(f"Wrote {tmp_path / 'p'}: build it with cmake -S ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p"]  # no work folder left


def _npz(path: Path, **arrays) -> Path:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    path.write_bytes(buffer.getvalue())
    return path


def _no_model(tmp_path: Path) -> str:
    with tarfile.open(tmp_path / "other.tar", "w") as tar:
        tar.add(_npz(tmp_path / "x.npz", x=np.zeros(1)), "x.npz")
    return str(tmp_path / "other.tar")


@pytest.mark.parametrize("case", ["missing", "not a tarball", "no model", "exists", "inputs", "template"])
def test_errors_are_one_line_and_leave_nothing(tmp_path, module, capsys, case):
    (tmp_path / "junk.tar").write_bytes(b"not a tar")
    (tmp_path / "there").mkdir()
    project, tar, extra = tmp_path / "p", str(module), []
    expected = {
        "missing": f"module file {tmp_path / 'none.tar'} does not exist",
        "not a tarball": f"{tmp_path / 'junk.tar'} is not a readable MLF tarball",
        "no model": f"{tmp_path / 'other.tar'} is not an MLF tarball from ethosu-tvm (no src/interface.json)",
        "exists": f"{tmp_path / 'there'} exists (-f replaces it)",
        "inputs": "inputs must be named input_0; unknown: x; missing: input_0",
        "template": "argument template: invalid choice: 'zephyr' (choose from 'corstone300')",
    }[case]
    template = "zephyr" if case == "template" else "corstone300"
    if case == "missing":
        tar = str(tmp_path / "none.tar")
    elif case == "not a tarball":
        tar = str(tmp_path / "junk.tar")
    elif case == "no model":
        tar = _no_model(tmp_path)
    elif case == "exists":
        project = tmp_path / "there"
    elif case == "inputs":
        extra = ["--inputs", str(_npz(tmp_path / "in.npz", x=np.zeros(4, np.int8)))]
    before = sorted(p.name for p in tmp_path.iterdir())
    assert _create(str(project), tar, template, *extra) == 2
    assert capsys.readouterr().err == f"tvmc: error: {expected}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert not any((tmp_path / "there").iterdir())


def test_force_replaces_the_folder(tmp_path, module):
    (tmp_path / "p").mkdir()
    (tmp_path / "p/old.txt").write_text("x")
    assert _create("-f", str(tmp_path / "p"), str(module), "corstone300") == 0
    assert not (tmp_path / "p/old.txt").exists() and (tmp_path / "p/main.c").is_file()
