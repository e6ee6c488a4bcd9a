"""Layer dumps (`tvmc run --debug-layers DIR`, `CompiledModel.run(..., debug_layers=DIR)`): every tensor the compiled
program materialises, copied out of the workspace right after the step that wrote it, keyed by its TFLite name.

Only what reaches memory whole is there: each NPU launch's outputs and each host kernel's output. Operators fused
into one launch (a cascade, or an NPU subgraph) hand their intermediates on inside the NPU and are absent, as are
operators folded at compile time. A host kernel's output is its operator's; each output of an NPU launch is that
of the primitive computing it (of the last operator, in model order, that the primitive holds); an operator that
takes several steps (e.g. GATHER's copies) has the last one's output. The outputs of an operator with several
(SPLIT, UNPACK, ...) cannot be told apart that way and are left out.

A default NPU build is one launch per NPU subgraph, so its dump is nearly blind (a network that runs whole on the
NPU shows its output only). A debug build (`build(..., split_launches=True)`, `tvmc compile
--debug-split-launches`) gives every NPU operator a launch of its own, so that each operator's output reaches
memory whole. Launches are split rather than each OFM also copied to a dump area by extra NPU operations: in a
cascade an OFM never exists whole (a few rows at a time in a ring buffer: it would take a copy per stripe), and
the copies and their buffers would change the streams and the scratch plan of the build being debugged all the
same. The split build legalizes the same composites by the same rules into the same primitives, so every
operator computes the same numbers as in the default build; only the scheduling differs (launch boundaries,
cascading and in-place writes across operators, the memory plan). If the default build's output is wrong and
every operator of the debug build equals the reference, the fault is in that scheduling. The default build is not
affected.

The map (`src/debug_layers.json` in an MLF compiled with `--debug-info` or `--debug-split-launches`) says where
each tensor is, and which operators' outputs the NPU launches keep inside (`tvmc run` says a debug build would
dump them); the dump directory gets one .npy per tensor and `index.json` (name, file, operator index and kind,
shape, dtype, quantization, step).
"""
from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from .aot.program import HostStep, NpuStep
from .frontend.attributes import op_outputs

DEBUG_MAP_PATH = "src/debug_layers.json"
INDEX = "index.json"


@dataclass(frozen=True)
class LayerTensor:
    """One materialised tensor: its TFLite name and producer, and where it is after `step` (`pool`/`offset` in the
    workspace, or the model output `output` when the application's buffer holds it)."""

    name: str
    operator: int
    kind: str
    shape: tuple[int, ...]
    dtype: str
    scales: tuple[float, ...]
    zero_points: tuple[int, ...]
    step: int
    pool: str | None = None
    offset: int | None = None
    output: str | None = None

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape)) * np.dtype(self.dtype).itemsize


def layer_tensors(module) -> tuple[LayerTensor, ...]:
    """The materialised tensors of a `CompiledModel` that name a TFLite tensor, in step order."""
    from .host import fuse_host_ops
    from .layer_report import operator_claims, output_primitives

    outputs = op_outputs(module.partitioned)
    if not outputs:
        raise ValueError("layer dumps name TFLite tensors: build a module imported with ethosu_tvm.from_tflite")
    kinds = {entry.index: entry.op for entry in module.offload.ops}
    model_outputs = {io.tensor.name: io.name for io in module.program.outputs}
    states = {state.after.name for state in module.program.states}  # an LSTM's states: no output of its operator
    fused = fuse_host_ops(module.partitioned)
    result = []
    for index, (step, claims) in enumerate(zip(module.program.steps, operator_claims(module, fused))):
        producers = [claims[0]] if isinstance(step, HostStep) else \
            [None if p is None else claims[p] for p in output_primitives(fused[step.artifact.function])]
        for name, claim in zip(step.outputs, producers):
            operator = None if claim is None else max(claim)  # a primitive's operators end with its output's
            if operator is None or len(outputs[operator]) != 1 or name in states:
                continue
            tensor, source = module.program.tensors[name], outputs[operator][0]
            where = {"output": model_outputs[name]} if name in model_outputs and \
                not module.workspace.io_in_workspace else dict(zip(("pool", "offset"), module.workspace.offset(name)))
            result.append(LayerTensor(source.name, operator, kinds[operator], tensor.shape, tensor.dtype,
                                      source.scales, source.zero_points, index, **where))
    last = {tensor.operator: tensor for tensor in result}  # an operator of several steps: its output is the last's
    return tuple(tensor for tensor in result if last[tensor.operator] is tensor)


