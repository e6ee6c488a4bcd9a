"""The generated C as firmware sees it: Cortex-M55 cross-compilation with -Wall -Werror, where constants and the
workspace land, the header's interface, and byte-identical tarballs."""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from aot_support import compile_model, extract, members, npu_target

from ethosu_tvm.aot.c_source import _byte_array
from ethosu_tvm.run.host_program import SHIM
from ethosu_tvm.testing import models, shared_model

ARM_GCC = ("arm-none-eabi-gcc", "-mcpu=cortex-m55", "-mthumb", "-mfloat-abi=hard", "-O2", "-Wall", "-Werror", "-c")
KWS = "mlperf_tiny_kws_dscnn_int8.tflite"
BUILDS = {
    "kws-u55-128": (lambda: shared_model(KWS), npu_target("ethos-u55-128") + " -mcpu=cortex-m55"),
    "kws-host-only": (lambda: shared_model(KWS), "c -mcpu=cortex-m55"),
    "multi_io-u55-256": (lambda: models.make_graph("multi_io"), npu_target("ethos-u55-256")),
    # a 5-D int16 softmax, which stays a host kernel
    "softmax-int16": (lambda: models.make("softmax", 0, dtype="int16", in_shape=(2, 2, 2, 3, 10)),
                      npu_target("ethos-u55-128")),
    # uint8, int8 and float32 inputs and outputs
    "mixed-io": (lambda: models.make_edge("mixed_inputs"), npu_target("ethos-u55-64")),
    # the fast scratch, a pool of its own beside the workspace (which holds a host kernel's input)
    "u65-256-dedicated": (lambda: models.make_edge("uint8_to_float", 0),
                          "ethos-u -accelerator-config=ethos-u65-256 -memory-mode=Dedicated_Sram,c"),
}
# The section of each pool's static array, as docs/firmware.md lists them for the linker script.
POOL_SECTIONS = {"workspace": ".bss.noinit.tvm", "fast_scratch": ".bss.noinit.tvm.fast_scratch"}
# The C element type an application's buffer for each tensor type must have.
C_TYPES = {"int8": "int8_t", "uint8": "uint8_t", "int16": "int16_t", "int32": "int32_t", "float32": "float"}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The extracted MLF of one of BUILDS by name, compiled once per module."""
    folders: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in folders:
            make, target = BUILDS[name]
            directory = tmp_path_factory.mktemp(name)
            folders[name] = extract(compile_model(make(), directory, target), directory / "mlf")
        return folders[name]

    return get


@pytest.fixture(scope="module", params=BUILDS)
def mlf(request, built) -> Path:
    return built(request.param)


def _sections(obj: Path) -> dict[str, tuple[int, int]]:
    """name → (size, alignment) from arm-none-eabi-objdump -h."""
    text = subprocess.run(["arm-none-eabi-objdump", "-h", str(obj)], capture_output=True, text=True,
                          check=True).stdout
    return {m[1]: (int(m[2], 16), 2 ** int(m[3]))
            for m in re.finditer(r"^\s*\d+ (\S+)\s+([0-9a-f]+)\s+\S+\s+\S+\s+\S+\s+2\*\*(\d+)", text, re.M)}


def test_cortex_m55_compile_is_warning_free(mlf, tmp_path):
    sources = sorted((mlf / "codegen/host/src").glob("*.c")) + sorted((mlf / "runtime/src").glob("*.c"))
    metadata = json.loads((mlf / "metadata.json").read_text())["modules"]["default"]
    main = metadata["memory"]["functions"]["main"][0]
    rodata = 0
    for source in sources:
        obj = tmp_path / f"{source.stem}.o"
        result = subprocess.run([*ARM_GCC, f"-I{mlf}/codegen/host/include", f"-I{mlf}/runtime/include",
                                 f"-I{SHIM}", str(source), "-o", str(obj)], capture_output=True, text=True)
        assert result.returncode == 0 and not result.stderr, result.stderr
        sections = _sections(obj)
        assert not any(name.startswith(".data") and size for name, (size, _) in sections.items())
        if ".rodata.tvm" in sections:
            size, alignment = sections[".rodata.tvm"]
            assert alignment == 16
            rodata += -(-size // 16) * 16  # every constant array starts 16-byte aligned
        for pool in metadata["memory"]["workspace_pools"]:
            if POOL_SECTIONS[pool["name"]] in sections:
                assert sections[POOL_SECTIONS[pool["name"]]] == (pool["size_bytes"], 16)
    assert rodata == main["constants_size_bytes"]


def _c_name(name: str) -> str:
    return re.sub(r"\W", "_", name)


def test_dedicated_sram_places_the_fast_scratch_apart(built, tmp_path):
    """Under Dedicated_Sram the fast scratch (SRAM) and the workspace (DRAM) are static arrays in sections of their
    own, as large as the memory plan's pools, so that the linker script can place them in different memories."""
    mlf = built("u65-256-dedicated")
    plan = json.loads((mlf / "src/memory_plan.json").read_text())
    sizes = {pool["name"]: pool["size_bytes"] for pool in plan["pools"]}
    assert sizes.keys() == POOL_SECTIONS.keys() and all(sizes.values())
    runner = mlf / "codegen/host/src/default_lib0.c"
    for pool, section in POOL_SECTIONS.items():
        assert (f"static uint8_t tvmgen_default_{pool}_pool[{sizes[pool]}] __attribute__((section(\"{section}\"), "
                "aligned(16)));") in runner.read_text()
    obj = tmp_path / "default_lib0.o"
    subprocess.run([*ARM_GCC, f"-I{mlf}/codegen/host/include", f"-I{mlf}/runtime/include", f"-I{SHIM}",
                    str(runner), "-o", str(obj)], check=True)
    sections = _sections(obj)
    assert {section: sections[section] for section in POOL_SECTIONS.values()} == \
        {section: (sizes[pool], 16) for pool, section in POOL_SECTIONS.items()}
    cmake = (mlf / "CMakeLists.txt").read_text()
    assert f"#   .bss.noinit.tvm  the workspace pool ({sizes['workspace']} bytes;" in cmake
    assert f"#   .bss.noinit.tvm.fast_scratch  the fast_scratch pool ({sizes['fast_scratch']} bytes;" in cmake


