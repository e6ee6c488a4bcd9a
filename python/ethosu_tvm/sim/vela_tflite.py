"""Running a Vela-compiled `_vela.tflite` the way TensorFlow Lite Micro's ethos-u kernel would.

The model holds one CUSTOM operator "ethos-u". Its inputs are the command stream (a COP1 driver payload), the
read-only data, the scratch arena, the fast scratch arena, then the IFMs; its outputs are the OFMs. The kernel maps
input i (i >= 1) to region i - 1 and output j to region n_inputs - 1 + j. Tensors listed in the
OfflineMemoryAllocation metadata share one arena at their offsets (so regions may alias, e.g. an IFM inside scratch).
The fast scratch is the scratch tensor again, except under Vela's Dedicated_Sram memory mode (an Ethos-U65): there it
is a tensor of its own, which the driver places in the NPU's dedicated SRAM, apart from the arena.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..arch.system import DEFAULT_SYSTEM, FAST_SCRATCH_REGION, System
from ..frontend.tflite_file import TFLITE_DTYPES, read_model
from .errors import SimulatorError
from .memory import Buffer
from .simulator import Simulator
from .stats import SimStats

CUSTOM_CODE = b"ethos-u"
_BUILTIN_CUSTOM = 32


@dataclass(frozen=True)
class IoTensor:
    """A graph input or output: the region the kernel sees it as and how to view its bytes."""

    name: str
    region: int
    shape: tuple[int, ...]
    dtype: np.dtype

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape)) * self.dtype.itemsize


@dataclass(frozen=True)
class RegionBuffer:
    """The tensor behind a region: constant data, or `size` bytes at an arena offset (-1: a buffer of its own)."""

    offset: int
    size: int
    data: bytes | None


@dataclass(frozen=True)
class VelaModel:
    """The parts of a `_vela.tflite` needed to execute it."""

    command_stream: bytes | list[int]
    regions: dict[int, RegionBuffer]
    inputs: list[IoTensor]
    outputs: list[IoTensor]


def _offline_offsets(model, n_tensors: int) -> list[int]:
    for k in range(model.MetadataLength()):
        metadata = model.Metadata(k)
        if metadata.Name() == b"OfflineMemoryAllocation":
            raw = np.frombuffer(model.Buffers(metadata.Buffer()).DataAsNumpy().tobytes(), dtype="<i4")
            if len(raw) < 3 or raw[1] != 1 or raw[2] != n_tensors or len(raw) != 3 + n_tensors:
                raise SimulatorError(f"OfflineMemoryAllocation metadata {raw[:3].tolist()} does not match the model")
            return [int(v) for v in raw[3:]]
    return [-1] * n_tensors


def parse(model_bytes: bytes) -> VelaModel:
    """Locate the ethos-u operator, its region buffers and the graph I/O of a `_vela.tflite`."""
    model = read_model(model_bytes)
    if model.SubgraphsLength() != 1:
        raise SimulatorError(f"expected one subgraph, found {model.SubgraphsLength()}")
    graph = model.Subgraphs(0)
    names = []
    for i in range(graph.OperatorsLength()):
        code = model.OperatorCodes(graph.Operators(i).OpcodeIndex())
        builtin = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
        names.append(code.CustomCode() if builtin == _BUILTIN_CUSTOM else f"builtin {builtin}")
    if names != [CUSTOM_CODE]:
        raise SimulatorError(f"the model must consist of one ethos-u operator, it has {names}")
    op = graph.Operators(0)
    op_inputs, op_outputs = [int(t) for t in op.InputsAsNumpy()], [int(t) for t in op.OutputsAsNumpy()]
    offsets = _offline_offsets(model, graph.TensorsLength())

    def tensor_bytes(index: int) -> bytes | None:
        buffer = model.Buffers(graph.Tensors(index).Buffer())
        return buffer.DataAsNumpy().tobytes() if buffer.DataLength() else None

    def tensor_shape(index: int) -> tuple[int, ...]:
        tensor = graph.Tensors(index)
        return tuple(int(d) for d in tensor.ShapeAsNumpy()) if tensor.ShapeLength() else ()

    def tensor_dtype(index: int) -> np.dtype:
        kind = graph.Tensors(index).Type()
        if kind not in TFLITE_DTYPES:
            raise SimulatorError(f"tensor {index} has unsupported TFLite type {kind}")
        return TFLITE_DTYPES[kind]

    stream = tensor_bytes(op_inputs[0])
    if stream is None:
        raise SimulatorError("the ethos-u operator has no command stream data")
    region_tensors = op_inputs[1:] + op_outputs
    regions = {}
    for region, index in enumerate(region_tensors):
        size = int(np.prod(tensor_shape(index))) * tensor_dtype(index).itemsize
        dedicated = region == FAST_SCRATCH_REGION and index != region_tensors[FAST_SCRATCH_REGION - 1]
        regions[region] = RegionBuffer(-1 if dedicated else offsets[index], size, tensor_bytes(index))

    def io(index: int) -> IoTensor:
        region = region_tensors.index(index)
        return IoTensor(graph.Tensors(index).Name().decode(), region, tensor_shape(index), tensor_dtype(index))

    graph_inputs = [int(t) for t in graph.InputsAsNumpy()]
    graph_outputs = [int(t) for t in graph.OutputsAsNumpy()]
    for index in graph_inputs + graph_outputs:
        if index not in region_tensors:
            raise SimulatorError(f"graph tensor {index} is not an operand of the ethos-u operator")
    return VelaModel(stream, regions, [io(t) for t in graph_inputs], [io(t) for t in graph_outputs])


def _memory(model: VelaModel) -> dict[int, Buffer]:
    """A buffer for each region: constants as read-only bytes, arena tensors as views into one arena."""
    arena = memoryview(bytearray(max((r.offset + r.size for r in model.regions.values() if r.offset >= 0),
                                     default=0)))
    regions: dict[int, Buffer] = {}
    for index, region in model.regions.items():
        if region.data is not None:
            regions[index] = region.data
        elif region.offset >= 0:
            regions[index] = arena[region.offset : region.offset + region.size]
        else:
            regions[index] = bytearray(region.size)
    return regions


def seeded_inputs(model: VelaModel, seed: int) -> list[np.ndarray]:
    """Inputs drawn uniformly from each input type's full range."""
    rng = np.random.default_rng(seed)
    return [rng.integers(np.iinfo(i.dtype).min, np.iinfo(i.dtype).max, size=i.shape, endpoint=True, dtype=i.dtype)
            for i in model.inputs]


