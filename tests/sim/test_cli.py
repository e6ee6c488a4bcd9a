"""`python -m ethosu_tvm.sim disasm|stats|bench` on every kind of input, and its one-line errors."""
import subprocess
import sys

import pytest

from ethosu_tvm.sim.__main__ import main
from ethosu_tvm.sim.bench import MODELS as BENCH_MODELS
from ethosu_tvm.sim.payload import bytes_to_words, parse_driver_payload
from ethosu_tvm.sim.vela_tflite import parse
from ethosu_tvm.testing import shared_model


@pytest.fixture(scope="module")
def kws_files(vela, tmp_path_factory):
    """The KWS model for U55-64 as a _vela.tflite, its driver payload and its raw register stream."""
    compiled = vela("kws", shared_model("mlperf_tiny_kws_dscnn_int8.tflite"), "ethos-u55-64", "Size")
    folder = tmp_path_factory.mktemp("cli")
    payload = parse(compiled).command_stream
    words = parse_driver_payload(bytes_to_words(payload)).words
    files = {"tflite": folder / "kws_vela.tflite", "payload": folder / "kws.cop1", "raw": folder / "kws.bin"}
    files["tflite"].write_bytes(compiled)
    files["payload"].write_bytes(payload)
    files["raw"].write_bytes(b"".join(w.to_bytes(4, "little") for w in words))
    return files


@pytest.mark.parametrize("kind", ["tflite", "payload", "raw"])
def test_disasm(kind, kws_files, capsys):
    assert main(["disasm", str(kws_files[kind])] + (["--accelerator", "ethos-u55-64"] if kind == "raw" else [])) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "for ethos-u55-64" in lines[0]
    assert any("NPU_SET_IFM_PRECISION" in line and "format=NHCWB16" in line for line in lines)
    assert any("; CONV: ifm 49x10x1 int8 -> ofm 25x5x" in line for line in lines)
    assert lines[-1].split()[-2:] == ["NPU_OP_STOP", "mask=65535"]


def test_stats_executed_and_static_agree(kws_files, capsys):
    assert main(["stats", str(kws_files["tflite"])]) == 0
    executed = capsys.readouterr().out.splitlines()
    assert main(["stats", str(kws_files["payload"])]) == 0
    static = capsys.readouterr().out.splitlines()
    assert "executed on seeded random inputs" in executed[0] and "not executed" in static[0]
    assert executed[1:] == static[1:]
    total = next(line for line in executed if line.startswith("total"))
    assert "2664781" in total  # MACs
    assert executed[-1].startswith("ethos-u55-64: ") and "cycles elapsed" in executed[-1]


def _elapsed(lines: list[str]) -> int:
    return int(lines[-1].split(": ")[1].split()[0])


def test_stats_in_each_system(kws_files, capsys):
    """The same stream costs more with slower flash (Deep_Embedded: half the bytes per cycle) and less with the
    constants in SRAM; what it moves does not change."""
    elapsed, totals = {}, set()
    for system in ("Ethos_U55_High_End_Embedded", "Ethos_U55_Deep_Embedded"):
        for mode in ("Shared_Sram", "Sram_Only"):
            assert main(["stats", str(kws_files["payload"]), "--system-config", system, "--memory-mode", mode]) == 0
            lines = capsys.readouterr().out.splitlines()
            elapsed[system, mode] = _elapsed(lines)
            totals.add(next(line for line in lines if line.startswith("total")).rsplit(None, 1)[0])
    assert len(totals) == 1
    high_end = elapsed["Ethos_U55_High_End_Embedded", "Shared_Sram"]
    assert elapsed["Ethos_U55_Deep_Embedded", "Shared_Sram"] > high_end > elapsed["Ethos_U55_High_End_Embedded",
                                                                                   "Sram_Only"]
    # SRAM is the same memory in both systems.
    assert elapsed["Ethos_U55_Deep_Embedded", "Sram_Only"] == elapsed["Ethos_U55_High_End_Embedded", "Sram_Only"]
    assert main(["stats", str(kws_files["payload"])]) == 0
    assert _elapsed(capsys.readouterr().out.splitlines()) == high_end  # the default


