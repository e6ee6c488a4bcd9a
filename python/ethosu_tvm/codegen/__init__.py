"""Code generation: NPU subgraphs → TE → scheduled TIR → Vela API operations → command streams (NpuArtifact)."""
from __future__ import annotations

from .artifact import CascadeReport, IoBinding, NpuArtifact, OpSummary, compile_npu_graph
from .cascade import CascaderError, CascaderSettings, ScratchIo, compile_cascaded, compile_partitioned
from .vela_calls import CodegenError

__all__ = ["compile_cascaded", "compile_npu_graph", "compile_partitioned", "CascadeReport", "CascaderError",
           "CascaderSettings", "CodegenError", "IoBinding", "NpuArtifact", "OpSummary", "ScratchIo"]
