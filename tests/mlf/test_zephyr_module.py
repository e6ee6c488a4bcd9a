"""The tarball as a Zephyr module (mlf/zephyr.py): module.yml and Kconfig as Zephyr's tools read them (YAML,
kconfiglib), and the module's CMake run under a stand-in for the few Zephyr CMake functions it calls, with the host
gcc: the library is built, its planned sections renamed, the linker snippet names the regions. Building the sample
against a real Zephyr tree is tests/firmware/test_zephyr_build.py (opt-in)."""
from __future__ import annotations

import re
import subprocess
import tarfile
from pathlib import Path

import kconfiglib
import pytest
import yaml

import ethosu_tvm
from ethosu_tvm.mlf.zephyr import module_files
from ethosu_tvm.testing import models

SHIM = Path(ethosu_tvm.__file__).parent / "run" / "shim"


def _mlf(root: Path, target: str, model: bytes | None = None) -> Path:
    model = models.make_graph("resnet_block", 0) if model is None else model
    module = ethosu_tvm.build(ethosu_tvm.from_tflite(model), target=target)
    module.export_model_library_format(root / "m.tar")
    with tarfile.open(root / "m.tar") as tar:
        tar.extractall(root / "mlf", filter="data")
    return root / "mlf"


@pytest.fixture(scope="module")
def npu_mlf(tmp_path_factory) -> Path:
    return _mlf(tmp_path_factory.mktemp("npu"), "ethos-u -accelerator-config=ethos-u55-128,c")


@pytest.fixture(scope="module")
def host_mlf(tmp_path_factory) -> Path:
    return _mlf(tmp_path_factory.mktemp("host"), "c")


@pytest.fixture(scope="module")
def dedicated_mlf(tmp_path_factory) -> Path:
    """A model with a workspace (a host kernel's input) and a fast scratch."""
    return _mlf(tmp_path_factory.mktemp("dedicated"),
                "ethos-u -accelerator-config=ethos-u65-256 -memory-mode=Dedicated_Sram,c",
                models.make_edge("uint8_to_float", 0))


def test_module_yml(npu_mlf, host_mlf):
    npu = yaml.safe_load((npu_mlf / "zephyr/module.yml").read_text())
    assert npu == {"name": "tvmgen_default", "build": {"cmake": "zephyr", "kconfig": "zephyr/Kconfig",
                                                      "depends": ["hal_ethos_u"]}}
    host = yaml.safe_load((host_mlf / "zephyr/module.yml").read_text())
    assert host == {"name": "tvmgen_default", "build": {"cmake": "zephyr", "kconfig": "zephyr/Kconfig"}}


def test_kconfig_options(npu_mlf):
    kconfig = kconfiglib.Kconfig(str(npu_mlf / "zephyr/Kconfig"), warn_to_stderr=False)
    assert kconfig.warnings == []
    enable = kconfig.syms["TVMGEN_DEFAULT"]
    constants = kconfig.syms["TVMGEN_DEFAULT_CONSTANTS_REGION"]
    workspace = kconfig.syms["TVMGEN_DEFAULT_WORKSPACE_REGION"]
    assert enable.type == kconfiglib.BOOL and enable.str_value == "n"
    assert constants.visibility == 0  # hidden until the model is enabled
    enable.set_value("y")
    assert (constants.str_value, workspace.str_value) == ("SRAM", "ISRAM")


def _zephyr_stand_in(tmp_path: Path, mlf: Path, driver: bool) -> Path:
    """A CMake project defining what the module's CMake uses from Zephyr, as Zephyr's build would."""
    app = tmp_path / "app"
    app.mkdir()
    lines = ["cmake_minimum_required(VERSION 3.20)", "project(app C)",
             "add_library(zephyr_interface INTERFACE)",
             "function(zephyr_link_libraries)", '  file(APPEND ${CMAKE_BINARY_DIR}/linked.txt "${ARGN}\\n")',
             "endfunction()",
             "function(zephyr_linker_sources location file)",
             '  file(APPEND ${CMAKE_BINARY_DIR}/snippets.txt "${location} ${file}\\n")', "endfunction()",
             "set(CONFIG_TVMGEN_DEFAULT y)", "set(CONFIG_TVMGEN_DEFAULT_CONSTANTS_REGION SRAM)",
             "set(CONFIG_TVMGEN_DEFAULT_WORKSPACE_REGION ISRAM)", "set(CONFIG_TVMGEN_DEFAULT_FAST_SCRATCH_REGION SRAM)"]
    if driver:  # what Zephyr's hal_ethos_u module defines
        lines += ["add_library(ethosu_core_driver INTERFACE)",
                  f"target_include_directories(ethosu_core_driver INTERFACE {SHIM})"]
    lines.append(f"add_subdirectory({mlf / 'zephyr'} tvmgen_default_module)")
    (app / "CMakeLists.txt").write_text("\n".join(lines) + "\n")
    return app


def _cmake(source: Path, build: Path) -> subprocess.CompletedProcess:
    configure = subprocess.run(["cmake", "-S", str(source), "-B", str(build)], capture_output=True, text=True)
    if configure.returncode != 0:
        return configure
    return subprocess.run(["cmake", "--build", str(build)], capture_output=True, text=True)