def test_header_matches_metadata(mlf):
    header = (mlf / "codegen/host/include/tvmgen_default.h").read_text()
    metadata = json.loads((mlf / "metadata.json").read_text())["modules"]["default"]
    main = metadata["memory"]["functions"]["main"][0]
    macros = dict(re.findall(r"^#define (TVMGEN_DEFAULT_\w+) (\d+)$", header, re.M))
    assert int(macros["TVMGEN_DEFAULT_WORKSPACE_SIZE"]) == main["workspace_size_bytes"]
    for pool in metadata["memory"]["workspace_pools"]:
        assert int(macros[f"TVMGEN_DEFAULT_{pool['name'].upper()}_WORKSPACE_POOL_SIZE"]) == pool["size_bytes"]
    for kind in ("inputs", "outputs"):
        block = re.search(rf"struct tvmgen_default_{kind} {{\n(.*?)}};", header, re.S).group(1)
        fields = re.findall(r"(\w+)\* (\w+);", block)
        assert fields == [(C_TYPES[info["dtype"]], _c_name(name)) for name, info in main[kind].items()]
        for name, info in main[kind].items():
            assert int(macros[f"TVMGEN_DEFAULT_{_c_name(name).upper()}_SIZE"]) == info["size"]
    npu = json.loads((mlf / "src/interface.json").read_text())["accelerator"] is not None
    assert ("struct tvmgen_default_devices" in header) == npu
    signature = re.search(r"^int32_t tvmgen_default_run\((.*)\);$", header, re.M).group(1)
    expected = ["struct tvmgen_default_inputs* inputs", "struct tvmgen_default_outputs* outputs"]
    assert signature.split(", ") == expected + (["struct tvmgen_default_devices* devices"] if npu else [])


