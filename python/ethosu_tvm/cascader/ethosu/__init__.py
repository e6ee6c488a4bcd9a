"""The cascader's Ethos-U layer: the performance model of NPU operations (`performance`) and NPU subgraphs as
cascader graphs (`parts`)."""
from __future__ import annotations

from .parts import cascader_graph
from .performance import (
    OperationCost,
    block_traversal,
    choose_block_config,
    convolution_traversal,
    encode_weights,
    estimate_cycles,
    find_block_configs,
    stripe_buffering,
    stripe_cost,
)

__all__ = [
    "OperationCost",
    "block_traversal",
    "cascader_graph",
    "choose_block_config",
    "convolution_traversal",
    "encode_weights",
    "estimate_cycles",
    "find_block_configs",
    "stripe_buffering",
    "stripe_cost",
]
