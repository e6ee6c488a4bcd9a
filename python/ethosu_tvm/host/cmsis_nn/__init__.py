"""CMSIS-NN as a kernel library (`--target=cmsis-nn,c`, `ethos-u,cmsis-nn,c`): host operators it computes
bit-exactly with TFLite become calls of its s8 and s16 kernels, each with its context buffer in the static memory
plan.

`exactness` decides which specs it takes (and says why not the others; `exactness_s16` the 16x8 kernels' own
conditions), `calls` writes each call's C, `elementwise` does both for ADD and MUL, `scratch` (and `scratch_s16`)
sizes the context buffers by CMSIS-NN's rules for the CPU's extension level, `choice` keeps the ops our own kernels
run faster on that level. Nothing of CMSIS-NN is in this
package: the generated C includes `arm_nnfunctions.h`, and the application links the library (docs/firmware.md).
"""
from __future__ import annotations

import tvm

from ...target import CmsisNnTarget
from ..kernel import HostKernel
from ..spec import Binary, HostOp
from . import elementwise
from .calls import LIBRARY, build_call
from .choice import ours_faster
from .exactness import refusal

# The ops whose calls are emitted (op_name values), and the CMSIS-NN release the rules were read from.
OPS = frozenset({"conv2d", "depthwise_conv2d", "fully_connected", "avg_pool2d", "max_pool2d", "add", "mul"})
CHECKED_AGAINST = "ARM-software/CMSIS-NN 99f736a6"


class CmsisNn:
    """The KernelImplementation of CMSIS-NN on one CPU (`cpu`: its -mcpu and extension level)."""

    name = LIBRARY

    def __init__(self, cpu: CmsisNnTarget):
        self.cpu = cpu

    def refusal(self, op: HostOp) -> str:
        """Why CMSIS-NN does not run `op` ('' when it does): not exact, or our kernel is faster on this CPU."""
        return refusal(op) or ours_faster(op, self.cpu.extension)

    def accepts(self, op: HostOp, target: tvm.target.Target) -> bool:
        return not self.refusal(op)

    def build(self, op: HostOp, name: str, target: tvm.target.Target) -> HostKernel:
        builder = elementwise.build_call if isinstance(op, Binary) else build_call
        return builder(op, name, self.cpu, target)


__all__ = ["CHECKED_AGAINST", "CmsisNn", "LIBRARY", "OPS"]
