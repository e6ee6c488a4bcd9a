"""Code generation: NPU subgraphs → TE → scheduled TIR → Vela API operations → command streams (NpuArtifact)."""
from __future__ import annotations

from .artifact import IoBinding, NpuArtifact, OpSummary, compile_npu_graph, compile_partitioned
from .vela_calls import CodegenError

__all__ = ["compile_npu_graph", "compile_partitioned", "CodegenError", "IoBinding", "NpuArtifact", "OpSummary"]
