"""TensorFlow's dilated convolution, SPACE_TO_BATCH_ND → CONV_2D/DEPTHWISE_CONV_2D → BATCH_TO_SPACE_ND, as one.

TensorFlow writes a dilated convolution as a VALID, undilated one on the space-to-batch phases of the padded
input, interleaved back and cropped. That equals the dilated convolution over the input padded by (padding − crop)
on each side: the quantized values agree too, since SPACE_TO_BATCH_ND pads with the zero point, as the
convolution's own padding does. The import hides the two reshuffles and converts the convolution with that
dilation and padding.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import tflite

from .tflite_file import builtin_options, constant_value


@dataclass(frozen=True)
class DilatedConv:
    """One recognised chain: the convolution's operator index, the reshuffles around it, what replaces them."""

    conv: int
    space_to_batch: int
    batch_to_space: int
    source: int  # the SPACE_TO_BATCH_ND input tensor
    result: int  # the BATCH_TO_SPACE_ND output tensor
    dilation: tuple[int, int]
    padding: tuple[int, int, int, int]  # top, left, bottom, right


def find_dilated_convs(model: tflite.Model, kinds: list[str]) -> dict[int, DilatedConv]:
    """The recognised chains by convolution index (`kinds`: each operator's builtin name)."""
    graph = model.Subgraphs(0)
    producer, consumers = {}, {}
    for index in range(graph.OperatorsLength()):
        op = graph.Operators(index)
        for tensor in op.InputsAsNumpy():
            consumers.setdefault(int(tensor), []).append(index)
        for tensor in op.OutputsAsNumpy():
            producer[int(tensor)] = index
    model_io = {int(t) for t in graph.InputsAsNumpy()} | {int(t) for t in graph.OutputsAsNumpy()}
    found = {}
    for index, kind in enumerate(kinds):
        if kind not in ("CONV_2D", "DEPTHWISE_CONV_2D"):
            continue
        conv = graph.Operators(index)
        inner_in, inner_out = int(conv.Inputs(0)), int(conv.Outputs(0))
        before = producer.get(inner_in)
        after = consumers.get(inner_out, [])
        if (before is None or kinds[before] != "SPACE_TO_BATCH_ND" or consumers.get(inner_in) != [index]
                or len(after) != 1 or kinds[after[0]] != "BATCH_TO_SPACE_ND" or {inner_in, inner_out} & model_io
                or not _undilated_valid(conv, kind)):
            continue
        stb, bts = graph.Operators(before), graph.Operators(after[0])
        block, pads, block_after, crops = (constant_value(model, int(t)) for t in (stb.Inputs(1), stb.Inputs(2),
                                                                                  bts.Inputs(1), bts.Inputs(2)))
        source = int(stb.Inputs(0))
        if any(v is None for v in (block, pads, block_after, crops)) or block.shape != (2,):
            continue
        if (not np.array_equal(block, block_after) or pads.shape != (2, 2) or crops.shape != (2, 2)
                or np.any(crops > pads) or np.any(crops < 0) or graph.Tensors(source).ShapeAsNumpy()[0] != 1):
            continue
        (top, bottom), (left, right) = (pads - crops).tolist()
        found[index] = DilatedConv(index, before, after[0], source, int(bts.Outputs(0)),
                                   (int(block[0]), int(block[1])), (top, left, bottom, right))
    return found


def _undilated_valid(op: tflite.Operator, kind: str) -> bool:
    options = builtin_options(op, tflite.Conv2DOptions if kind == "CONV_2D" else tflite.DepthwiseConv2DOptions)
    return (options.Padding() == tflite.Padding.VALID and options.StrideH() == options.StrideW() == 1
            and options.DilationHFactor() == options.DilationWFactor() == 1)
