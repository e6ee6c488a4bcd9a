#!/usr/bin/env python3
"""Benchmark: the operators ethosu_tvm leaves on the host beside those Vela leaves on the CPU (issue 14's table).

Every factory op model (`ethosu_tvm.testing.models.OPS`, int8, and int16 and uint8 where the op has them), every
factory graph (`models.GRAPHS`), an integer LSTM (`models.Net.lstm`) and the MLPerf Tiny models are compiled for
one accelerator by both tools. Ours: `ethosu_tvm.build`, counting the entries of its offload report whose target
is the host (a build that fails is "ours failed"). Vela (`--optimise Performance`): every operator of its
`_vela.tflite` other than the `ethos-u` custom operator (a Vela failure is "vela failed"). The goal is ours <= Vela's
on every row.

    .venv/bin/python benchmarks/host_ops.py [--accelerator CONFIG] [--only NAME ...] [--models-dir DIR]
                                            [--out-dir DIR]

It prints a Markdown table and writes `host_ops.md` and `host_ops.csv` to --out-dir.
"""
from __future__ import annotations

import argparse
import csv
import io
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # loaded by file path (tests/test_benchmarks.py), not run as a script
    sys.path.insert(0, str(HERE))

from compare import DEFAULT_MODELS, DEFAULT_OUT_DIR  # noqa: E402
from measure import progress, target, warm_up  # noqa: E402

DEFAULT_ACCELERATOR = "ethos-u55-128"
VELA_NPU_OP = "ethos-u"
# Forms real models use that the factory defaults do not: per-tensor weights (older converters write them),
VARIANTS = {
    "conv2d per-tensor int8": ("conv2d", dict(per_channel=False)),
    "depthwise_conv2d per-tensor int8": ("depthwise_conv2d", dict(per_channel=False)),
    "arg_max int64 int8": ("arg_max", dict(output_type="int64")),  # TensorFlow's default index type
    "batch_matmul adj_x int8": ("batch_matmul", dict(adj_x=True)),  # attention's Q·Kᵀ written the other way
    "batch_matmul broadcast int8": ("batch_matmul", dict(in_shape=(2, 4, 6), in2_shape=(1, 6, 5))),
    # and the resize factors Vela offloads beyond the factory's 2
    "resize_nearest_neighbor by 4 int8": ("resize_nearest_neighbor", dict(size=(32, 32))),
    "resize_nearest_neighbor aligned by 2 int8": ("resize_nearest_neighbor", dict(size=(15, 15), align_corners=True)),
    "resize_bilinear by 8 int8": ("resize_bilinear", dict(size=(64, 64))),
    "resize_bilinear aligned by 4 int8": ("resize_bilinear", dict(size=(29, 29), align_corners=True)),
    "resize_bilinear same size int8": ("resize_bilinear", dict(size=(8, 8))),
    "resize_bilinear 1x1 to 5x7 int8": ("resize_bilinear", dict(in_shape=(1, 1, 1, 8), size=(5, 7))),
}
CSV_COLUMNS = ("model", "ours_host_ops", "vela_cpu_ops", "verdict", "ours_host", "vela_cpu")


@dataclass(frozen=True)
class Count:
    """What one tool leaves on the CPU for one model: the operators (with our reason, if any), or why it failed."""

    ops: tuple[str, ...] = ()
    error: str = ""

    @property
    def number(self) -> int | None:
        return None if self.error else len(self.ops)


@dataclass(frozen=True)
class HostOpsRow:
    model: str
    ours: Count
    vela: Count

    @property
    def verdict(self) -> str:
        if self.ours.error:
            return "ours failed"
        if self.vela.error:
            return "vela failed"
        return "ok" if self.ours.number <= self.vela.number else "ours > Vela"


def one_line(err: Exception) -> str:
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0] if text else ''}"


def ours_on_host(model: bytes, accelerator: str) -> Count:
    """The host entries of our build's offload report, each "OP (reason)"."""
    import ethosu_tvm

    try:
        module = ethosu_tvm.build(ethosu_tvm.from_tflite(model), target=target(accelerator))
    except Exception as err:  # any failure of ours is a result of the row, not the end of the benchmark
        return Count(error=one_line(err))
    return Count(tuple(f"{e.op} ({e.reason})" for e in module.offload.ops if e.target == "host"))


def tflite_operators(model: bytes) -> list[str]:
    """The operators of a .tflite in every subgraph: builtin names, custom operators by their custom code."""
    import tflite

    from ethosu_tvm.frontend.tflite_file import read_model

    names = {value: name for name, value in vars(tflite.BuiltinOperator).items() if not name.startswith("_")}
    parsed = read_model(model)
    found = []
    for s in range(parsed.SubgraphsLength()):
        graph = parsed.Subgraphs(s)
        for i in range(graph.OperatorsLength()):
            code = parsed.OperatorCodes(graph.Operators(i).OpcodeIndex())
            builtin = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
            custom = code.CustomCode() if builtin == tflite.BuiltinOperator.CUSTOM else None
            found.append(custom.decode() if custom is not None else names[builtin])
    return found


