"""The NPU's block operations in its own terms: the four kinds its NPU_OP_* commands start, and a kernel's geometry.

The simulator decodes registers into these terms and the cost model (`arch.cycles`) is asked in them, so code
generation, which costs Vela API operations (`codegen.operation_cost`), translates into them too.
"""
from __future__ import annotations

from dataclasses import dataclass

CONV, DEPTHWISE, POOL, ELEMENTWISE = "CONV", "DEPTHWISE", "POOL", "ELEMENTWISE"


@dataclass(frozen=True)
class Kernel:
    """Kernel size in taps (not dilated), strides, dilations and the weight traversal order."""

    height: int
    width: int
    stride_y: int
    stride_x: int
    dilation_y: int
    dilation_x: int
    part_kernel: bool

    @property
    def extent_h(self) -> int:
        return (self.height - 1) * self.dilation_y + 1

    @property
    def extent_w(self) -> int:
        return (self.width - 1) * self.dilation_x + 1
