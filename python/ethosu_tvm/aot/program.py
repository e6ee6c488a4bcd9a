"""The AOT program: main of a partitioned module as an ordered list of NPU launches and host kernel calls over
named tensors. Everything after this (memory planning, C generation, the host runner) reads only this."""
from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Callable, Optional, Union

import numpy as np
import tvm
from tvm import relax

from ..arch.system import FAST_SCRATCH_POOL, FAST_SCRATCH_REGION, SCRATCH_REGION
from ..codegen import NpuArtifact
from ..frontend.attributes import State
from ..host import HostKernel, ScratchBuffer, UnsupportedHostOp

MODULE = "default"
PREFIX = f"tvmgen_{MODULE}"


@dataclass(frozen=True)
class TensorRef:
    """One tensor of the program; `name` is unique and a C identifier."""

    name: str
    shape: tuple[int, ...]
    dtype: str

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * np.dtype(self.dtype).itemsize


@dataclass(frozen=True)
class ModelIO:
    """A model input or output: its name in the source model, its C field name, and the tensor it is."""

    name: str
    c_name: str
    tensor: TensorRef


@dataclass(frozen=True)
class StateIO:
    """A variable tensor (an LSTM's state) that persists from one run to the next: the runner keeps it in a static
    buffer of `fill` bytes at first (and after a reset), which `before` points to during a run; `after`, the value
    the run computes, is copied into it at the run's end."""

    name: str
    c_name: str
    fill: int
    before: TensorRef
    after: TensorRef


@dataclass(frozen=True)
class NpuStep:
    """Launch one NPU command stream; `inputs`/`outputs` are tensor names in the artifact's region order."""

    artifact: NpuArtifact
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]

    target = "ethos-u"  # what runs the step, as pools name their targets

    @property
    def label(self) -> str:
        return self.artifact.name

    def _scratch(self) -> list[tuple[int, str, int]]:
        """(region, name, bytes) of the command stream's scratch (region 1) and fast scratch (region 2, in the pool
        of that name), those it has."""
        parts = ((SCRATCH_REGION, "scratch", self.artifact.scratch_size),
                 (FAST_SCRATCH_REGION, FAST_SCRATCH_POOL, self.artifact.fast_scratch_size))
        return [part for part in parts if part[2]]

    @property
    def scratch(self) -> tuple[ScratchBuffer, ...]:
        return tuple(ScratchBuffer(name, size) for _, name, size in self._scratch())

    @property
    def scratch_regions(self) -> tuple[int, ...]:
        """The region of each of `scratch`."""
        return tuple(region for region, _, _ in self._scratch())


@dataclass(frozen=True)
class HostStep:
    """Call one host kernel with the tensors of its input parameters and its output."""

    kernel: HostKernel
    inputs: tuple[str, ...]
    output: str

    target = "c"

    @property
    def label(self) -> str:
        return self.kernel.name

    @property
    def outputs(self) -> tuple[str, ...]:
        return (self.output,)

    @property
    def scratch(self) -> tuple[ScratchBuffer, ...]:
        return self.kernel.scratch


Step = Union[NpuStep, HostStep]


@dataclass(frozen=True)
class Program:
    """Steps in execution order; tensors by name; the model's inputs and outputs in model order; its states."""

    tensors: dict[str, TensorRef]
    inputs: tuple[ModelIO, ...]
    outputs: tuple[ModelIO, ...]
    steps: tuple[Step, ...]
    states: tuple[StateIO, ...] = ()

    @property
    def io_names(self) -> set[str]:
        return {io.tensor.name for io in self.inputs + self.outputs}

    @property
    def has_npu(self) -> bool:
        return any(isinstance(step, NpuStep) for step in self.steps)


def c_identifier(name: str, taken: set[str]) -> str:
    """`name` made a C identifier (non-word characters become '_'), unique among `taken` (which it joins)."""
    base = re.sub(r"\W", "_", name) or "t"
    if base[0].isdigit():
        base = "_" + base
    candidate, suffix = base, 1
    while candidate in taken:
        candidate, suffix = f"{base}_{suffix}", suffix + 1
    taken.add(candidate)
    return candidate


