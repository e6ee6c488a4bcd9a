"""Build C for QEMU mps3-an547 (Cortex-M55) with CMake, arm-none-eabi-gcc and the files the Corstone-300 project
template ships (its toolchain file, start-up code, linker script and corstone300.cmake), run it, read results back.

A model is linked through the CMakeLists.txt its tarball carries, so the suite exercises what users build with.
Results come back two ways: main's return value is QEMU's exit status, and arrays printed by `ethosu_tvm_dump`
(the template's dump.h, DUMP_HELPER_C) are parsed from semihosting stdout by `parse_dumps`.
Linker sections (corstone300.ld): `.rodata*` goes to QSPI (8 MB); `.sram_data*` (initialised), `.sram_bss*`
(zeroed) and `.bss.noinit.tvm` / `.bss.noinit.npu` (not zeroed) go to the 2 MB SSE-300 SRAM; the rest to the TCMs.
"""
from __future__ import annotations

import functools
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ethosu_tvm.aot.c_source import c_type
from ethosu_tvm.firmware import TEMPLATES

TEMPLATE = TEMPLATES["corstone300"]
TOOLCHAIN_FILE = TEMPLATE / "arm-none-eabi.cmake"
GCC = "arm-none-eabi-gcc"
CMAKE = "cmake"
QEMU = "qemu-system-arm"
HARDFAULT_EXIT_CODE = 222  # ETHOSU_TVM_HARDFAULT_EXIT in the template's startup.c
MISSING_TOOLS = (f"{CMAKE}, {GCC} (with newlib) and {QEMU} are needed for the QEMU tests: `make test` installs them "
                 "(Debian packages cmake, gcc-arm-none-eabi, libnewlib-arm-none-eabi, qemu-system-arm)")

DUMP_HELPER_C = (TEMPLATE / "dump.h").read_text()

_DUMP_RE = re.compile(r"^@@dump (\S+) (\d+)\n(.*?)^@@end \1$", re.MULTILINE | re.DOTALL)


@dataclass
class QemuResult:
    """main's return value (HARDFAULT_EXIT_CODE after a fault), semihosting stdout, and stderr (fault reports)."""
    exit_code: int
    stdout: str
    stderr: str = ""


@functools.cache
def qemu_available() -> bool:
    """True if cmake, the cross compiler, newlib's rdimon and qemu-system-arm are all installed."""
    if not (shutil.which(CMAKE) and shutil.which(GCC) and shutil.which(QEMU)):
        return False
    specs = subprocess.run([GCC, "-print-file-name=rdimon.specs"], capture_output=True, text=True).stdout.strip()
    return Path(specs).is_absolute() and Path(specs).is_file()


def cmake_build(source: Path, build: Path, toolchain: Path | str = TOOLCHAIN_FILE, *options: str) -> Path:
    """Configure (with `options`) and build the CMake project `source` for arm-none-eabi; the firmware.elf built."""
    assert qemu_available(), MISSING_TOOLS
    for command in ([CMAKE, "-S", str(source), "-B", str(build), f"-DCMAKE_TOOLCHAIN_FILE={toolchain}", *options],
                    [CMAKE, "--build", str(build)]):
        step = subprocess.run(command, capture_output=True, text=True)
        assert step.returncode == 0, f"{' '.join(command)} failed:\n{step.stdout[-3000:]}\n{step.stderr}"
    return build / "firmware.elf"


# The MPS2 boards' cores run the same start-up code, linked to their RAMs (code and read-only data in SSRAM1, data
# and stack in SSRAM2/3, the workspace in PSRAM) by the template's linker script remapped: the Cortex-M7 (DSP) of
# mps2-an500 and the Cortex-M3 (scalar, no FPU) of mps2-an385, whose PSRAM is elsewhere.
MPS2_MEMORY = {"ITCM (rx)  : ORIGIN = 0x10000000, LENGTH = 512K": "ITCM (rx)  : ORIGIN = 0x00000000, LENGTH = 2M",
               "QSPI (r)   : ORIGIN = 0x38000000, LENGTH = 8M": "QSPI (r)   : ORIGIN = 0x00200000, LENGTH = 2M",
               "DTCM (rw)  : ORIGIN = 0x30000000, LENGTH = 512K": "DTCM (rw)  : ORIGIN = 0x20000000, LENGTH = 4M",
               "SRAM (rw)  : ORIGIN = 0x31000000, LENGTH = 2M": "SRAM (rw)  : ORIGIN = {psram}, LENGTH = 16M"}
