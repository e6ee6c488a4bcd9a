"""Recurrent layers, quantized as TFLite's converter quantizes a Keras LSTM for integer-only kernels ("8x8_16")."""
from __future__ import annotations

import math

import numpy as np
import tflite

from ..tflite_builder import Quantization
from .base import NetBase
from .quant import OP, QTensor

# Q3.12: the scale of an integer LSTM's gate pre-activations, fixed by the kernels.
_GATE_SCALE = 2.0 ** -12


class RecurrentOps(NetBase):
    def lstm(self, x: QTensor, units: int = 8, cell_scale_log2: float = -11, cell_clip: float = 10.0,
             w_scale: float | None = None, state_scale: float = 1 / 128, state_zp: int = -2,
             time_major: bool = False) -> QTensor:
        """UNIDIRECTIONAL_SEQUENCE_LSTM over x [batch, time, features] ([time, batch, features] when
        `time_major`), without peepholes, projection or layer normalisation (a Keras LSTM as TFLite's converter
        writes it): four input and four recurrent int8 weight matrices (per-tensor, symmetric), int32 gate biases
        at the input's scale times the weights', an int8 output state (`state_scale`, `state_zp`, shared with the
        output) and an int16 cell state of scale 2^`cell_scale_log2` as variable tensors, and the five
        intermediates the integer kernels need (the gates' Q3.12 scale, and the hidden state's quantization).
        Returns the [batch, time, units] output ([time, batch, units] when `time_major`)."""
        if x.dtype != np.int8 or len(x.shape) != 3:
            raise ValueError("lstm takes a 3-D int8 input")
        batch, features = x.shape[1 if time_major else 0], x.shape[2]
        # Gate pre-activations of about 2 in Q3.12: the weights' scale from the accumulation's spread (random int8
        # weights have a standard deviation of about 73).
        w_scale = w_scale if w_scale is not None else 2.0 / (73.0 * math.sqrt(features + units) * max(x.rms, 0.25))
        weights = Quantization((w_scale,), (0,))

        def matrix(columns: int) -> int:
            data = self.rng.integers(-127, 127, size=(units, columns), endpoint=True).astype(np.int8)
            return self._const(data, weights)

        input_weights = [matrix(features) for _ in range(4)]
        recurrent_weights = [matrix(units) for _ in range(4)]
        bias_scale = x.scale * w_scale
        biases = [self._const(self.rng.integers(-4096, 4096, size=units).astype(np.int32),
                              Quantization((bias_scale,), (0,))) for _ in range(4)]
        state = Quantization((state_scale,), (state_zp,))
        output_state = self.builder.add_tensor(self._name("output_state"), (batch, units), np.int8,
                                               quantization=state, variable=True)
        cell_state = self.builder.add_tensor(self._name("cell_state"), (batch, units), np.int16,
                                             quantization=Quantization((2.0 ** cell_scale_log2,), (0,)),
                                             variable=True)
        gates = [self.builder.add_tensor(self._name(f"{gate}_intermediate"), (0,), np.int16,
                                         quantization=Quantization((_GATE_SCALE,), (0,)))
                 for gate in ("input", "forget", "cell", "output")]
        hidden = self.builder.add_tensor(self._name("effective_hidden_scale_intermediate"), (0,), np.int8,
                                         quantization=state)
        y = self._activation((*x.shape[:2], units), np.int8, state_scale, state_zp)
        inputs = [x.index, *input_weights, *recurrent_weights, -1, -1, -1, *biases, -1, -1, output_state,
                  cell_state, -1, -1, -1, -1]
        self.builder.add_operator(OP.UNIDIRECTIONAL_SEQUENCE_LSTM, inputs, [y.index],
                                  "UnidirectionalSequenceLSTMOptions",
                                  dict(FusedActivationFunction=tflite.ActivationFunctionType.TANH,
                                       CellClip=cell_clip, ProjClip=0.0, TimeMajor=time_major),
                                  intermediates=[*gates, hidden])
        return y