def test_module_builds_the_library_with_renamed_sections(tmp_path, npu_mlf):
    build = tmp_path / "build"
    result = _cmake(_zephyr_stand_in(tmp_path, npu_mlf, driver=True), build)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (build / "linked.txt").read_text() == "tvmgen_default\n"
    location, snippet = (build / "snippets.txt").read_text().split()
    assert location == "SECTIONS"
    assert Path(snippet).read_text() == (
        "SECTION_DATA_PROLOGUE(.tvm_constants,,SUBALIGN(16))\n{\n  KEEP(*(.tvm_constants))\n} GROUP_LINK_IN(SRAM)\n"
        "SECTION_DATA_PROLOGUE(.tvm_workspace,(NOLOAD),SUBALIGN(16))\n{\n  *(.tvm_workspace)\n} "
        "GROUP_LINK_IN(ISRAM)\n")
    library = build / "tvmgen_default_module/tvmgen_default/libtvmgen_default.a"
    headers = subprocess.run(["objdump", "-h", str(library)], capture_output=True, text=True, check=True).stdout
    sections = {match[1] for match in re.finditer(r"^\s*\d+ (\S+)", headers, re.MULTILINE)}
    assert {".tvm_constants", ".tvm_workspace"} <= sections
    assert not sections & {".rodata.tvm", ".bss.noinit.tvm"}


def test_dedicated_sram_module_places_the_fast_scratch_in_its_own_region(tmp_path, npu_mlf, dedicated_mlf):
    """The fast scratch's section is renamed and placed by an option of its own (a U55 model's module has none)."""
    build = tmp_path / "build"
    result = _cmake(_zephyr_stand_in(tmp_path, dedicated_mlf, driver=True), build)
    assert result.returncode == 0, result.stdout + result.stderr
    _, snippet = (build / "snippets.txt").read_text().split()
    assert Path(snippet).read_text().endswith(
        "GROUP_LINK_IN(ISRAM)\nSECTION_DATA_PROLOGUE(.tvm_fast_scratch,(NOLOAD),SUBALIGN(16))\n{\n"
        "  *(.tvm_fast_scratch)\n} GROUP_LINK_IN(SRAM)\n")
    library = build / "tvmgen_default_module/tvmgen_default/libtvmgen_default.a"
    headers = subprocess.run(["objdump", "-h", str(library)], capture_output=True, text=True, check=True).stdout
    sections = {match[1] for match in re.finditer(r"^\s*\d+ (\S+)", headers, re.MULTILINE)}
    assert {".tvm_constants", ".tvm_workspace", ".tvm_fast_scratch"} <= sections
    assert not sections & {".rodata.tvm", ".bss.noinit.tvm", ".bss.noinit.tvm.fast_scratch"}
    kconfig = kconfiglib.Kconfig(str(dedicated_mlf / "zephyr/Kconfig"), warn_to_stderr=False)
    kconfig.syms["TVMGEN_DEFAULT"].set_value("y")
    assert kconfig.syms["TVMGEN_DEFAULT_FAST_SCRATCH_REGION"].str_value == "ISRAM"
    assert "FAST_SCRATCH" not in (npu_mlf / "zephyr/Kconfig").read_text()


def test_npu_model_without_zephyrs_driver_says_so(tmp_path, npu_mlf):
    result = _cmake(_zephyr_stand_in(tmp_path, npu_mlf, driver=False), tmp_path / "build")
    assert result.returncode != 0
    assert ("tvmgen_default runs on the Ethos-U NPU: enable Zephyr's Ethos-U driver (CONFIG_ETHOS_U=y, or "
            "CONFIG_ARM_ETHOS_U=y before Zephyr 4.1) and its hal_ethos_u module") in " ".join(result.stderr.split())


def test_host_only_module_needs_no_driver(tmp_path, host_mlf):
    result = _cmake(_zephyr_stand_in(tmp_path, host_mlf, driver=False), tmp_path / "build")
    assert result.returncode == 0, result.stdout + result.stderr


def test_cmsis_nn_model_depends_on_zephyrs_cmsis_nn_module():
    files = module_files("tvmgen_default", False, {"cmsis-nn": "ARM-software/CMSIS-NN 99f736a6"})
    assert yaml.safe_load(files["zephyr/module.yml"])["build"]["depends"] == ["cmsis-nn"]
    cmake = files["zephyr/CMakeLists.txt"]
    assert ("tvmgen_default calls cmsis-nn: enable Zephyr's cmsis-nn module (CONFIG_CMSIS_NN=y, "
            "CONFIG_CMSIS_NN_CONVOLUTION=y, CONFIG_CMSIS_NN_FULLYCONNECTED=y, CONFIG_CMSIS_NN_POOLING=y, "
            "CONFIG_CMSIS_NN_BASICMATH=y, CONFIG_CMSIS_NN_NNSUPPORT=y)") in cmake
    # Zephyr's cmsis-nn is a zephyr_library, linked by Zephyr: the tarball's CMakeLists.txt must not ask for a target
    assert cmake.index('set(ETHOSU_TVM_KERNEL_LIBRARIES "" CACHE STRING') < cmake.index("add_subdirectory(")
