"""TE: bit-exact integer compute definitions of the NPU primitives, one TE graph per NPU subgraph."""
from __future__ import annotations

from .graph import OP_ANNOTATION, TeGraph, te_graph
from .runner import CompiledTeGraph

__all__ = ["OP_ANNOTATION", "TeGraph", "te_graph", "CompiledTeGraph"]
