"""Building a host kernel: op description -> TE -> scheduled TIR -> plain C, with its calling interface."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional, Union

import numpy as np
import tvm
from tvm import s_tir, te

from ..arch import ALIGNMENT
from . import spec
from .c_emitter import emit_c, host_target
from .ops import (
    add_n,
    arg_min_max,
    batch_matmul,
    binary,
    cast,
    comparison,
    conv,
    data_movement,
    float_io,
    gather_nd,
    l2_normalization,
    fully_connected,
    leaky_relu,
    log_softmax,
    lut,
    pool,
    prelu,
    reduce,
    requantize,
    resize,
    select,
    softmax,
    transpose_conv,
)
from .spec import HostOp, UnsupportedHostOp, op_name
from .subroutines import subroutine_scope
from .te_kernel import TeKernel

_DEFINITIONS = {
    spec.Softmax: softmax.define,
    spec.LogSoftmax: log_softmax.define,
    spec.Logistic: lut.define,
    spec.Tanh: lut.define,
    spec.HardSwish: lut.define,
    spec.FloatFunction: lut.define,
    spec.Rsqrt: lut.define,
    spec.Abs: lut.define,
    spec.Sqrt: lut.define,
    spec.Neg: lut.define,
    spec.Requantize: requantize.define,
    spec.Relu: requantize.define,
    spec.LeakyRelu: leaky_relu.define,
    spec.Prelu: prelu.define,
    spec.Reshape: data_movement.define_reshape,
    spec.Pad: data_movement.define_pad,
    spec.Concatenation: data_movement.define_concatenation,
    spec.Pack: data_movement.define_pack,
    spec.StridedSlice: data_movement.define_strided_slice,
    spec.Transpose: data_movement.define_transpose,
    spec.BroadcastTo: data_movement.define_broadcast_to,
    spec.Tile: data_movement.define_tile,
    spec.Conv2D: conv.define,
    spec.TransposeConv2D: transpose_conv.define,
    spec.FullyConnected: fully_connected.define,
    spec.Pool2D: pool.define,
    spec.Binary: binary.define,
    spec.AddN: add_n.define,
    spec.Comparison: comparison.define,
    spec.Select: select.define,
    spec.Fill: gather_nd.define_fill,
    spec.L2Normalization: l2_normalization.define,
    spec.GatherNd: gather_nd.define_gather_nd,
    spec.BatchMatMul: batch_matmul.define,
    spec.ArgMinMax: arg_min_max.define,
    spec.Cast: cast.define,
    spec.Reduce: reduce.define,
    spec.Resize: resize.define,
    spec.FloatQuantize: float_io.define_quantize,
    spec.Dequantize: float_io.define_dequantize,
}


@dataclass(frozen=True, eq=False)
class KernelParam:
    """One pointer parameter of the C function, in order. Constants carry their value (to place in .rodata)."""

    name: str
    dtype: str
    shape: tuple[int, ...]  # as the kernel indexes it (row-major; an activation may be viewed flattened)
    role: str  # "input", "constant" or "output"
    data: Optional[np.ndarray] = None

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize


@dataclass(frozen=True)
class ScratchBuffer:
    """Memory a kernel (or an NPU launch) needs only while it runs: the memory planner places it, live for that
    one call, so the scratch of different calls shares bytes. `name` tells it apart in the plan."""

    name: str
    nbytes: int
    alignment: int = ALIGNMENT


PORTABLE_SCRATCH = "scratch"  # the one scratch buffer of a portable kernel: its intermediates, laid out by emit_c


@dataclass(frozen=True, eq=False)
class HostKernel:
    """A self-contained C function `void name(params..., scratch...)` for the Cortex-M host.

    The caller passes one pointer per entry of `params`, in order, then one per entry of `scratch`, in order:
    `nbytes` bytes aligned to `alignment`, which may be reused once the call returns. `c_source` defines the
    function and whatever it calls that is not in a library the application links; `library` names that library
    ("" for our own C).
    """

    name: str
    op: str
    c_source: str
    params: tuple[KernelParam, ...]
    scratch: tuple[ScratchBuffer, ...]
    target: tvm.target.Target
    library: str = ""

    def __post_init__(self):
        names = [s.name for s in self.scratch]
        if len(set(names)) != len(names):
            raise ValueError(f"{self.name}: scratch buffer names must be unique, got {names}")

    @property
    def mcpu(self) -> Optional[str]:
        return self.target.attrs.get("mcpu")

    @property
    def declaration(self) -> str:
        """The C prototype, for the caller's header."""
        return re.search(rf"^void {re.escape(self.name)}\(.*\)", self.c_source, re.MULTILINE).group(0) + ";"


def _define(op: HostOp) -> TeKernel:
    """The op's kernel as TE, or UnsupportedHostOp."""
    definition = _DEFINITIONS.get(type(op))
    if definition is None:
        raise UnsupportedHostOp(f"{type(op).__name__}: no host kernel for this op")
    return definition(op)


def build_kernel(op: HostOp, name: Optional[str] = None,
                 target: Union[tvm.target.Target, dict, str, None] = None) -> HostKernel:
    """Compile `op` to the portable HostKernel (TE -> plain C) named `name` (default `ethosu_host_<op>`) for a `c`
    target: a Target, its dict form ({"kind": "c", "mcpu": "cortex-m55"}) or "c"; default `host_target()` (no
    mcpu). Its intermediates are one scratch buffer, PORTABLE_SCRATCH, when it keeps any whole.

    Kernels linked into one program need distinct names: the name also prefixes the kernel's static helpers.
    """
    target = host_target() if target is None else tvm.target.Target(target)
    name = name or f"ethosu_host_{op_name(op)}"
    if not re.fullmatch(r"[A-Za-z_]\w*", name):
        raise ValueError(f"kernel name {name!r} is not a C identifier")
    with subroutine_scope(name) as helpers:
        kernel = _define(op)
    constants = [c.tensor for c in kernel.constants]
    func = te.create_prim_func([*kernel.inputs, *constants, kernel.output, *kernel.scratch])
    sch = s_tir.Schedule(func)
    kernel.schedule(sch)
    roles = (["input"] * len(kernel.inputs) + ["constant"] * len(constants) + ["output"]
             + ["scratch"] * len(kernel.scratch))
    mcpu = target.attrs.get("mcpu")
    banner = f"{name}: {op_name(op)} host kernel (ethosu_tvm), target c" + (f" -mcpu={mcpu}" if mcpu else "")
    c_function = emit_c(sch.mod["main"], name, roles, target, banner, helpers)
    params = [KernelParam(t.op.name, str(t.dtype), tuple(int(d) for d in t.shape), "input") for t in kernel.inputs]
    params += [KernelParam(c.tensor.op.name, c.value.dtype.name, c.value.shape, "constant", c.value)
               for c in kernel.constants]
    params.append(KernelParam(kernel.output.op.name, str(kernel.output.dtype),
                              tuple(int(d) for d in kernel.output.shape), "output"))
    scratch = (ScratchBuffer(PORTABLE_SCRATCH, c_function.workspace_bytes),) if c_function.workspace_bytes else ()
    return HostKernel(name, op_name(op), c_function.source, tuple(params), scratch, target)