def vela_on_cpu(model: bytes, name: str, accelerator: str, work_dir: Path) -> Count:
    """Every operator of Vela's output other than its ethos-u custom operator."""
    from ethosu_tvm.sim.vela_compile import compile_model

    path = work_dir / f"{name}.tflite"
    path.write_bytes(model)
    try:
        compiled = compile_model(path, accelerator, "Performance", work_dir / name)
    except RuntimeError as err:  # compile_model's one-line "vela failed on ...: ..."
        return Count(error=str(err).splitlines()[0])
    return Count(tuple(op for op in tflite_operators(compiled) if op != VELA_NPU_OP))


def benchmark_models(models_dir: Path):
    """(row name, model bytes) of every factory op model, graph and edge form, then the MLPerf Tiny models."""
    from ethosu_tvm.testing import models

    for op, dtype in op_models():
        yield f"{op} {dtype}", lambda op=op, dtype=dtype: models.make(op, 0, dtype=dtype)
    for name, (op, params) in VARIANTS.items():
        yield name, lambda op=op, params=params: models.make(op, 0, **params)
    for graph in models.GRAPHS:
        yield f"graph {graph}", lambda graph=graph: models.make_graph(graph, 0)
    for edge in models.EDGES:
        yield f"edge {edge}", lambda edge=edge: models.make_edge(edge, 0)
    yield "unidirectional_sequence_lstm int8", _lstm
    for file in DEFAULT_MODELS:
        yield Path(file).stem, lambda file=file: (models_dir / file).read_bytes()


def op_models() -> list[tuple[str, str]]:
    """(factory op, activation type) of every single-operator model: int8, int16 and uint8 where the op has them."""
    from ethosu_tvm.testing import models

    return [(op, dtype) for op in models.OPS for dtype, ops in (("int8", models.OPS), ("int16", models.INT16_OPS),
                                                                  ("uint8", models.UINT8_OPS)) if op in ops]


def _lstm() -> bytes:
    """An integer LSTM as a Keras LSTM converts (`models.Net.lstm`): 8 steps of 10 features, 16 units."""
    from ethosu_tvm.testing import models

    net = models.Net(0)
    net.output(net.lstm(net.input((1, 8, 10)), units=16))
    return net.build()


def measure_row(name: str, model: bytes, accelerator: str, work_dir: Path) -> HostOpsRow:
    return HostOpsRow(name, ours_on_host(model, accelerator),
                      vela_on_cpu(model, name.replace(" ", "_"), accelerator, work_dir))


def _cell(count: Count) -> str:
    return count.error or "; ".join(count.ops)


def _number(count: Count) -> str:
    return "" if count.error else str(count.number)


def markdown_table(rows: list[HostOpsRow], accelerator: str) -> str:
    ok = sum(row.verdict == "ok" for row in rows)
    lines = [f"### Operators left on the CPU, {accelerator}: ours <= Vela on {ok} of {len(rows)} rows", "",
             "| model | ours on host | Vela on CPU | verdict | ours' host operators (reason) | Vela's CPU operators |",
             "|---|---|---|---|---|---|"]
    lines += [f"| {row.model} | {_number(row.ours)} | {_number(row.vela)} | {row.verdict} | "
              f"{_cell(row.ours).replace('|', '/')} | {_cell(row.vela).replace('|', '/')} |" for row in rows]
    return "\n".join(lines) + "\n"


def csv_text(rows: list[HostOpsRow]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    writer.writerows((row.model, _number(row.ours), _number(row.vela), row.verdict, _cell(row.ours),
                      _cell(row.vela)) for row in rows)
    return out.getvalue()


def main(argv: list[str] | None = None) -> int:
    from ethosu_tvm.testing import shared_models_dir

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--accelerator", default=DEFAULT_ACCELERATOR, help="(default: %(default)s)")
    parser.add_argument("--only", nargs="+", metavar="NAME",
                        help="measure only the rows whose name starts with one of these (e.g. 'softmax', 'graph')")
    parser.add_argument("--models-dir", type=Path, default=None,
                        help="folder of the MLPerf Tiny models (default: $ETHOSU_TVM_MODELS, else ../shared/models)")
    parser.add_argument("--out-dir", type=Path, default=DEFAULT_OUT_DIR,
                        help="where host_ops.md and host_ops.csv go (default: benchmarks/results)")
    args = parser.parse_args(argv)
    warm_up()
    rows = []
    with tempfile.TemporaryDirectory(prefix="ethosu_tvm_host_ops_") as work_dir:
        for name, make in benchmark_models(args.models_dir or shared_models_dir()):
            if args.only and not any(name.startswith(prefix) for prefix in args.only):
                continue
            progress(name)
            rows.append(measure_row(name, make(), args.accelerator, Path(work_dir)))
    table = markdown_table(rows, args.accelerator)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    (args.out_dir / "host_ops.md").write_text(table)
    (args.out_dir / "host_ops.csv").write_text(csv_text(rows))
    print(table, end="")
    progress(f"wrote {args.out_dir / 'host_ops.md'} and {args.out_dir / 'host_ops.csv'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