MPS2_CPUS = {"cortex-m7": ("-mcpu=cortex-m7 -mfpu=fpv5-d16 -mthumb -mfloat-abi=hard -O2", "0x60000000"),
             "cortex-m3": ("-mcpu=cortex-m3 -mthumb -mfloat-abi=soft -O2", "0x21000000")}
MACHINES = {"cortex-m55": "mps3-an547", "cortex-m7": "mps2-an500", "cortex-m3": "mps2-an385"}


def _mps2_firmware(workdir: Path, cpu: str) -> tuple[list[str], Path]:
    """The CMake lines of the firmware target for `cpu`'s MPS2 board, and its toolchain file (both written to
    workdir)."""
    flags, psram = MPS2_CPUS[cpu]
    script = (TEMPLATE / "corstone300.ld").read_text()
    for board, mps2 in MPS2_MEMORY.items():
        assert board in script, f"corstone300.ld no longer has {board}"
        script = script.replace(board, mps2.format(psram=psram))
    linker_script = workdir / f"{MACHINES[cpu]}.ld"
    linker_script.write_text(script)
    toolchain = workdir / f"{cpu}.cmake"
    text, m55_flags = TOOLCHAIN_FILE.read_text(), '"-mcpu=cortex-m55 -mthumb -mfloat-abi=hard -O2"'
    assert m55_flags in text, f"{TOOLCHAIN_FILE.name} no longer sets {m55_flags}"
    toolchain.write_text(text.replace(m55_flags, f'"{flags}"').replace("cortex-m55", cpu))
    lines = [f"add_executable(firmware main.c {TEMPLATE / 'startup.c'})",
             "set_target_properties(firmware PROPERTIES SUFFIX .elf)",
             f"target_include_directories(firmware PRIVATE {TEMPLATE})",
             f"target_link_options(firmware PRIVATE -T{linker_script} --specs=rdimon.specs -nostartfiles "
             "-Wl,--gc-sections)"]
    return lines, toolchain


