"""Which of our modules converts each TFLite operator, and the converter class TVM's frontend runs, built from that
table: every other operator is TVM's converter's alone.

Each module's class defines ``convert_<operator name in lower case>`` for the operators the table gives it; the
converter calls exactly those (a name the table gives a module that does not define it fails every import).
"""
from __future__ import annotations

from tvm.relax.frontend.tflite.tflite_frontend import OperatorConverter

from .arithmetic import ArithmeticConverters
from .data_movement import DataMovementConverters
from .indexing import IndexingConverters
from .normalization import NormalizationConverters
from .recurrent import LSTM, RecurrentConverters

CONVERTERS: dict[str, type] = {
    **dict.fromkeys(("CONV_2D", "DEPTHWISE_CONV_2D", "TRANSPOSE_CONV", "FULLY_CONNECTED", "PRELU", "ELU", "GELU",
                     "BATCH_MATMUL", "ARG_MAX", "ARG_MIN", "ADD_N", "CAST", "QUANTIZE", "NEG", "SOFTMAX"),
                    ArithmeticConverters),
    **dict.fromkeys(("RESHAPE", "EXPAND_DIMS", "STRIDED_SLICE", "SPLIT", "SPLIT_V", "UNPACK", "PACK", "DEPTH_TO_SPACE",
                     "SPACE_TO_DEPTH", "MIRROR_PAD", "TILE", "REVERSE_V2", "GATHER", "SPACE_TO_BATCH_ND",
                     "BATCH_TO_SPACE_ND"), DataMovementConverters),
    **dict.fromkeys(("FILL", "GATHER_ND"), IndexingConverters),
    "L2_NORMALIZATION": NormalizationConverters,
    LSTM: RecurrentConverters,
}
# TVM's converters that are exact on quantized tensors, which TVM lists as unsupported for them all the same: those
# that only move values (PAD pads with the zero point), and RELU_0_TO_1, which dequantizes, clips and quantizes as
# TVM's RELU_N1_TO_1 does.
_TVM_EXACT_ON_QUANTIZED = frozenset({"PAD", "PADV2", "SQUEEZE", "TRANSPOSE", "SLICE", "RESIZE_NEAREST_NEIGHBOR",
                                     "BROADCAST_TO", "SELECT_V2", "RELU_0_TO_1"})


class Converter(*dict.fromkeys(CONVERTERS.values())):
    """TVM's OperatorConverter with our converters (`CONVERTERS`) and the converter core's tracking."""

    converters = CONVERTERS
    _SUPPORTED_QUANTIZED_OPS = OperatorConverter._SUPPORTED_QUANTIZED_OPS | _TVM_EXACT_ON_QUANTIZED | set(CONVERTERS)
