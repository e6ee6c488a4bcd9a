"""UNIDIRECTIONAL_SEQUENCE_LSTM as TFLite Micro's integer kernel computes it, unrolled into the operators it is made
of (the reference for an integer LSTM: it uses the lookup-table LOGISTIC and TANH the U55 computes, LiteRT a
fixed-point approximation of its own that differs by one LSB in a few outputs).

Per time step, per gate: a FULLY_CONNECTED of the input (with the gate's bias) and one of the output state, each
int8 → int16 at the gates' fixed scale 2^-12, their saturating sum, then LOGISTIC (TANH for the cell gate) into
int16 at 2^-15. Then the cell state: forget · cell + input · cell gate, saturated, clipped to the cell clip; and the
output state: output gate · TANH(cell), int16 · int16 → int8 in the output state's quantization. Each is an operator
of its own with TFLite's saturating integer arithmetic, so QDQ Relax expresses it exactly and the NPU or a host
kernel computes each like any other. The output is the output states of every step.

The output and cell states are TFLite variable tensors: read and overwritten by every inference, they persist from
one inference to the next. The import makes each state a model input (its value before the inference) and a model
output (its value after) and records them (module attribute ``ethosu.states``), so that the runner keeps them in
static buffers of its own between calls (:mod:`ethosu_tvm.aot`).
"""
from __future__ import annotations

import math

import numpy as np
import tflite
from tvm import relax
from tvm.relax.frontend.tflite.tflite_frontend import get_tensor_name

from .attributes import State
from .converter import ConverterCore
from .slicing import strided_slice
from .tflite_file import builtin_options

LSTM = "UNIDIRECTIONAL_SEQUENCE_LSTM"
# Input positions of the operator (TFLite's kLstm*Tensor): input, the four input and four recurrent weight matrices
# (input, forget, cell, output gates), the peepholes, the gate biases, the projection, the states, the layer norms.
_INPUT_WEIGHTS, _RECURRENT_WEIGHTS, _PEEPHOLES, _BIASES = range(1, 5), range(5, 9), range(9, 12), range(12, 16)
_PROJECTION, _OUTPUT_STATE, _CELL_STATE, _LAYER_NORMS = range(16, 18), 18, 19, range(20, 24)
_GATE_SCALE = 2.0 ** -12  # Q3.12: the gates before their activation, fixed by the kernel
_ACTIVATED_SCALE = 2.0 ** -15  # Q0.15: after LOGISTIC or TANH
# Each step is unrolled into about 35 operators: longer sequences would take minutes to compile (49 steps of 64 units
# take 18 s) and their command streams megabytes.
MAX_STEPS = 256


def variable_states(model: tflite.Model, kinds: list[str]) -> list[int]:
    """Tensor indices of the states the LSTMs of the model (`kinds`: each operator's builtin name) carry, in
    operator order."""
    graph = model.Subgraphs(0)
    return [int(graph.Operators(i).Inputs(position)) for i, kind in enumerate(kinds) if kind == LSTM
            for position in (_OUTPUT_STATE, _CELL_STATE)]


def state_of(tensor: tflite.Tensor) -> State:
    """The state a variable tensor of the model is."""
    quant = tensor.Quantization()
    zero_point = int(quant.ZeroPoint(0)) if quant is not None and quant.ZeroPointLength() else 0
    fill = zero_point & 0xFF if tensor.Type() == tflite.TensorType.INT8 else 0
    return State(tensor.Name().decode(), fill)


def _quant(tensor) -> tuple[float, int]:
    quant = tensor.tensor.Quantization()
    if quant is None or quant.ScaleLength() != 1:
        raise ValueError(f"tensor {tensor.tensor.Name().decode()!r} is not quantized per tensor")
    return float(quant.Scale(0)), int(quant.ZeroPoint(0))


