"""The cascader's Ethos-U layer: NPU subgraphs as cascader graphs (`parts`), costed by the callables code generation
hands in (`codegen.stripe_cost`)."""
from __future__ import annotations

from .parts import cascader_graph

__all__ = ["cascader_graph"]
