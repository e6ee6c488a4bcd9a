"""The tarball's CMakeLists.txt: the model as a static library target; an NPU model links the driver's target, any
model the kernel libraries' targets.

Host-only models are built and run through it on QEMU in tests/qemu; here an NPU model's library is built with
CMake and the host gcc against a driver target made of the run shim's ethosu_driver.h."""
from __future__ import annotations

import subprocess
import tarfile
from pathlib import Path

import pytest

import ethosu_tvm
from ethosu_tvm.mlf.cmake import cmake_lists
from ethosu_tvm.testing import models

SHIM = Path(ethosu_tvm.__file__).parent / "run" / "shim"
FILES = ["codegen/host/include/tvmgen_default.h", "codegen/host/src/default_lib1.c", "codegen/host/src/default_lib0.c",
         "runtime/include/ethosu_tvm_npu.h", "runtime/src/ethosu_tvm_npu.c", "src/relax.txt", "metadata.json"]


def test_every_source_and_include_folder_of_the_tarball():
    text = cmake_lists("tvmgen_default", FILES, 384, 1024)
    assert ("add_library(tvmgen_default STATIC\n  codegen/host/src/default_lib0.c\n  codegen/host/src/default_lib1.c\n"
            "  runtime/src/ethosu_tvm_npu.c\n)\n") in text
    assert ("target_include_directories(tvmgen_default PUBLIC\n  ${CMAKE_CURRENT_SOURCE_DIR}/codegen/host/include\n"
            "  ${CMAKE_CURRENT_SOURCE_DIR}/runtime/include\n)\n") in text
    assert "#   .rodata.tvm      384 bytes" in text and "the workspace pool (1024 bytes" in text
    assert text.endswith("target_link_libraries(tvmgen_default PUBLIC ${ETHOSU_TVM_DRIVER_TARGET})\n")


def test_dedicated_sram_lists_the_fast_scratch_section():
    """A fast scratch array's own section, with its size, and the workspace then said to be DRAM; none without one."""
    text = cmake_lists("tvmgen_default", FILES, 384, 1024, fast_scratch_size=512)
    assert "the workspace pool (1024 bytes" in text
    assert "#   .bss.noinit.tvm.fast_scratch  the fast_scratch pool (512 bytes; -memory-mode=Dedicated_Sram):" in text
    assert "states: DRAM the NPU can read and write" in text  # Dedicated_Sram keeps the workspace in DRAM
    plain = cmake_lists("tvmgen_default", FILES, 384, 1024)
    assert "fast_scratch" not in plain and "states: SRAM the NPU can read and write" in plain


def test_host_only_model_needs_no_driver():
    host_files = [f for f in FILES if not f.startswith("runtime/")]
    text = cmake_lists("tvmgen_default", host_files, 0, 0)
    assert "runtime" not in text and "DRIVER" not in text and "ethosu_tvm_npu.c" not in text
    assert "target_link_libraries(tvmgen_default PUBLIC ${ETHOSU_TVM_KERNEL_LIBRARIES})\n" in text
    assert text.endswith("if(ETHOSU_TVM_RENAME_SECTIONS)\n  add_custom_command(TARGET tvmgen_default POST_BUILD\n"
                         "    COMMAND ${CMAKE_OBJCOPY} ${ETHOSU_TVM_RENAME_SECTIONS} $<TARGET_FILE:tvmgen_default> "
                         "VERBATIM)\nendif()\n")


def _cmake(source: Path, build: Path) -> subprocess.CompletedProcess:
    configure = subprocess.run(["cmake", "-S", str(source), "-B", str(build)], capture_output=True, text=True)
    if configure.returncode != 0:
        return configure
    return subprocess.run(["cmake", "--build", str(build), "--verbose"], capture_output=True, text=True)


@pytest.fixture(scope="module")
def npu_mlf(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("npu")
    module = ethosu_tvm.build(ethosu_tvm.from_tflite(models.make("conv2d")),
                              target="ethos-u -accelerator-config=ethos-u55-128,c")
    assert module.program.has_npu
    module.export_model_library_format(root / "m.tar")
    with tarfile.open(root / "m.tar") as tar:
        tar.extractall(root / "mlf", filter="data")
    return root / "mlf"


def _application(tmp_path: Path, mlf: Path, driver: bool) -> Path:
    app = tmp_path / "app"
    app.mkdir()
    lines = ["cmake_minimum_required(VERSION 3.13)", "project(app C)",
             # a kernel library, seen in the model's compile lines through its usage requirement
             "add_library(fake_nn INTERFACE)", "target_compile_definitions(fake_nn INTERFACE FAKE_NN_LINKED=1)",
             'set(ETHOSU_TVM_KERNEL_LIBRARIES "fake_nn" CACHE STRING "")']
    if driver:  # what add_subdirectory(<ethos-u-core-driver>) defines, with the shim's header
        lines += ["add_library(ethosu_core_driver INTERFACE)",
                  f"target_include_directories(ethosu_core_driver INTERFACE {SHIM})"]
    lines.append(f"add_subdirectory({mlf} model)")
    (app / "CMakeLists.txt").write_text("\n".join(lines) + "\n")
    return app


def test_npu_model_library_builds_against_the_driver_target(tmp_path, npu_mlf):
    result = _cmake(_application(tmp_path, npu_mlf, driver=True), tmp_path / "build")
    assert result.returncode == 0, result.stdout + result.stderr
    compiles = [line for line in result.stdout.splitlines() if line.endswith("default_lib0.c")]
    assert len(compiles) == 1 and "-DFAKE_NN_LINKED=1" in compiles[0]
    symbols = subprocess.run(["nm", str(tmp_path / "build/model/libtvmgen_default.a")], capture_output=True,
                             text=True).stdout
    assert " T tvmgen_default_run" in symbols and " T ethosu_tvm_npu_invoke" in symbols
    assert " U ethosu_invoke_v3" in symbols


def test_npu_model_without_the_driver_target_says_so(tmp_path, npu_mlf):
    result = _cmake(_application(tmp_path, npu_mlf, driver=False), tmp_path / "build")
    assert result.returncode != 0
    assert ("tvmgen_default runs on the Ethos-U NPU and needs the driver target ethosu_core_driver: add the "
            "ethos-u-core-driver before this folder, or set ETHOSU_TVM_DRIVER_TARGET to your driver's target"
            ) in " ".join(result.stderr.split())
