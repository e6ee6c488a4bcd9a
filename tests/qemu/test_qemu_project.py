"""`tvmc micro create-project DIR module.tar corstone300`: the bare-metal project builds with its own CMake files and
toolchain file as docs/firmware.md says; host-only, it runs on QEMU mps3-an547 bit-exactly against LiteRT (with the
default workspace, and with application pools holding the I/O); with NPU launches it links against the Ethos-U
driver given by ETHOS_U_CORE_DRIVER_PATH, its model sections where the NPU reaches them; calling CMSIS-NN, it links
the prebuilt library given by CMSIS_NN_PATH (opt-in: ETHOSU_TVM_CMSIS_NN names one) and runs bit-exactly."""
from __future__ import annotations

import io
import os
import subprocess
import tarfile
from pathlib import Path

import numpy as np
import pytest
from qemu_harness import GCC, cmake_build, parse_dumps, run_elf

from ethosu_tvm.aot.interface import INTERFACE_PATH, ModelInterface
from ethosu_tvm.cli import main as tvmc
from ethosu_tvm.testing import models
from ethosu_tvm.testing.reference import random_inputs, run_litert

SRAM, QSPI = range(0x31000000, 0x31200000), range(0x38000000, 0x38800000)


def _project(tmp_path: Path, model: bytes, target: str, *flags: str, inputs: list | None = None) -> Path:
    """tvmc compile, then tvmc micro create-project (with `inputs`, in model order, as --inputs)."""
    (tmp_path / "m.tflite").write_bytes(model)
    assert tvmc(["compile", f"--target={target}", str(tmp_path / "m.tflite"), "--output-format", "mlf",
                 "-o", str(tmp_path / "m.tar"), "-q", *flags]) == 0
    command = ["micro", "create-project", str(tmp_path / "project"), str(tmp_path / "m.tar"), "corstone300"]
    if inputs is not None:
        with tarfile.open(tmp_path / "m.tar") as tar:
            interface = ModelInterface.from_json(tar.extractfile(f"./{INTERFACE_PATH}").read().decode())
        buffer = io.BytesIO()
        np.savez(buffer, **{field.name: x for field, x in zip(interface.inputs, inputs)})
        (tmp_path / "in.npz").write_bytes(buffer.getvalue())
        command += ["--inputs", str(tmp_path / "in.npz")]
    assert tvmc(command) == 0
    return tmp_path / "project"


@pytest.mark.parametrize("flags", [(), ("--workspace-pools=sram", "--use-workspace-io")], ids=["default", "pools-io"])
def test_host_only_project_runs_bit_exact(tmp_path, flags):
    model = models.make_graph("multi_io")
    inputs = random_inputs(model, 3)
    expected = run_litert(model, inputs)
    project = _project(tmp_path, model, "c -mcpu=cortex-m55", *flags, inputs=inputs)
    result = run_elf(cmake_build(project, project / "build", "arm-none-eabi.cmake"))
    assert result.exit_code == 0, result.stderr
    dumps = list(parse_dumps(result.stdout).values())  # in model output order
    assert len(dumps) == len(expected) > 1
    for got, want in zip(dumps, expected):
        np.testing.assert_array_equal(np.frombuffer(got, want.dtype).reshape(want.shape), want)


@pytest.mark.skipif(not os.environ.get("ETHOSU_TVM_CMSIS_NN"),
                    reason="ETHOSU_TVM_CMSIS_NN names no CMSIS-NN build (include/, lib/cortex-m55/): the linked tier "
                           "needs one (docs/firmware.md)")
def test_cmsis_nn_project_links_the_prebuilt_library(tmp_path):
    model = models.make_graph("ds_cnn")
    inputs = random_inputs(model, 4)
    (expected,) = run_litert(model, inputs)
    project = _project(tmp_path, model, "cmsis-nn,c -mcpu=cortex-m55", inputs=inputs)
    assert "arm_convolve_wrapper_s8(" in (project / "model/codegen/host/src/default_lib1.c").read_text()
    elf = cmake_build(project, project / "build", "arm-none-eabi.cmake",
                      f"-DCMSIS_NN_PATH={os.environ['ETHOSU_TVM_CMSIS_NN']}")
    result = run_elf(elf)
    assert result.exit_code == 0, result.stderr
    (got,) = parse_dumps(result.stdout).values()
    np.testing.assert_array_equal(np.frombuffer(got, expected.dtype).reshape(expected.shape), expected)