def _check(present: dict, output, options) -> None:
    """Refuse what TFLite Micro's integer kernel does not compute (it refuses the optional inputs too)."""
    absent = [p for p in (*_INPUT_WEIGHTS, *_RECURRENT_WEIGHTS, *_BIASES, _OUTPUT_STATE, _CELL_STATE)
              if p not in present]
    if absent:
        raise ValueError("an LSTM without input gate (CIFG) is not supported" if _INPUT_WEIGHTS[0] in absent
                         else f"inputs {absent} are missing")
    if any(p in present for p in (*_PEEPHOLES, *_PROJECTION, *_LAYER_NORMS)):
        raise ValueError("peepholes, projection and layer normalisation are not supported")
    int8, int16 = tflite.TensorType.INT8, tflite.TensorType.INT16
    types = [t.tensor.Type() for t in (present[0], present[_OUTPUT_STATE], present[_CELL_STATE], output)]
    if types != [int8, int8, int16, int8] or any(present[p].tensor.Type() != int8
                                                  for p in (*_INPUT_WEIGHTS, *_RECURRENT_WEIGHTS)):
        raise ValueError("only int8 LSTMs with int8 weights and an int16 cell state are supported")
    if any(_quant(present[p])[1] for p in (*_INPUT_WEIGHTS, *_RECURRENT_WEIGHTS)):
        raise ValueError("weights with a zero point other than 0 are not supported")
    if options.FusedActivationFunction() != tflite.ActivationFunctionType.TANH:
        raise ValueError("the cell gate's activation must be TANH")
    cell_scale, _ = _quant(present[_CELL_STATE])
    if math.log2(cell_scale) != round(math.log2(cell_scale)):
        raise ValueError(f"the cell state's scale {cell_scale:g} is not a power of two")


class _Step:
    """Builds the QDQ Relax of one time step, each operator bound as TFLite Micro computes it."""

    def __init__(self, converter, present: dict, options):
        self.converter, self.present = converter, present
        self.cell_scale, _ = _quant(present[_CELL_STATE])
        self.state_quant = _quant(present[_OUTPUT_STATE])
        self.input_quant = _quant(present[0])
        # TFLite Micro clips to the clip's integer truncated toward zero (the bounds below quantize to it exactly).
        cell_clip = options.CellClip()
        self.clip = int(min(max(cell_clip / self.cell_scale, -32768.0), 32767.0)) if cell_clip > 0 else None

    def dq(self, expr, scale: float, zero_point: int = 0):
        return relax.op.dequantize(expr, _const(scale, "float32"), _const(zero_point, "int32"), axis=-1)

    def q(self, expr, scale: float, zero_point: int, dtype: str):
        return self.converter.bb.emit(relax.op.quantize(expr, _const(scale, "float32"), _const(zero_point, "int32"),
                                                        axis=-1, out_dtype=dtype))

    def fully_connected(self, data, data_quant: tuple[float, int], weights, bias):
        """int8 data · weightsᵀ (+ bias) → int16 at the gates' scale."""
        matrix = relax.const(self.converter.get_tensor_value(weights), "int8")
        product = relax.op.matmul(self.dq(data, *data_quant), self.dq(relax.op.permute_dims(matrix), *_quant(weights)))
        if bias is not None:
            values = relax.const(self.converter.get_tensor_value(bias), "int32")
            product = relax.op.add(product, self.dq(values, *_quant(bias)))
        return self.q(product, _GATE_SCALE, 0, "int16")

    def gate(self, x_t, h, index: int, function):
        """LOGISTIC or TANH of the saturating sum of the input's and the output state's fully connected ops."""
        present = self.present
        from_state = self.fully_connected(h, self.state_quant, present[_RECURRENT_WEIGHTS[index]], None)
        from_input = self.fully_connected(x_t, self.input_quant, present[_INPUT_WEIGHTS[index]],
                                          present[_BIASES[index]])
        # The sum is exact either way round; the state first makes the TIR's depth-first order finish each step
        # before the next one's input (otherwise every step's input product is computed first and held).
        total = self.q(self.add(from_state, from_input, _GATE_SCALE), _GATE_SCALE, 0, "int16")
        return self.activated(total, function, _GATE_SCALE)

    def add(self, a, b, scale: float):
        return relax.op.add(self.dq(a, scale), self.dq(b, scale))

    def activated(self, x, function, scale: float):
        return self.q(function(self.dq(x, scale)), _ACTIVATED_SCALE, 0, "int16")

    def product(self, a, a_scale: float, b, b_scale: float, out_scale: float, out_zero_point: int, dtype: str):
        return self.q(relax.op.multiply(self.dq(a, a_scale), self.dq(b, b_scale)), out_scale, out_zero_point, dtype)

    def __call__(self, x_t, h, c):
        """The output state and the cell state after the step from `h`, `c` with input `x_t` ([batch, features])."""
        input_gate, forget_gate, cell_gate, output_gate = (
            self.gate(x_t, h, index, relax.op.tanh if index == 2 else relax.op.sigmoid) for index in range(4))
        s_c = self.cell_scale
        kept = self.product(forget_gate, _ACTIVATED_SCALE, c, s_c, s_c, 0, "int16")
        added = self.product(input_gate, _ACTIVATED_SCALE, cell_gate, _ACTIVATED_SCALE, s_c, 0, "int16")
        total = self.add(kept, added, s_c)
        if self.clip is not None:
            total = relax.op.clip(total, -self.clip * s_c, self.clip * s_c)
        c = self.q(total, s_c, 0, "int16")
        h = self.product(output_gate, _ACTIVATED_SCALE, self.activated(c, relax.op.tanh, s_c), _ACTIVATED_SCALE,
                         *self.state_quant, "int8")
        return h, c