def test_tarball_is_byte_identical_across_compiles(tmp_path):
    model = shared_model(KWS)
    first = compile_model(model, tmp_path / "a", npu_target("ethos-u55-128"))
    second = compile_model(model, tmp_path / "b", npu_target("ethos-u55-128"))
    assert first.read_bytes() == second.read_bytes()
    files = members(first)
    assert {"./metadata.json", "./codegen/host/include/tvmgen_default.h", "./codegen/host/src/default_lib0.c",
            "./src/relax.txt", "./src/offload_report.txt", "./src/memory_plan.json", "./runtime/src/ethosu_tvm_npu.c",
            "./runtime/include/ethosu_tvm_npu.h"} <= set(files)
    assert "./codegen/host/src/default_lib1.c" not in files  # KWS runs wholly on the NPU: no host kernel
    metadata = json.loads(files["./metadata.json"])
    assert metadata["version"] == 7
    entry = metadata["modules"]["default"]
    assert (entry["executors"], entry["style"]) == (["aot"], "full-model")
    assert "SOFTMAX" in files["./src/offload_report.txt"].decode()
    assert '"Codegen": "ethos-u"' in files["./src/relax.txt"].decode()


def test_io_fields_are_type_checked(built, tmp_path):
    """An application's buffer of the tensor's C type compiles warning-free; a buffer of another type is an error."""
    mlf = built("mixed-io")
    main = json.loads((mlf / "metadata.json").read_text())["modules"]["default"]["memory"]["functions"]["main"][0]

    def application(wrong: str | None) -> Path:
        lines = ['#include "tvmgen_default.h"']
        for kind in ("inputs", "outputs"):
            for index, (name, info) in enumerate(main[kind].items()):
                c_type = C_TYPES[info["dtype"]] if name != wrong else "int32_t"
                lines.append(f"static {c_type} {kind}_{index}[{info['size']}];")
            fields = ", ".join(f".{_c_name(name)} = {kind}_{index}" for index, name in enumerate(main[kind]))
            lines.append(f"struct tvmgen_default_{kind} {kind} = {{{fields}}};")
        source = tmp_path / f"app_{wrong}.c"
        source.write_text("\n".join(lines) + "\n")
        return source

    def compile_c(source: Path) -> subprocess.CompletedProcess:
        return subprocess.run([*ARM_GCC, f"-I{mlf}/codegen/host/include", str(source), "-o", str(tmp_path / "a.o")],
                              capture_output=True, text=True)

    assert {info["dtype"] for kind in ("inputs", "outputs") for info in main[kind].values()} == \
        {"int8", "uint8", "float32"}
    right = compile_c(application(None))
    assert right.returncode == 0 and not right.stderr, right.stderr
    for name in [*main["inputs"], *main["outputs"]]:
        wrong = compile_c(application(name))
        assert wrong.returncode != 0 and "incompatible-pointer-types" in wrong.stderr, (name, wrong.stderr)


@pytest.mark.parametrize("length", [0, 1, 15, 16, 17, 32, 33, 1000])
def test_constant_arrays_hold_sixteen_bytes_a_row(length):
    """Every byte as 0xhh, in rows of sixteen, the last row short."""
    data = bytes((7 * i + 3) % 256 for i in range(length))
    rows = [", ".join(f"0x{b:02x}" for b in data[i:i + 16]) for i in range(0, length, 16)]
    text = _byte_array("weights", data, "note")
    assert text.startswith(f"/* note */\nstatic const uint8_t weights[{length}] ")
    assert text.endswith(" = {\n  " + ",\n  ".join(rows) + "\n};\n")