def hidden_operators(module, tensors: tuple[LayerTensor, ...]) -> tuple[int, ...]:
    """The operators whose output an NPU launch of a `CompiledModel` keeps inside (not among `tensors`) and that a
    debug build with a launch per operator dumps: the last operator of each composite, when it has one output."""
    from .layer_report import operator_claims

    outputs, dumped = op_outputs(module.partitioned), {tensor.operator for tensor in tensors}
    computed = {max(claim) for step, claims in zip(module.program.steps, operator_claims(module))
                if isinstance(step, NpuStep) for claim in claims}
    return tuple(sorted(i for i in computed - dumped if len(outputs[i]) == 1))


def to_json(tensors: tuple[LayerTensor, ...], hidden: tuple[int, ...]) -> str:
    return json.dumps({"tensors": [asdict(t) for t in tensors], "hidden": list(hidden)}, indent=2) + "\n"


def from_json(text: str) -> tuple[tuple[LayerTensor, ...], tuple[int, ...]]:
    """The map's tensors, and the operators it leaves inside NPU launches."""
    data = json.loads(text)
    tensors = tuple(LayerTensor(**{**entry, "shape": tuple(entry["shape"]), "scales": tuple(entry["scales"]),
                                   "zero_points": tuple(entry["zero_points"])}) for entry in data["tensors"])
    return tensors, tuple(data["hidden"])


def run_dumping(program, inputs, tensors: tuple[LayerTensor, ...]) -> tuple[dict, dict[str, np.ndarray]]:
    """Run a debug `HostProgram` once: its outputs, and every tensor of `tensors` by name."""
    by_step: dict[int, list[LayerTensor]] = {}
    for tensor in tensors:
        by_step.setdefault(tensor.step, []).append(tensor)
    dumped: dict[str, np.ndarray] = {}

    def after_step(step: int, read) -> None:
        for tensor in by_step.get(step, []):
            if tensor.pool is not None:
                data = read(tensor.pool, tensor.offset, tensor.nbytes)
                dumped[tensor.name] = np.frombuffer(data, dtype=tensor.dtype).reshape(tensor.shape).copy()

    outputs = program.run(inputs, after_step=after_step)
    for tensor in tensors:
        if tensor.output is not None:
            dumped[tensor.name] = outputs[tensor.output].copy()
    return outputs, dumped


def file_name(position: int, name: str) -> str:
    """A file name for the tensor named `name` (TFLite names hold '/', ';', ':')."""
    return f"{position:03d}_{re.sub(r'[^A-Za-z0-9_.-]', '_', name)[:100]}.npy"


def write_dump(directory: Path, tensors: tuple[LayerTensor, ...], dumped: dict[str, np.ndarray]) -> None:
    """The .npy files and index.json in `directory` (created if needed)."""
    directory.mkdir(parents=True, exist_ok=True)
    index = []
    for position, tensor in enumerate(tensors):
        name = file_name(position, tensor.name)
        np.save(directory / name, dumped[tensor.name])
        index.append({"name": tensor.name, "file": name, "operator": tensor.operator, "kind": tensor.kind,
                      "shape": list(tensor.shape), "dtype": tensor.dtype, "scales": list(tensor.scales),
                      "zero_points": list(tensor.zero_points), "step": tensor.step})
    (directory / INDEX).write_text(json.dumps(index, indent=2) + "\n")


def read_dump(directory: Path) -> tuple[list[dict], dict[str, np.ndarray]]:
    """index.json's entries and the arrays by tensor name."""
    index = json.loads((Path(directory) / INDEX).read_text())
    return index, {entry["name"]: np.load(Path(directory) / entry["file"]) for entry in index}
