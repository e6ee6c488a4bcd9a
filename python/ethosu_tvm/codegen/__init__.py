"""Code generation: NPU subgraphs → TE → scheduled TIR → Vela API operations → command streams (NpuArtifact)."""
from __future__ import annotations

from .artifact import CascadeReport, IoBinding, NpuArtifact, OpSummary, compile_npu_graph
from .cascade import CascaderError, CascaderSettings, cascade_proposals, compile_cascaded
from .npu_graphs import ScratchIo, compile_npu_graphs, io_in_scratch
from .vela_calls import CodegenError

__all__ = ["cascade_proposals", "compile_cascaded", "compile_npu_graph", "compile_npu_graphs", "io_in_scratch",
           "CascadeReport", "CascaderError", "CascaderSettings", "CodegenError", "IoBinding", "NpuArtifact",
           "OpSummary", "ScratchIo"]
