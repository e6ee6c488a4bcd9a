"""A factory of small, fully quantized TFLite models written directly as flatbuffers (no TensorFlow needed).

`make(op, seed, **params)` builds a single-operator model; `make_graph(name, seed)` builds a small network. Every
quantization parameter can be given explicitly (`in_scale`, `in_zp`, `out_scale`, `out_zp`, `w_scales`, ...);
what is not given is derived so that outputs use most of the integer range. Weights and biases are seeded random.
Activations are int8, or int16 (with int8 weights, zero points 0) where TFLite has 16x8 kernels: pass `dtype="int16"`.
"""
from __future__ import annotations

from .edges import EDGES, make_edge
from .graphs import GRAPHS, make_graph
from .net import Net
from .quant import QTensor
from .single import INT16_OPS, INT16_TFLM_LACKS, OPS, UINT8_OPS, make

__all__ = ["EDGES", "GRAPHS", "INT16_OPS", "INT16_TFLM_LACKS", "Net", "OPS", "QTensor", "UINT8_OPS", "make",
           "make_edge", "make_graph"]