def build_and_run(main_c: str, workdir: Path, mlf: Path | None = None, timeout: float = 120,
                  libraries: tuple[str, ...] = (), cpu: str = "cortex-m55",
                  qemu_options: tuple[str, ...] = ()) -> QemuResult:
    """Write main_c to workdir/main.c, link it (and the model of the extracted tarball `mlf`, through its
    CMakeLists.txt) with the template's start-up code, warnings as errors, and run it on `cpu`'s board (MACHINES).
    `libraries` are CMake lines defining the targets the model links (e.g. CMSIS-NN's), placed before the model;
    `qemu_options` are added to QEMU's command line."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "main.c").write_text(main_c)
    lines = ["cmake_minimum_required(VERSION 3.13)", "project(qemu_test C)", "add_compile_options(-Wall -Werror)"]
    if cpu in MPS2_CPUS:
        firmware, toolchain = _mps2_firmware(workdir, cpu)
        lines += firmware
    else:
        lines += [f"include({TEMPLATE / 'corstone300.cmake'})", "corstone300_firmware(firmware main.c)"]
        toolchain = TOOLCHAIN_FILE
    if mlf is not None:
        lines += [*libraries, f"add_subdirectory({mlf} model)",
                  "target_link_libraries(firmware PRIVATE tvmgen_default)"]
    (workdir / "CMakeLists.txt").write_text("\n".join(lines) + "\n")
    return run_elf(cmake_build(workdir, workdir / "build", toolchain), timeout, MACHINES[cpu], qemu_options)


def run_elf(elf: Path, timeout: float = 120, machine: str = "mps3-an547",
            options: tuple[str, ...] = ()) -> QemuResult:
    """Run a firmware on QEMU `machine` (with `options`) with semihosting; its output files go beside it."""
    qemu = [QEMU, "-M", machine, "-nographic", "-semihosting-config", "enable=on,target=native", *options,
            "-kernel", str(elf)]
    # QEMU writes the guest's output non-blocking and drops what a full pipe refuses (seen: 64 KB kept of a
    # 512 KB dump), so send it to files, which never refuse a write.
    out_path, err_path = elf.with_suffix(".stdout"), elf.with_suffix(".stderr")
    with out_path.open("wb") as out, err_path.open("wb") as err:
        try:
            run = subprocess.run(qemu, stdin=subprocess.DEVNULL, stdout=out, stderr=err, timeout=timeout)
        except subprocess.TimeoutExpired:
            run = None
    stdout = out_path.read_text(errors="replace")
    assert run is not None, f"QEMU did not finish within {timeout} s ({elf}); end of stdout:\n{stdout[-2000:]}"
    return QemuResult(run.returncode, stdout, err_path.read_text(errors="replace"))


def c_array(name: str, array: np.ndarray, const: bool = True, section: str | None = None) -> str:
    """A C definition `[const] T name[N] __attribute__((aligned(16)...)) = {...};` of the flattened array.

    Needs <stdint.h> (DUMP_HELPER_C includes it). Use section=".sram_data" for large non-const arrays."""
    array = np.asarray(array)
    if array.dtype.kind not in "iu" or array.dtype.itemsize > 4:
        raise ValueError(f"c_array: no C type for {array.dtype} (supported: integers of up to 32 bits)")
    if array.size == 0:
        raise ValueError(f"c_array: {name} is empty; C has no zero-length arrays")
    values = [str(v) for v in array.ravel().tolist()]
    if array.dtype == np.int32:  # -2147483648 is not an int literal in C
        values = ["(-2147483647 - 1)" if v == "-2147483648" else v for v in values]
    rows = ",\n  ".join(", ".join(values[i:i + 32]) for i in range(0, len(values), 32))
    attributes = "aligned(16)" + (f', section("{section}")' if section else "")
    qualifier = "const " if const else ""
    return (f"{qualifier}{c_type(array.dtype)} {name}[{array.size}] __attribute__(({attributes})) = {{\n"
            f"  {rows}\n}};\n")


def single_io_main_c(inputs: list[np.ndarray], output: np.ndarray) -> str:
    """A main() that runs the model (one input, one output like `output`) on each of `inputs`, dumping the output
    of run i as `output_<i>`."""
    return io_main_c([[x] for x in inputs], output)


def io_main_c(input_sets: list[list[np.ndarray]], output: np.ndarray) -> str:
    """A main() that runs the model (its inputs, in order, one of `input_sets`; one output like `output`) on each
    set, dumping the output of run i as `output_<i>`. Float arrays travel as their int32 bit patterns (c_array
    writes integers)."""
    arrays, runs = [], []
    for i, inputs in enumerate(input_sets):
        stored = [x.reshape(-1).view(np.int32) if x.dtype == np.float32 else x.reshape(-1) for x in inputs]
        arrays += [c_array(f"input_{i}_{k}", x) for k, x in enumerate(stored)]
        pointers = ", ".join(f"(void*)input_{i}_{k}" for k in range(len(stored)))
        runs += [f"  {{ struct tvmgen_default_inputs in = {{{pointers}}};",
                 "    struct tvmgen_default_outputs out = {output};",
                 "    if (tvmgen_default_run(&in, &out) != 0) return 1; }",
                 f'  ethosu_tvm_dump("output_{i}", output, sizeof(output));']
    arrays, body = "\n".join(arrays), "\n".join(runs)
    return f"""#include <stdint.h>
#include "tvmgen_default.h"
{DUMP_HELPER_C}
{arrays}
static {c_type(output.dtype)} output[{output.size}] __attribute__((aligned(16)));

int main(void) {{
{body}
  return 0;
}}
"""


def parse_dumps(stdout: str) -> dict[str, bytes]:
    """The arrays printed by ethosu_tvm_dump, by name (no spaces); truncated or inconsistent dumps raise
    AssertionError."""
    dumps = {}
    started = re.findall(r"^@@dump (\S+) ", stdout, re.MULTILINE)
    for match in _DUMP_RE.finditer(stdout):
        name, size, body = match.group(1), int(match.group(2)), match.group(3)
        data = bytes.fromhex("".join(body.split()))
        assert len(data) == size, f"dump {name}: {len(data)} bytes parsed, {size} announced"
        assert name not in dumps, f"dump {name} printed twice"
        dumps[name] = data
    unfinished = [name for name in started if name not in dumps]
    assert not unfinished, f"dumps without their end marker (did the program stop early?): {unfinished}"
    return dumps
