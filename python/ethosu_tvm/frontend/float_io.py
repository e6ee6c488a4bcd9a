"""Float32 model I/O around QUANTIZE and DEQUANTIZE: finding those edge operators and hiding them from TVM.

TFLite's converter exports most int8/int16 models with float32 inputs and outputs: a QUANTIZE follows each input and
a DEQUANTIZE precedes each output. By default these edge operators become host kernels and the compiled model
takes and gives float32; with ``strip_float_io`` the import drops them, so that the compiled model takes the
QUANTIZE outputs and gives the DEQUANTIZE inputs (integers, with the scale and zero point of those tensors). Float
tensors anywhere else are refused.
"""
from __future__ import annotations

from dataclasses import dataclass

import tflite

_FLOAT_TYPES = (tflite.TensorType.FLOAT32, tflite.TensorType.FLOAT16, tflite.TensorType.FLOAT64)


@dataclass(frozen=True)
class FloatEdges:
    """The QUANTIZE/DEQUANTIZE operators on float model I/O, and the model's I/O without them."""

    stripped: frozenset[int]  # operator indices
    inputs: tuple[int, ...]  # tensor indices
    outputs: tuple[int, ...]
    refused: tuple[int, ...]  # float I/O tensors not on a strippable edge
    passed: tuple[int, ...] = ()  # float inputs given back as outputs (kept as they are; not strippable)


def is_float(tensor: tflite.Tensor) -> bool:
    return tensor.Type() in _FLOAT_TYPES


def float_edges(model: tflite.Model, kinds: list[str]) -> FloatEdges:
    """The strippable edges of the model's float I/O (`kinds`: each operator's builtin name).

    A float input qualifies when QUANTIZEs to integers are its only consumers (stripped, each QUANTIZE's output is
    an input), a float output when a DEQUANTIZE of an integer tensor produces it and nothing else in the graph reads
    that output, or when it is such an input given back (`passed`).
    """
    graph = model.Subgraphs(0)
    ops = [graph.Operators(i) for i in range(graph.OperatorsLength())]
    consumers: dict[int, list[int]] = {}
    producer: dict[int, int] = {}
    for index, op in enumerate(ops):
        for tensor in op.InputsAsNumpy():
            consumers.setdefault(int(tensor), []).append(index)
        for tensor in op.OutputsAsNumpy():
            producer[int(tensor)] = index
    stripped, refused, passed = set(), [], []
    inputs, outputs = [], []
    for tensor in (int(t) for t in graph.InputsAsNumpy()):
        users = consumers.get(tensor, [])
        if not is_float(graph.Tensors(tensor)):
            inputs.append(tensor)
        elif users and all(kinds[u] == "QUANTIZE" and not is_float(_out(graph, ops[u])) for u in users):
            stripped.update(users)
            inputs.extend(int(ops[u].Outputs(0)) for u in users)
            passed.append(tensor)
        else:
            refused.append(tensor)
    for tensor in (int(t) for t in graph.OutputsAsNumpy()):
        index = producer.get(tensor)
        if not is_float(graph.Tensors(tensor)) or tensor in passed:
            outputs.append(tensor)
        elif (index is not None and kinds[index] == "DEQUANTIZE" and not consumers.get(tensor)
              and not is_float(graph.Tensors(int(ops[index].Inputs(0))))):
            stripped.add(index)
            outputs.append(int(ops[index].Inputs(0)))
        else:
            refused.append(tensor)
    passed = [tensor for tensor in passed if tensor in outputs]
    return FloatEdges(frozenset(stripped), tuple(inputs), tuple(outputs), tuple(refused), tuple(passed))


def _out(graph: tflite.SubGraph, op: tflite.Operator) -> tflite.Tensor:
    return graph.Tensors(int(op.Outputs(0)))
