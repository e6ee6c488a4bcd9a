"""`tvmc micro create-project DIR module.tar zephyr` built against a real Zephyr tree (opt-in: ZEPHYR_BASE names
it; its hal_ethos_u and cmsis modules come from its west workspace or ZEPHYR_MODULES). The host-only sample runs on
QEMU mps3-an547 bit-exactly against LiteRT; the NPU sample builds with Zephyr's Ethos-U driver, the model's
sections outside the TCMs. Without ZEPHYR_BASE these tests skip, saying so: no Zephyr tree is in a package registry.
The generated module's files are checked without Zephyr in tests/mlf/test_zephyr_module.py."""
from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
from qemu_harness import GCC, QEMU, parse_dumps

from ethosu_tvm.cli import main as tvmc
from ethosu_tvm.testing import models
from ethosu_tvm.testing.reference import random_inputs, run_litert

BOARD = "mps3/corstone300/an547"
pytestmark = pytest.mark.skipif(not os.environ.get("ZEPHYR_BASE"), reason=(
    "ZEPHYR_BASE is not set: set it to a Zephyr tree (with the hal_ethos_u and cmsis modules) to build the sample"))
TCM = (range(0x10000000, 0x10080000), range(0x30000000, 0x30080000), range(0, 0x80000), range(0x20000000, 0x20080000))


def _sample(tmp_path: Path, model: bytes, target: str, inputs: list) -> Path:
    (tmp_path / "m.tflite").write_bytes(model)
    assert tvmc(["compile", f"--target={target}", str(tmp_path / "m.tflite"), "-o", str(tmp_path / "m.tar"),
                 "-q"]) == 0
    np.savez(tmp_path / "in.npz", **{f"input_{i}": x for i, x in enumerate(inputs)})
    assert tvmc(["micro", "create-project", str(tmp_path / "app"), str(tmp_path / "m.tar"), "zephyr",
                 "--inputs", str(tmp_path / "in.npz")]) == 0
    return tmp_path / "app"


def _build(app: Path) -> Path:
    env = dict(os.environ)
    if "ZEPHYR_TOOLCHAIN_VARIANT" not in env:  # the apt arm-none-eabi-gcc the project installs
        env.update(ZEPHYR_TOOLCHAIN_VARIANT="gnuarmemb",
                   GNUARMEMB_TOOLCHAIN_PATH=str(Path(shutil.which(GCC)).parents[1]))
    build = app / "build"
    for command in (["cmake", "-S", str(app), "-B", str(build), f"-DBOARD={BOARD}"], ["cmake", "--build", str(build)]):
        result = subprocess.run(command, capture_output=True, text=True, env=env)
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return build / "zephyr" / "zephyr.elf"


def _run_until_top_class(elf: Path, timeout: float = 120) -> str:
    """Zephyr does not leave QEMU when main returns: read the console until main's last line."""
    out_path = elf.with_suffix(".stdout")
    with out_path.open("wb") as out:
        qemu = subprocess.Popen([QEMU, "-M", "mps3-an547", "-nographic", "-kernel", str(elf)],
                                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while "top class:" not in out_path.read_text(errors="replace") and time.monotonic() < deadline:
            time.sleep(0.5)
        qemu.kill()
        qemu.wait()
    return out_path.read_text(errors="replace")


def test_host_only_sample_runs_bit_exact(tmp_path):
    model = models.make_graph("multi_io")
    inputs = random_inputs(model, 5)
    expected = run_litert(model, inputs)
    stdout = _run_until_top_class(_build(_sample(tmp_path, model, "c -mcpu=cortex-m55", inputs)))
    dumps = list(parse_dumps(stdout).values())
    assert len(dumps) == len(expected) > 1, stdout[-2000:]
    for got, want in zip(dumps, expected):
        np.testing.assert_array_equal(np.frombuffer(got, want.dtype).reshape(want.shape), want)
    assert f"top class: {int(np.argmax(expected[0]))}" in stdout


def test_npu_sample_builds_with_zephyrs_driver(tmp_path):
    model = models.make_graph("ds_cnn")
    elf = _build(_sample(tmp_path, model, "ethos-u -accelerator-config=ethos-u55-128,c", random_inputs(model, 0)))
    nm = subprocess.run([GCC.replace("gcc", "nm"), str(elf)], capture_output=True, text=True, check=True).stdout
    symbols = {parts[2]: (parts[1], int(parts[0], 16)) for parts in map(str.split, nm.splitlines()) if len(parts) == 3}
    assert "ethosu_invoke_v3" in symbols and "tvmgen_default_run" in symbols
    model_data = [address for name, (kind, address) in symbols.items()  # command streams, weights, the pool
                  if name.startswith("tvmgen_default_") and kind in "bBdDrR"]
    assert model_data and not any(address in tcm for address in model_data for tcm in TCM)
