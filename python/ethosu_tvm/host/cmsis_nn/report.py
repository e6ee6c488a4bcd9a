"""The offload report's word on CMSIS-NN: for each host operator, whether its kernel calls CMSIS-NN or is ours,
and why."""
from __future__ import annotations

import dataclasses

import tvm

from ...qdq.sources import composite_operators
from ..kernel import HostKernel
from ..spec_reader import host_spec
from .calls import LIBRARY

OURS = "ours"
EXACT = "exact with TFLite"


def with_libraries(report, fused: tvm.IRModule, kernels: dict[str, HostKernel], implementation):
    """`report` (an OffloadReport) with the library of each host operator's kernel in `kernels` (by the fused
    module's function name), and `implementation`'s refusal where the kernel is ours."""
    choices = {}
    for name, kernel in kernels.items():
        func = fused[name]
        choice = (LIBRARY, EXACT) if kernel.library == LIBRARY else (OURS, implementation.refusal(host_spec(func)))
        choices.update(dict.fromkeys(composite_operators(func), choice))
    return dataclasses.replace(report, ops=tuple(
        dataclasses.replace(entry, library=choices[entry.index][0], library_reason=choices[entry.index][1])
        if entry.index in choices else entry for entry in report.ops))