def test_cmsis_nn_path_without_the_library_stops_configuring(tmp_path):
    project = _project(tmp_path, models.make("max_pool2d", 0), "cmsis-nn,c -mcpu=cortex-m55")
    step = subprocess.run(["cmake", "-S", str(project), "-B", str(project / "build"),
                           "-DCMAKE_TOOLCHAIN_FILE=arm-none-eabi.cmake", f"-DCMSIS_NN_PATH={tmp_path}"],
                          capture_output=True, text=True)
    assert step.returncode != 0
    assert (f"CMSIS_NN_PATH={tmp_path} lacks include/arm_nnfunctions.h or "
            f"{tmp_path}/lib/cortex-m55/libcmsis-nn.a") in " ".join(step.stderr.split())


FAKE_DRIVER_H = """#include <stddef.h>
#include <stdint.h>
struct ethosu_driver { int reserved; };
int ethosu_init(struct ethosu_driver* drv, void* base_address, const void* fast_memory, size_t fast_memory_size,
                uint32_t secure_enable, uint32_t privilege_enable);
void ethosu_irq_handler(struct ethosu_driver* drv);
struct ethosu_driver* ethosu_reserve_driver(void);
void ethosu_release_driver(struct ethosu_driver* drv);
int ethosu_invoke_v3(struct ethosu_driver* drv, const void* custom_data_ptr, int custom_data_size,
                     uint64_t* base_addr, size_t* base_addr_size, int num_base_addr, void* user_arg);
"""


def _fake_driver(folder: Path) -> Path:
    """A folder laid out as the ethos-u-core-driver checkout is for CMake: target ethosu_core_driver, with stubs."""
    (folder / "include").mkdir(parents=True)
    (folder / "include/ethosu_driver.h").write_text(FAKE_DRIVER_H)
    (folder / "stub.c").write_text('#include "ethosu_driver.h"\n'
                                   "int ethosu_init(struct ethosu_driver* d, void* b, const void* f, size_t s, "
                                   "uint32_t e, uint32_t p) { return 0; }\n"
                                   "void ethosu_irq_handler(struct ethosu_driver* d) {}\n"
                                   "static struct ethosu_driver one;\n"
                                   "struct ethosu_driver* ethosu_reserve_driver(void) { return &one; }\n"
                                   "void ethosu_release_driver(struct ethosu_driver* d) {}\n"
                                   "int ethosu_invoke_v3(struct ethosu_driver* d, const void* c, int n, uint64_t* b, "
                                   "size_t* s, int k, void* u) { return -1; }\n")
    (folder / "CMakeLists.txt").write_text(  # the driver's configuration as its CMake takes it, recorded
        'project(ethosu_core_driver C)\nset(ETHOSU_TARGET_NPU_CONFIG "ethos-u55-128" CACHE STRING "NPU")\n'
        "file(WRITE ${CMAKE_BINARY_DIR}/npu_config.txt ${ETHOSU_TARGET_NPU_CONFIG})\n"
        "add_library(ethosu_core_driver STATIC stub.c)\n"
        "target_include_directories(ethosu_core_driver PUBLIC include)\n")
    return folder


def test_npu_project_builds_with_the_driver_path(tmp_path):
    project = _project(tmp_path, models.make_graph("ds_cnn"), "ethos-u -accelerator-config=ethos-u55-256,c")
    driver = _fake_driver(tmp_path / "ethos-u-core-driver")
    elf = cmake_build(project, project / "build", "arm-none-eabi.cmake", f"-DETHOS_U_CORE_DRIVER_PATH={driver}")
    assert (project / "build/npu_config.txt").read_text() == "ethos-u55-256"  # not the driver's default
    nm = subprocess.run([GCC.replace("gcc", "nm"), str(elf)], capture_output=True, text=True, check=True).stdout
    symbols = {parts[2]: int(parts[0], 16) for parts in map(str.split, nm.splitlines()) if len(parts) == 3}
    assert symbols["tvmgen_default_workspace_pool"] in SRAM
    assert [name for name, address in symbols.items() if name.startswith("tvmgen_default_")
            and address in QSPI] != []  # the command streams and weights
    result = run_elf(elf)  # QEMU has no NPU: the stub driver's launch fails, and main says so
    assert result.exit_code == 2, result