def test_bench_meets_targets(capsys):
    for name in BENCH_MODELS:  # the bench reads them from the shared folder
        shared_model(name)
    assert main(["bench", "--accelerator", "ethos-u55-128", "--repeat", "2"]) == 0
    table = capsys.readouterr().out
    for model in ("KWS", "VWW", "ResNet8", "AD"):
        assert f"\n{model} " in table
    assert table.count("meets") == 2 and "MISSES" not in table


@pytest.mark.parametrize(
    "argv, message",
    [
        (["disasm", "/nonexistent/file.bin"], "error: [Errno 2] No such file or directory"),
        (["stats", "--accelerator", "ethos-u85-256", "X"],
         "error: argument --accelerator: unknown accelerator 'ethos-u85-256'"),
        (["frobnicate"], "error: argument command: invalid choice: 'frobnicate'"),
        (["stats", "--memory-mode", "Dedicated", "X"],
         "error: argument --memory-mode: invalid choice: 'Dedicated' (choose from "),
        ([], "error: the following arguments are required: command"),
    ],
)
def test_errors_are_one_line_with_status_2(argv, message, capsys):
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith(message) and captured.err.count("\n") == 1


@pytest.mark.parametrize("content, message", [
    (b"\x01\x02\x03", "is not a whole number of 32-bit words"),
    (b"\x00\x00\x00\x00TFL3" + bytes(8), "error: "),
    (b"COP1" + bytes([5, 0, 0, 0]), "no CmdStream action"),
    (b"COP1" + bytes(4), "unknown driver action 0"),
    (bytes.fromhex("7f000000"), "unknown cmd0 opcode 0x07f"),
])
def test_bad_files_through_the_module_entry_point(content, message, tmp_path):
    path = tmp_path / "bad.bin"
    path.write_bytes(content)
    result = subprocess.run([sys.executable, "-m", "ethosu_tvm.sim", "stats", str(path)], capture_output=True,
                            text=True)
    assert result.returncode == 2 and result.stdout == ""
    assert message in result.stderr and result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def test_u65_streams(vela, tmp_path, capsys):
    """A U65-512 payload names its accelerator (product and MACs of both cores). A U65's AXI ports move twice a
    U55's bytes per cycle: the same U65-256 stream costs less on it than on a U55-256, whose compute is the same.
    Dedicated_Sram needs a system with DRAM."""
    kws = shared_model("mlperf_tiny_kws_dscnn_int8.tflite")
    payload = tmp_path / "kws.cop1"
    payload.write_bytes(parse(vela("kws", kws, "ethos-u65-512", "Performance",
                                   system=("Ethos_U65_High_End", "Dedicated_Sram"))).command_stream)
    assert main(["disasm", str(payload)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "driver payload for ethos-u65-512" in lines[0] and "mode=DUAL_CORE_DEPTH" in lines[1]
    raw = tmp_path / "kws.bin"
    u65_256 = parse(vela("kws", kws, "ethos-u65-256", "Performance", system=("Ethos_U65_High_End", "Shared_Sram")))
    words = parse_driver_payload(bytes_to_words(u65_256.command_stream)).words
    raw.write_bytes(b"".join(w.to_bytes(4, "little") for w in words))
    elapsed = {}
    for accelerator in ("ethos-u55-256", "ethos-u65-256"):
        assert main(["stats", str(raw), "--accelerator", accelerator, "--system-config", "Ethos_U65_High_End"]) == 0
        elapsed[accelerator] = _elapsed(capsys.readouterr().out.splitlines())
    assert elapsed["ethos-u65-256"] < elapsed["ethos-u55-256"]
    assert main(["stats", str(payload), "--memory-mode", "Dedicated_Sram"]) == 2
    assert capsys.readouterr().err == ("error: memory mode Dedicated_Sram keeps feature maps in DRAM; "
                                       "Ethos_U55_High_End_Embedded has OffChipFlash on its second AXI port\n")
