"""Cascader: run chains of operators stripe by stripe so that intermediate tensors never exist whole.

The generic core (this package's modules) knows nothing about the Ethos-U: how an output stripe maps to the input
region it needs (`Propagator`, derived from TE computes or written per operator), how a tensor is cut into stripes
(`StripeConfig`), the graph of parts (`CascaderGraph`), plans and proposals with their memory and cycles, and the
search for the Pareto frontier of proposals (`search`, `CascaderOptions`). `cascader.ethosu` supplies the NPU's
parts, `codegen.stripe_cost` their costs; `codegen.cascade` turns the chosen proposal into a TIR schedule.
"""
from __future__ import annotations

from .derive import (
    NotAffineError,
    binary_elementwise_propagator,
    conv2d_propagator,
    depthwise_conv2d_propagator,
    derive_propagator,
    identity_propagator,
    pooling_propagator,
    propagator_for,
    stage_propagator,
    whole_tensor_propagator,
)
from .graph import CascaderGraph, Part, RowMap, Tensor, WeightBuffer
from .pareto import pareto_frontier, thin
from .plan import BufferMode, Plan, Proposal, TensorConfig, TensorState
from .propagator import Propagator, compose
from .stripe_config import (
    StripeConfig,
    candidate_stripe_configs,
    candidate_stripe_shapes,
    split_sizes,
)
from .search import CascaderOptions, candidate_plans, evaluate_plan, search

__all__ = [
    "BufferMode",
    "CascaderGraph",
    "CascaderOptions",
    "NotAffineError",
    "Part",
    "Plan",
    "Proposal",
    "RowMap",
    "Tensor",
    "WeightBuffer",
    "TensorConfig",
    "TensorState",
    "candidate_plans",
    "evaluate_plan",
    "search",
    "Propagator",
    "StripeConfig",
    "binary_elementwise_propagator",
    "candidate_stripe_configs",
    "candidate_stripe_shapes",
    "compose",
    "conv2d_propagator",
    "depthwise_conv2d_propagator",
    "derive_propagator",
    "identity_propagator",
    "pareto_frontier",
    "pooling_propagator",
    "propagator_for",
    "split_sizes",
    "stage_propagator",
    "thin",
    "whole_tensor_propagator",
]
