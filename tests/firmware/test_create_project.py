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
        "template": "argument template: invalid choice: 'esp32' (choose from 'corstone300', 'zephyr')",
    }[case]
    template = "esp32" if case == "template" else "corstone300"
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


def test_zephyr_application_files(tmp_path, module, capsys):
    assert _create(str(tmp_path / "z"), str(module), "zephyr", "--fill-mode", "zeros") == 0
    files = sorted(str(p.relative_to(tmp_path / "z")) for p in (tmp_path / "z").rglob("*") if p.is_file())
    assert [f for f in files if not f.startswith("model/")] == ["CMakeLists.txt", "prj.conf", "src/dump.h",
                                                                "src/main.c"]
    assert {"model/zephyr/module.yml", "model/zephyr/CMakeLists.txt", "model/zephyr/Kconfig"} <= set(files)
    assert "list(APPEND ZEPHYR_EXTRA_MODULES ${CMAKE_CURRENT_SOURCE_DIR}/model)" in (tmp_path / "z/CMakeLists.txt"
                                                                                     ).read_text()
    assert (tmp_path / "z/prj.conf").read_text().splitlines()[1:] == [
        "CONFIG_TVMGEN_DEFAULT=y", "CONFIG_STDOUT_CONSOLE=y", "CONFIG_MAIN_STACK_SIZE=16384"]  # host-only: no driver
    main_c = (tmp_path / "z/src/main.c").read_text()
    assert 'section(".tvm_workspace")' in main_c and 'section(".tvm_constants")' in main_c
    assert ".sram_data" not in main_c and "ethosu_driver" not in main_c and 'printf("top class: %u\\n", top);' in main_c
    assert capsys.readouterr().out == f"Wrote {tmp_path / 'z'}: build it with west build -b mps3/corstone300/an547 " \
                                      f"{tmp_path / 'z'}\n"


def test_zephyr_npu_application_reserves_the_driver_zephyr_initialised(tmp_path):
    (tmp_path / "m.tflite").write_bytes(models.make("conv2d"))
    assert tvmc(["compile", "--target=ethos-u -accelerator-config=ethos-u55-128,c", str(tmp_path / "m.tflite"),
                 "-o", str(tmp_path / "m.tar"), "-q"]) == 0
    assert _create(str(tmp_path / "z"), str(tmp_path / "m.tar"), "zephyr") == 0
    assert (tmp_path / "z/prj.conf").read_text().splitlines()[-2:] == [
        "CONFIG_ETHOS_U=y  # Zephyr before 4.1: CONFIG_ARM_ETHOS_U=y",
        "CONFIG_ETHOS_U55_128=y  # the NPU the model was compiled for"]
    main_c = (tmp_path / "z/src/main.c").read_text()
    assert "struct tvmgen_default_devices devices = {.ethos_u = 0};" in main_c and "ethosu_init" not in main_c


def test_zephyr_application_of_a_cmsis_nn_model_enables_zephyrs_cmsis_nn(tmp_path):
    (tmp_path / "m.tflite").write_bytes(models.make("conv2d"))
    assert tvmc(["compile", "--target=cmsis-nn -mcpu=cortex-m55,c", str(tmp_path / "m.tflite"),
                 "-o", str(tmp_path / "m.tar"), "-q"]) == 0
    assert _create(str(tmp_path / "z"), str(tmp_path / "m.tar"), "zephyr") == 0
    assert (tmp_path / "z/prj.conf").read_text().splitlines()[4:] == [
        "CONFIG_CMSIS_NN=y", "CONFIG_CMSIS_NN_CONVOLUTION=y", "CONFIG_CMSIS_NN_FULLYCONNECTED=y",
        "CONFIG_CMSIS_NN_POOLING=y", "CONFIG_CMSIS_NN_BASICMATH=y", "CONFIG_CMSIS_NN_NNSUPPORT=y"]


@pytest.mark.parametrize("accelerator, zephyr_choice", [("ethos-u55-64", "CONFIG_ETHOS_U55_64"),
                                                        ("ethos-u65-512", "CONFIG_ETHOS_U65_512")])
def test_projects_build_the_driver_for_the_models_npu(tmp_path, accelerator, zephyr_choice):
    (tmp_path / "m.tflite").write_bytes(models.make("conv2d"))
    assert tvmc(["compile", f"--target=ethos-u -accelerator-config={accelerator},c", str(tmp_path / "m.tflite"),
                 "-o", str(tmp_path / "m.tar"), "-q"]) == 0
    assert _create(str(tmp_path / "p"), str(tmp_path / "m.tar"), "corstone300") == 0
    assert (tmp_path / "p/npu.cmake").read_text().splitlines()[1] == \
        f'set(ETHOSU_TARGET_NPU_CONFIG "{accelerator}" CACHE STRING "Ethos-U configuration the core driver is ' \
        'built for" FORCE)'
    assert _create(str(tmp_path / "z"), str(tmp_path / "m.tar"), "zephyr") == 0
    assert f"{zephyr_choice}=y  # the NPU the model was compiled for" in \
        (tmp_path / "z/prj.conf").read_text().splitlines()