def _const(value, dtype: str):
    return relax.const(np.asarray(value, dtype=dtype), dtype)


class RecurrentConverters(ConverterCore):
    def _lstm_shapes(self, present: dict, output, time_major: bool) -> tuple[int, int, int, int]:
        """(batch, steps, features, units), after checking every shape as TFLite Micro's kernel does."""
        shape = self.shape_of(present[0])
        if len(shape) != 3:
            raise ValueError(f"the input has shape {list(shape)}; an LSTM takes [batch, time, features]")
        batch, steps = (shape[1], shape[0]) if time_major else (shape[0], shape[1])
        features, units = shape[2], self.shape_of(present[_RECURRENT_WEIGHTS[0]])[0]
        expected = {**{p: (units, features) for p in _INPUT_WEIGHTS}, **{p: (units, units) for p in _RECURRENT_WEIGHTS},
                    **{p: (units,) for p in _BIASES}}
        for position, dims in expected.items():
            if self.shape_of(present[position]) != dims:
                raise ValueError(f"input {position} has shape {list(self.shape_of(present[position]))}, expected "
                                 f"{list(dims)}")
        for position in (_OUTPUT_STATE, _CELL_STATE):
            if math.prod(self.shape_of(present[position])) != batch * units:
                raise ValueError(f"the state (input {position}) has shape {list(self.shape_of(present[position]))}, "
                                 f"expected {batch * units} values")
        if self.shape_of(output) != (shape[0], shape[1], units):
            raise ValueError(f"the output has shape {list(self.shape_of(output))}, expected "
                             f"{[shape[0], shape[1], units]}")
        if steps > MAX_STEPS:
            raise ValueError(f"{steps} time steps; LSTMs are unrolled per step, at most {MAX_STEPS}")
        return batch, steps, features, units

    def convert_unidirectional_sequence_lstm(self, op):
        """Every time step unrolled (see the module's docstring); the output is the concatenation of the steps'
        output states, the state tensors' names bound to the last ones."""
        present = {p: t for p, t in enumerate(self.get_input_tensors(op)) if t.tensor_idx >= 0}
        (output,) = self.get_output_tensors(op)
        options = builtin_options(op, tflite.UnidirectionalSequenceLSTMOptions)
        _check(present, output, options)
        batch_major = not options.TimeMajor()
        batch, steps, features, units = self._lstm_shapes(present, output, not batch_major)
        step = _Step(self, present, options)
        shape = self.shape_of(present[0])
        x, h, c = (self.get_tensor_expr(present[p]) for p in (0, _OUTPUT_STATE, _CELL_STATE))
        rows = []
        for t in range(steps):
            ranges = [range(batch), range(t, t + 1), range(features)]
            if not batch_major:
                ranges[:2] = ranges[1::-1]
            x_t = self.bb.emit(relax.op.reshape(strided_slice(x, ranges, shape), [batch, features]))
            h, c = step(x_t, h, c)
            rows.append(relax.op.reshape(h, [batch, 1, units] if batch_major else [1, batch, units]))
        for position, value in ((_OUTPUT_STATE, h), (_CELL_STATE, c)):
            name = get_tensor_name(self.subgraph, present[position].tensor_idx)
            self.exp_tab.set_expr(name, value, force_override=True)
        return self.concatenated(rows, 1 if batch_major else 0, output)
