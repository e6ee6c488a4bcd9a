"""The seam between a host spec and the C that computes it: kernel implementations, and the registry that picks one.

The portable TE -> C kernels (`build_kernel`) implement every spec. A kernel library (CMSIS-NN, next) registers an
implementation for some of LIBRARY_OPS; for a spec of one of those ops the registry asks the implementations
registered for it, in registration order, and the first that accepts the spec builds its kernel, else the portable
one does. Either way the result is a HostKernel: the C it contributes (function definitions; the runner calls it
with the tensors of its params), and the scratch buffers the memory planner places, live for that one call.
"""
from __future__ import annotations

import contextlib
import re
from typing import Iterable, Iterator, Protocol

import tvm

from .kernel import HostKernel, build_kernel
from .spec import HostOp, op_name

# The ops a kernel library may take over (op_name values): the ones CMSIS-NN has s8 kernels for.
LIBRARY_OPS = frozenset({"conv2d", "depthwise_conv2d", "fully_connected", "avg_pool2d", "max_pool2d", "softmax",
                         "add", "mul"})


class KernelImplementation(Protocol):
    """Builds the kernels of the specs it accepts (e.g. calls of a kernel library's functions)."""

    name: str  # in messages, e.g. "cmsis-nn"

    def accepts(self, op: HostOp, target: tvm.target.Target) -> bool:
        """Whether it implements this spec (dtypes, shapes, quantization) on this target (e.g. its -mcpu)."""

    def build(self, op: HostOp, name: str, target: tvm.target.Target) -> HostKernel:
        """The kernel named `name`; its params are the spec's inputs, constants and output, as the runner passes
        them (inputs in the spec's order, then constants, then the output)."""


class Portable:
    """The default: the TE -> C kernels of `host.ops`, for every spec they cover (others raise UnsupportedHostOp)."""

    name = "portable"

    def accepts(self, op: HostOp, target: tvm.target.Target) -> bool:
        return True

    def build(self, op: HostOp, name: str, target: tvm.target.Target) -> HostKernel:
        return build_kernel(op, name=name, target=target)


class KernelRegistry:
    """Which implementation builds each spec: the first registered for its op that accepts it, else `fallback`."""

    def __init__(self, fallback: KernelImplementation):
        self.fallback = fallback
        self._registered: list[tuple[KernelImplementation, frozenset[str]]] = []

    def register(self, implementation: KernelImplementation, ops: Iterable[str]) -> None:
        ops = frozenset(ops)
        if not ops or not ops <= LIBRARY_OPS:
            raise ValueError(f"{implementation.name}: can be registered for {', '.join(sorted(LIBRARY_OPS))}, "
                             f"got {', '.join(sorted(ops)) or 'none'}")
        self._registered.append((implementation, ops))

    def unregister(self, implementation: KernelImplementation) -> None:
        self._registered = [entry for entry in self._registered if entry[0] is not implementation]

    @contextlib.contextmanager
    def registered(self, implementation: KernelImplementation, ops: Iterable[str]) -> Iterator[None]:
        """Register for the duration of a `with` block (e.g. one compile)."""
        self.register(implementation, ops)
        try:
            yield
        finally:
            self.unregister(implementation)

    def select(self, op: HostOp, target: tvm.target.Target) -> KernelImplementation:
        kind = op_name(op)
        for implementation, ops in self._registered:
            if kind in ops and implementation.accepts(op, target):
                return implementation
        return self.fallback

    def build(self, op: HostOp, name: str, target: tvm.target.Target) -> HostKernel:
        """The kernel of `op` named `name` from the selected implementation, checked to keep the runner's contract."""
        implementation = self.select(op, target)
        kernel = implementation.build(op, name, target)
        declaration = re.search(rf"^void {re.escape(name)}\(", kernel.c_source, re.MULTILINE)
        if kernel.name != name or declaration is None:
            raise ValueError(f"{implementation.name}: built no C function {name!r} for {op_name(op)}")
        return kernel


PORTABLE = Portable()
REGISTRY = KernelRegistry(PORTABLE)