class _Builder:
    """Walks main's bindings, giving every value a tensor name and every call a step."""

    def __init__(self, artifacts: dict[str, NpuArtifact], kernels: dict[str, HostKernel]):
        self.artifacts = artifacts
        self.kernels = kernels
        self.names: set[str] = set()
        self.tensors: dict[str, TensorRef] = {}
        self.values: dict[relax.Var, Union[str, tuple]] = {}
        self.steps: list[Step] = []

    def new_tensor(self, hint: str, ty) -> str:
        name = c_identifier(hint, self.names)
        self.tensors[name] = TensorRef(name, tuple(int(d) for d in ty.shape), str(ty.dtype))
        return name

    def tensor_of(self, expr) -> str:
        value = self.values[expr]
        if not isinstance(value, str):
            raise UnsupportedHostOp(f"a tuple value ({expr.name}) is passed where a tensor is expected")
        return value

    def bind(self, var: relax.Var, value) -> None:
        if isinstance(value, relax.Call) and isinstance(value.op, tvm.ir.GlobalVar):
            self.call(var, value)
        elif isinstance(value, relax.Var):
            self.values[var] = self.values[value]
        elif isinstance(value, relax.Tuple):
            self.values[var] = tuple(self.values[field] for field in value.fields)
        elif isinstance(value, relax.TupleGetItem):
            self.values[var] = self.values[value.tuple_value][value.index]
        else:
            raise UnsupportedHostOp(f"binding {var.name} ({type(value).__name__}) has no NPU or host kernel")

    def call(self, var: relax.Var, call: relax.Call) -> None:
        inputs = tuple(self.tensor_of(arg) for arg in call.args)
        artifact = self.artifacts.get(call.op.name_hint)
        if artifact is not None:
            ty = var.ty
            fields = ty.fields if isinstance(ty, relax.TupleType) else [ty]
            outputs = tuple(self.new_tensor(f"{var.name}_{i}" if len(fields) > 1 else var.name, field)
                            for i, field in enumerate(fields))
            self.values[var] = outputs if isinstance(ty, relax.TupleType) else outputs[0]
            self.steps.append(NpuStep(artifact, inputs, outputs))
            return
        kernel = self.kernels[call.op.name_hint]
        output = self.new_tensor(var.name, var.ty)
        self.values[var] = output
        self.steps.append(HostStep(kernel, inputs, output))


def build_program(mod: tvm.IRModule, artifacts: list[NpuArtifact], kernels: dict[str, HostKernel],
                  input_names: list[str], output_names: list[str], states: Sequence[State] = (),
                  copy: Optional[Callable[[TensorRef, int], HostKernel]] = None) -> Program:
    """The program of `mod` (partitioned, host ops fused), with NPU functions implemented by `artifacts` and host
    composites by `kernels` (by function name). `input_names`/`output_names` are the source model's names, in order;
    main's last parameters and results are the `states` before and after the run. An output that repeats a model
    input or another output gets a copy of its own, by the n-th kernel `copy(tensor, n)` gives (without `copy`,
    such a model is refused)."""
    builder = _Builder({a.function: a for a in artifacts}, kernels)
    main = mod["main"]
    io_names: set[str] = set()
    inputs, befores = [], []
    for param, name in zip(main.params, [*input_names, *(state.name for state in states)]):
        tensor = builder.new_tensor(param.name, param.ty)
        builder.values[param] = tensor
        if len(inputs) < len(input_names):
            inputs.append(ModelIO(name, c_identifier(name, io_names), builder.tensors[tensor]))
        else:
            befores.append(builder.tensors[tensor])
    for block in main.body.blocks:
        for binding in block.bindings:
            builder.bind(binding.var, binding.value)
    result = main.body.body
    value = builder.values[result] if isinstance(result, relax.Var) else \
        tuple(builder.values[f] for f in result.fields)
    results = list(value) if isinstance(value, tuple) else [value]
    produced = [name for step in builder.steps for name in step.outputs]
    outputs: list[ModelIO] = []
    copies = 0
    for tensor, name in zip(results, output_names):
        if tensor not in produced or any(o.tensor.name == tensor for o in outputs):
            if copy is None:
                raise UnsupportedHostOp(f"model output {name!r} is not computed by an operator of its own (it "
                                        "repeats an input or another output); this is not supported")
            source, tensor = tensor, builder.new_tensor(f"{name}_copy", builder.tensors[tensor])
            builder.steps.append(HostStep(copy(builder.tensors[source], copies), (source,), tensor))
            copies += 1
        outputs.append(ModelIO(name, c_identifier(name, io_names), builder.tensors[tensor]))
    state_names: set[str] = set()
    kept = [StateIO(state.name, c_identifier(state.name, state_names), state.fill, before, builder.tensors[after])
            for state, before, after in zip(states, befores, results[len(output_names):])]
    return Program(dict(builder.tensors), tuple(inputs), tuple(outputs), tuple(builder.steps), tuple(kept))
