"""Legalization: NPU composite functions → typed Ethos-U primitive operators with integer parameters.

The primitives and the NpuGraph that holds them are the dataclasses of :mod:`ethosu_tvm.legalize.ops`.
"""
from __future__ import annotations

from .legalizer import legalize, legalize_function, npu_shape
from .rules.operands import LegalizeError

__all__ = ["legalize", "legalize_function", "npu_shape", "LegalizeError"]
