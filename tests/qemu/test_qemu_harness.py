"""The QEMU mps3-an547 harness itself: bit-exact results, exit codes, large arrays, faults, compile errors."""
import re

import numpy as np
import pytest
from qemu_harness import DUMP_HELPER_C, HARDFAULT_EXIT_CODE, build_and_run, c_array, parse_dumps

N = 999  # not a multiple of the dump line length

ADD_REQUANT_C = r"""
#include <stdint.h>
/* out = saturate_int8(round(((a - za) * ma + (b - zb) * mb) * mult[i] / 2^(31 + shift[i])) + zo) */
static void add_requant(const int8_t* a, const int8_t* b, const int32_t* mult, const int8_t* shift, int8_t* out,
                        int n, int32_t za, int32_t zb, int32_t ma, int32_t mb, int32_t zo) {
  for (int i = 0; i < n; ++i) {
    int32_t acc = (a[i] - za) * ma + (b[i] - zb) * mb;
    int64_t prod = (int64_t)acc * mult[i];
    int32_t r = (int32_t)((prod + ((int64_t)1 << (30 + shift[i]))) >> (31 + shift[i])) + zo;
    out[i] = (int8_t)(r < -128 ? -128 : r > 127 ? 127 : r);
  }
}
"""


def add_requant(a, b, mult, shift, za, zb, ma, mb, zo):
    acc = (a.astype(np.int64) - za) * ma + (b.astype(np.int64) - zb) * mb
    shift = shift.astype(np.int64)
    r = ((acc * mult + np.left_shift(np.int64(1), 30 + shift)) >> (31 + shift)) + zo
    return np.clip(r, -128, 127).astype(np.int8)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_int8_kernel_matches_numpy(tmp_path, seed):
    rng = np.random.default_rng(seed)
    a, b = (rng.integers(-128, 128, N, dtype=np.int8) for _ in range(2))
    mult = rng.integers(1 << 30, (1 << 31) - 1, N, dtype=np.int32)
    shift = rng.integers(9, 15, N, dtype=np.int8)
    za, zb, zo = (int(z) for z in rng.integers(-128, 128, 3))
    ma, mb = (int(m) for m in rng.integers(-4096, 4097, 2))
    expected = add_requant(a, b, mult, shift, za, zb, ma, mb, zo)
    saturated = np.count_nonzero((expected == -128) | (expected == 127))
    assert N // 20 < saturated < N * 3 // 4  # the data exercise both saturation and rounding

    main_c = "\n".join([
        DUMP_HELPER_C, ADD_REQUANT_C, c_array("a", a), c_array("b", b), c_array("mult", mult),
        c_array("shift", shift), c_array("out", np.zeros(N, np.int8), const=False),
        f"int main(void) {{\n  add_requant(a, b, mult, shift, out, {N}, {za}, {zb}, {ma}, {mb}, {zo});\n"
        f'  ethosu_tvm_dump("out", out, sizeof out);\n  return 0;\n}}\n'])
    result = build_and_run(main_c, tmp_path)
    assert result.exit_code == 0, result
    assert parse_dumps(result.stdout) == {"out": expected.tobytes()}


def test_c_array_types_round_trip(tmp_path):
    arrays = {
        "i8": np.array([-128, -1, 0, 1, 127], np.int8),
        "u8": np.array([0, 1, 128, 255], np.uint8),
        "i16": np.array([-32768, -1, 0, 258, 32767], np.int16),
        "i32": np.array([-2**31, -1, 0, 0x01020304, 2**31 - 1], np.int32),
    }
    main_c = DUMP_HELPER_C + "".join(c_array(name, array) for name, array in arrays.items())
    main_c += "int main(void) {\n" + "".join(
        f'  if ((uintptr_t){name} % 16) return 1;\n  ethosu_tvm_dump("{name}", {name}, sizeof {name});\n'
        for name in arrays) + "  return 0;\n}\n"
    result = build_and_run(main_c, tmp_path)
    assert result.exit_code == 0, result
    assert parse_dumps(result.stdout) == {name: array.tobytes() for name, array in arrays.items()}


@pytest.mark.parametrize("body", ["return 7;", "volatile float x = 3.5f;\n  return (int)(x * 2.0f);"],
                         ids=["int", "fpu"])
def test_exit_code_is_mains_return_value(tmp_path, body):
    result = build_and_run(f"int main(void) {{\n  {body}\n}}\n", tmp_path)
    assert result.exit_code == 7, result


