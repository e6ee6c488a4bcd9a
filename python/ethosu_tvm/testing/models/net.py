"""`Net`: the model builder with every op family's layer methods."""
from __future__ import annotations

from .binary import BinaryOps
from .movement import DataMovementOps
from .pooling import PoolingOps
from .recurrent import RecurrentOps
from .unary import UnaryOps
from .weighted import WeightedOps


class Net(WeightedOps, PoolingOps, BinaryOps, UnaryOps, DataMovementOps, RecurrentOps):
    """Builds a quantized model layer by layer; each layer method returns its output `QTensor`."""