def execute(model: VelaModel, inputs: list[np.ndarray], accelerator: str,
            system: System = DEFAULT_SYSTEM) -> tuple[list[np.ndarray], SimStats]:
    """Outputs and statistics (cycles estimated for `system`) of executing a parsed model on the given inputs; the
    stream must also be free of races between DMA and compute (`hazards`)."""
    if len(inputs) != len(model.inputs):
        raise ValueError(f"the model has {len(model.inputs)} inputs, {len(inputs)} were given")
    regions = _memory(model)
    for info, value in zip(model.inputs, inputs):
        value = np.asarray(value)
        if value.dtype != info.dtype or value.shape != info.shape:
            raise ValueError(f"input {info.name!r} needs {info.dtype} {info.shape}, got {value.dtype} {value.shape}")
        regions[info.region][: info.nbytes] = np.ascontiguousarray(value).tobytes()
    stats = Simulator(accelerator, system).run(model.command_stream, regions, check_hazards=True)
    outputs = [np.frombuffer(bytes(regions[info.region][: info.nbytes]), dtype=info.dtype).reshape(info.shape)
               for info in model.outputs]
    return outputs, stats


def run(model_bytes: bytes, inputs: list[np.ndarray], accelerator: str,
        system: System = DEFAULT_SYSTEM) -> tuple[list[np.ndarray], SimStats]:
    """Outputs and statistics of executing a `_vela.tflite` on the given inputs."""
    return execute(parse(model_bytes), inputs, accelerator, system)


def run_vela_tflite(model: bytes, inputs: list[np.ndarray], accelerator: str) -> list[np.ndarray]:
    """Execute a Vela-compiled `.tflite` (one ethos-u operator) and return its outputs."""
    return run(model, inputs, accelerator)[0]