CONST_BYTES, WORKSPACE_BYTES, SRAM_DATA_BYTES = 300 * 1024, 256 * 1024, 64 * 1024

LARGE_ARRAYS_C = r"""
/* sum of byte * (index % 251 + 1), read through a volatile pointer so every byte is really loaded */
static uint32_t weighted_sum(const volatile uint8_t* p, unsigned n) {
  uint32_t sum = 0;
  for (unsigned i = 0; i < n; ++i) sum += (uint32_t)p[i] * (i % 251u + 1u);
  return sum;
}

int main(void) {
  unsigned nonzero = 0;
  for (unsigned i = 0; i < sizeof workspace; ++i) nonzero += workspace[i] != 0;
  for (unsigned i = 0; i < sizeof workspace; ++i)
    workspace[i] = big_const[i] ^ sram_init[i % sizeof sram_init] ^ (uint8_t)(i >> 8);
  printf("addresses const=%p workspace=%p sram_init=%p\n", (void*)big_const, (void*)workspace, (void*)sram_init);
  printf("nonzero_at_start=%u const_sum=%lu workspace_sum=%lu\n", nonzero,
         (unsigned long)weighted_sum(big_const, sizeof big_const),
         (unsigned long)weighted_sum(workspace, sizeof workspace));
  ethosu_tvm_dump("workspace", workspace, sizeof workspace); /* 512 KB of text: more than a pipe buffer */
  return 0;
}
"""


def weighted_sum(data: np.ndarray) -> int:
    return int((data.astype(np.uint64) * (np.arange(data.size, dtype=np.uint64) % 251 + 1)).sum()) & 0xFFFFFFFF


# Where each board's linker script puts flash (QSPI) and the SRAM: SSE-300's, or the MPS2 boards' SSRAM1 and PSRAM.
REGIONS = {"cortex-m55": (range(0x38000000, 0x38800000), range(0x31000000, 0x31200000)),
           "cortex-m7": (range(0x00200000, 0x00400000), range(0x60000000, 0x61000000)),
           "cortex-m3": (range(0x00200000, 0x00400000), range(0x21000000, 0x22000000))}


@pytest.mark.parametrize("cpu", REGIONS)
def test_large_const_and_workspace_arrays(tmp_path, cpu):
    rng = np.random.default_rng(42)
    big_const = rng.integers(0, 256, CONST_BYTES, dtype=np.uint8)
    sram_init = rng.integers(0, 256, SRAM_DATA_BYTES, dtype=np.uint8)
    main_c = "".join([
        DUMP_HELPER_C, c_array("big_const", big_const),
        c_array("sram_init", sram_init, const=False, section=".sram_data"),
        f'uint8_t workspace[{WORKSPACE_BYTES}] __attribute__((aligned(16), section(".sram_bss")));\n',
        LARGE_ARRAYS_C])
    result = build_and_run(main_c, tmp_path, cpu=cpu)
    assert result.exit_code == 0, result

    addresses = {k: int(v, 16) for k, v in re.findall(r"(\w+)=0x([0-9a-f]+)", result.stdout)}
    flash, sram = REGIONS[cpu]
    assert addresses["const"] in flash
    assert addresses["workspace"] in sram and addresses["sram_init"] in sram
    index = np.arange(WORKSPACE_BYTES)
    workspace = big_const[:WORKSPACE_BYTES] ^ sram_init[index % SRAM_DATA_BYTES] ^ (index >> 8).astype(np.uint8)
    expected = (f"nonzero_at_start=0 const_sum={weighted_sum(big_const)} "
                f"workspace_sum={weighted_sum(workspace)}")
    assert expected in result.stdout, result.stdout
    assert parse_dumps(result.stdout) == {"workspace": workspace.tobytes()}


def test_fault_exits_with_distinctive_code(tmp_path):
    result = build_and_run("int main(void) {\n  __builtin_trap();\n  return 0;\n}\n", tmp_path)
    assert result.exit_code == HARDFAULT_EXIT_CODE, result
    assert "ethosu_tvm fault: exception=00000003 HFSR=40000000 CFSR=00010000" in result.stderr  # UFSR.UNDEFINSTR


def test_compile_error_reports_gcc_stderr(tmp_path):
    with pytest.raises(AssertionError, match="unused variable 'unused'"):
        build_and_run("int main(void) {\n  int unused;\n  return 0;\n}\n", tmp_path)


def test_dump_parser_rejects_truncated_dump():
    with pytest.raises(AssertionError, match="end marker"):
        parse_dumps("@@dump out 4\n0102\n")
