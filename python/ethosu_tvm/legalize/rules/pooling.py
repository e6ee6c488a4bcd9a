"""Rules of the average and max pools."""
from __future__ import annotations

from ...qdq.match import Match
from ..ops import NpuOp, Padding, Pooling, Tensor
from .operands import Rule, int_clamp, raw_of


def pooling(pooling_type: str) -> Rule:
    def rule(match: Match, tensors: dict, ofm: Tensor, source: str) -> NpuOp:
        attrs = match["pool"].attrs
        top, left, bottom, right = (int(p) for p in attrs.padding)
        return Pooling(
            pooling_type=pooling_type,
            ifm=raw_of(tensors[match["ifm"]]),
            ofm=raw_of(ofm),
            pool_shape=tuple(int(k) for k in attrs.pool_size),
            strides=tuple(int(s) for s in attrs.strides),
            padding=Padding(top, left, bottom, right),
            clamp=int_clamp(match, ofm.dtype),
            source=source,
        )

    return rule
