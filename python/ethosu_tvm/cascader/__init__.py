"""Cascader, generic core: propagators, stripe configurations and Pareto culling.

Cascading runs a chain of operators stripe by stripe so that only the stripes in flight, not whole intermediate
tensors, need fast memory. This package holds the parts that know nothing about the Ethos-U: how an output stripe
maps to the input region it needs (`Propagator`, derived from TE computes or written per operator), how a tensor is
cut into stripes and how many stripes of each shape result (`StripeConfig`), and how to keep only the
memory/cycles trade-offs worth considering (`pareto_frontier`, `thin`).

Not here yet (later steps): the Ethos-U performance model and block configs, plans and proposals and their search,
and applying the chosen schedule to TIR.
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
from .pareto import pareto_frontier, thin
from .propagator import Propagator, compose
from .stripe_config import (
    StripeConfig,
    candidate_stripe_configs,
    candidate_stripe_shapes,
    split_sizes,
)

__all__ = [
    "NotAffineError",
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
