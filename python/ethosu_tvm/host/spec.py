"""Which op, with which quantization: the description a host kernel is built from.

One frozen dataclass per op family, holding exactly what TFLite's kernel reads from the model: tensor shapes and
dtypes, per-tensor scales and zero points as stored (float32 values), constant data, and op attributes. Integer
parameters (multipliers, shifts, tables) are derived from these when the kernel is built, as TFLite derives them
when it prepares the model. Layouts are TFLite's: activations NHWC, conv weights OHWI, depthwise weights
[1, H, W, C·multiplier], fully connected weights [units, depth].

A partitioned Relax function `dequantize -> op -> quantize` maps to one of these: the dequantize/quantize
constants give the scales and zero points (scales as float32 values), the op's attributes and constants give the
rest (Relax holds conv weights HWIO: transpose them to OHWI; depthwise and fully connected weights are the TFLite
constants before the graph's reshape/permute_dims). A fused activation becomes the integer `clamp` range: a Relax
`clip` on the quantized output gives it directly; a float `relu`/`clip` before the quantize gives
(max(qmin, quantize(low)), min(qmax, quantize(high))) with quantize(v) = zero_point + round(v / scale) in float32,
as TFLite's CalculateActivationRangeQuantized computes it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Union

import numpy as np


class UnsupportedHostOp(ValueError):
    """No host kernel for this op description (op, dtype, quantization or shapes); the message names the op."""


@dataclass(frozen=True)
class QuantTensor:
    """An activation tensor: real = scale · (q − zero_point)."""

    shape: tuple[int, ...]
    dtype: str  # "int8", "int16" (or "uint8", which only QUANTIZE and DEQUANTIZE read or write)
    scale: float
    zero_point: int

    def __post_init__(self) -> None:
        """Accept NumPy scalars, lists and dtype objects, as read from constants and type annotations."""
        object.__setattr__(self, "shape", tuple(int(d) for d in self.shape))
        object.__setattr__(self, "dtype", str(np.dtype(self.dtype)))
        object.__setattr__(self, "scale", float(self.scale))
        object.__setattr__(self, "zero_point", int(self.zero_point))

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def limits(self) -> tuple[int, int]:
        info = np.iinfo(self.dtype)
        return int(info.min), int(info.max)


@dataclass(frozen=True)
class Unary:
    """An op of one activation tensor (the base of the ops below)."""

    input: QuantTensor
    output: QuantTensor


@dataclass(frozen=True, eq=False)
class Prelu(Unary):
    """PRELU: x where x ≥ 0, else alpha · x; `alpha` is the raw integer constant (broadcasting against the input,
    numpy rules), quantized per tensor by `alpha_scale` and `alpha_zero_point`."""

    alpha: np.ndarray = None
    alpha_scale: float = 1.0
    alpha_zero_point: int = 0


@dataclass(frozen=True)
class Softmax(Unary):
    """SOFTMAX over the last axis; TFLite fixes the output quantization (int8: scale 1/256, zero point −128)."""

    beta: float = 1.0


class LogSoftmax(Unary):
    """LOG_SOFTMAX over the last axis; TFLite fixes the int8 output quantization (scale 16/256, zero point 127)."""


class Logistic(Unary):
    """LOGISTIC (sigmoid); int8 output is scale 1/256, zero point −128."""


class Tanh(Unary):
    """TANH; int8 output is scale 1/128, zero point 0."""


@dataclass(frozen=True)
class FloatFunction(Unary):
    """EXP, LOG, ELU or GELU (`function`, a key of quantization.FLOAT32_FUNCTIONS): int8 kernels that TFLite
    evaluates as a table of the float32 function."""

    function: str = "exp"


class Abs(Unary):
    """ABS (int8: |x − zero point| requantized, TFLite's integer kernel)."""


class Rsqrt(Unary):
    """RSQRT (int8: TFLite computes 1/sqrt in gemmlowp fixed point; LiteRT refuses inputs below the zero point)."""


class Sqrt(Unary):
    """SQRT (int8: TFLite computes each element in float32 and truncates; LiteRT refuses inputs below the zero
    point)."""


class Neg(Unary):
    """NEG (int8: LiteRT negates the raw integers; the importer checks that the quantization allows it)."""


class L2Normalization(Unary):
    """L2_NORMALIZATION over the last axis (int8 to TFLite's fixed output quantization, scale 1/128 and zero point
    0)."""


class HardSwish(Unary):
    """HARD_SWISH, x · relu6(x + 3) / 6 (int8: TFLite's kernel computes it in 16-bit fixed point)."""


class Requantize(Unary):
    """QUANTIZE from one integer quantization to another (same shape)."""


@dataclass(frozen=True)
class Relu(Unary):
    """RELU, RELU6, RELU_N1_TO_1: requantize, then clamp to the activation's range in output integers."""

    clamp: tuple[int, int] = (-128, 127)


@dataclass(frozen=True)
class LeakyRelu(Unary):
    """LEAKY_RELU: x for x >= 0, alpha·x otherwise, requantized."""

    alpha: float = 0.2


class Reshape(Unary):
    """RESHAPE, SQUEEZE, EXPAND_DIMS: the same elements in the same order under a new shape (a copy)."""


@dataclass(frozen=True)
class Pad(Unary):
    """PAD (with the zero point, real 0) and PADV2 (with a constant): `paddings` has one (before, after) pair per
    dimension, the border holds the integer `value` (None: the output's zero point)."""

    paddings: tuple[tuple[int, int], ...] = ()
    value: int | None = None


@dataclass(frozen=True)
class Concatenation:
    """CONCATENATION along `axis`; int8/int16 inputs share the output's quantization (TFLite requires it)."""

    inputs: tuple[QuantTensor, ...]
    output: QuantTensor
    axis: int


@dataclass(frozen=True)
class StridedSlice(Unary):
    """STRIDED_SLICE, SLICE, and one output of SPLIT, SPLIT_V or UNPACK: input[begin + i·strides] per input axis,
    `extent` elements along each (default: the output's shape), in the output's shape (TFLite's masks are resolved
    at import; shrunk and new axes only reshape). Values are copied as they are, whatever the output's
    quantization, as TFLite's kernels do."""

    begin: tuple[int, ...] = ()
    strides: tuple[int, ...] = ()
    extent: tuple[int, ...] = ()


@dataclass(frozen=True)
class Transpose(Unary):
    """TRANSPOSE: output axis k is input axis perm[k]; values copied as they are, as TFLite's kernel does."""

    perm: tuple[int, ...] = ()


@dataclass(frozen=True)
class BroadcastTo(Unary):
    """BROADCAST_TO: the input's axes aligned with the output's last ones, those of extent 1 repeated; values copied
    as they are."""


@dataclass(frozen=True)
class Tile(Unary):
    """TILE along the axes where the output is longer (the importer's concatenation of copies of one feature map):
    output[i] = input[i mod shape]; values copied as they are, as TFLite's kernel does."""


@dataclass(frozen=True)
class Pack:
    """PACK along the new output axis `axis`: the integers copied whatever the quantizations (LiteRT refuses
    differing ones, TFLite Micro copies)."""

    inputs: tuple[QuantTensor, ...]
    output: QuantTensor
    axis: int


@dataclass(frozen=True, eq=False)
class Weighted:
    """An op with constant weights (the base of the two below).

    `weight_scales` has one scale, or one per output channel; `bias` is int32 (int64 for int16 activations) or
    None; `clamp` is the fused activation's range in output integers (None: the dtype's range).
    """

    input: QuantTensor
    output: QuantTensor
    weights: np.ndarray
    weight_scales: tuple[float, ...]
    bias: Optional[np.ndarray]
    clamp: Optional[tuple[int, int]] = None


@dataclass(frozen=True, eq=False)
class Conv2D(Weighted):
    """CONV_2D (NHWC, OHWI weights) or, with `depthwise`, DEPTHWISE_CONV_2D ([1, H, W, C·m] weights).

    `padding` is (top, left, bottom, right).
    """

    stride: tuple[int, int] = (1, 1)
    dilation: tuple[int, int] = (1, 1)
    padding: tuple[int, int, int, int] = (0, 0, 0, 0)
    depthwise: bool = False


@dataclass(frozen=True, eq=False)
class TransposeConv2D(Weighted):
    """TRANSPOSE_CONV (NHWC, OHWI weights): input pixel (y, x) adds its taps to output pixel
    (y·stride − top + ky, x·stride − left + kx); `padding` is TFLite's (top, left); the output shape is the
    model's."""

    stride: tuple[int, int] = (1, 1)
    padding: tuple[int, int] = (0, 0)


class FullyConnected(Weighted):
    """FULLY_CONNECTED: input flattened to [rows, depth], weights [units, depth]; output [rows, units] (any shape
    with those elements, e.g. with keep_num_dims)."""


@dataclass(frozen=True)
class Pool2D:
    """AVERAGE_POOL_2D (`kind` "avg") or MAX_POOL_2D ("max"); output quantization equals the input's."""

    kind: str
    input: QuantTensor
    output: QuantTensor
    pool: tuple[int, int]
    stride: tuple[int, int]
    padding: tuple[int, int, int, int] = (0, 0, 0, 0)
    clamp: Optional[tuple[int, int]] = None


@dataclass(frozen=True, eq=False)
class Binary:
    """Elementwise ADD, SUB, MUL, MINIMUM, MAXIMUM, SQUARED_DIFFERENCE or DIV (`kind` "add", ...,
    "squared_difference", "div") with NumPy broadcasting.

    An operand with values (`lhs_values`, `rhs_values`: integers of its shape and dtype) is a model constant, not a
    kernel input; at most one operand is. With `one_input` both operands are one feature map (x·x), the kernel's
    only input.
    """

    kind: str
    lhs: QuantTensor
    rhs: QuantTensor
    output: QuantTensor
    clamp: Optional[tuple[int, int]] = None
    lhs_values: Optional[np.ndarray] = None
    rhs_values: Optional[np.ndarray] = None
    one_input: bool = False


@dataclass(frozen=True, eq=False)
class BatchMatMul:
    """BATCH_MATMUL: lhs [..., rows, depth] by rhs [..., depth, columns] (the last two axes swapped with adj_x,
    adj_y), batch axes broadcasting. An operand with values is a model constant, not a kernel input."""

    lhs: QuantTensor
    rhs: QuantTensor
    output: QuantTensor
    adj_x: bool = False
    adj_y: bool = False
    lhs_values: Optional[np.ndarray] = None
    rhs_values: Optional[np.ndarray] = None


@dataclass(frozen=True, eq=False)
class Comparison:
    """EQUAL, NOT_EQUAL, GREATER, GREATER_EQUAL, LESS or LESS_EQUAL (`kind`, the TFLite op name in lower case) of
    two int8 operands, broadcasting, to a bool tensor of `output_shape`. An operand with values is a model
    constant, not a kernel input."""

    kind: str
    lhs: QuantTensor
    rhs: QuantTensor
    output_shape: tuple[int, ...]
    lhs_values: Optional[np.ndarray] = None
    rhs_values: Optional[np.ndarray] = None


@dataclass(frozen=True, eq=False)
class Select:
    """SELECT_V2: x where the bool condition holds, else y, the three broadcast to `output_shape` (int8 or int16
    `dtype`). TFLite's kernels copy the integers whatever x's, y's and the output's quantization, so none is kept.
    An operand with values is a model constant, not a kernel input."""

    condition_shape: tuple[int, ...]
    x_shape: tuple[int, ...]
    y_shape: tuple[int, ...]
    output_shape: tuple[int, ...]
    dtype: str
    condition_values: Optional[np.ndarray] = None
    x_values: Optional[np.ndarray] = None
    y_values: Optional[np.ndarray] = None


@dataclass(frozen=True)
class Fill:
    """FILL: the one int8/int16 value (a scalar input) repeated over `output_shape`; the integer is copied whatever
    the quantizations, as TFLite Micro does (LiteRT refuses differing ones)."""

    output_shape: tuple[int, ...]
    dtype: str


@dataclass(frozen=True, eq=False)
class GatherNd:
    """GATHER_ND: for each index tuple (the last axis of `indices_shape`, int32 or int64 `indices_dtype`), the slice
    of the int8/int16 params it starts; the output shape is indices_shape[:-1] + params_shape[depth:]. The integers
    are copied whatever the quantizations. Operands with values are model constants (one at most)."""

    params_shape: tuple[int, ...]
    indices_shape: tuple[int, ...]
    dtype: str
    indices_dtype: str
    params_values: Optional[np.ndarray] = None
    indices_values: Optional[np.ndarray] = None


@dataclass(frozen=True)
class AddN:
    """ADD_N (int8) of same-shaped inputs sharing one quantization (TFLite Micro requires it; LiteRT has no int8
    kernel)."""

    inputs: tuple[QuantTensor, ...]
    output: QuantTensor


@dataclass(frozen=True)
class ArgMinMax:
    """ARG_MAX or ARG_MIN (`kind` "arg_max" or "arg_min") over `axis` of the raw integers: the index of the first
    extreme value, as `index_dtype` ("int32" or "int64"), in `output_shape` (the input's without the axis)."""

    input: QuantTensor
    output_shape: tuple[int, ...]
    kind: str = "arg_max"
    axis: int = 0
    index_dtype: str = "int32"


@dataclass(frozen=True)
class Cast:
    """CAST between int8, int16 and int32: the stored integers converted as C converts them (no quantization)."""

    shape: tuple[int, ...]
    input_dtype: str
    output_dtype: str


@dataclass(frozen=True)
class Reduce(Unary):
    """MEAN, SUM, REDUCE_MAX or REDUCE_MIN (`kind`, the TFLite op name in lower case) over `axes` (non-negative,
    sorted); keep_dims only shapes the output. REDUCE_MAX/MIN keep the input's quantization (TFLite requires it)."""

    kind: str = "mean"
    axes: tuple[int, ...] = ()


@dataclass(frozen=True)
class Resize(Unary):
    """RESIZE_BILINEAR or RESIZE_NEAREST_NEIGHBOR (`kind`, the TFLite op name in lower case) of an NHWC tensor's
    height and width to the output's; the output keeps the input's quantization."""

    kind: str = "resize_nearest_neighbor"
    align_corners: bool = False
    half_pixel_centers: bool = False


@dataclass(frozen=True)
class FloatQuantize:
    """QUANTIZE of a float32 model input (`shape`) to `output`."""

    shape: tuple[int, ...]
    output: QuantTensor


@dataclass(frozen=True)
class Dequantize:
    """DEQUANTIZE of `input` to a float32 model output."""

    input: QuantTensor


HostOp = Union[Softmax, LogSoftmax, L2Normalization, Logistic, Tanh, FloatFunction, Abs, Rsqrt, Sqrt, Neg, HardSwish,
               Requantize, Relu, LeakyRelu, Prelu, Reshape, Pad, Concatenation, StridedSlice, Transpose, BroadcastTo,
               Tile, Pack, Conv2D, TransposeConv2D, FullyConnected, Pool2D, Binary, Comparison, Select, Fill, GatherNd,
               BatchMatMul, AddN, ArgMinMax, Cast, Reduce, Resize, FloatQuantize, Dequantize]


_NAMES = {Softmax: "softmax", LogSoftmax: "log_softmax", L2Normalization: "l2_normalization", Logistic: "logistic",
          Tanh: "tanh", Abs: "abs",
          Rsqrt: "rsqrt", Sqrt: "sqrt", Neg: "neg", HardSwish: "hard_swish", Requantize: "quantize", Relu: "relu",
          LeakyRelu: "leaky_relu", Prelu: "prelu", Reshape: "reshape", Pad: "pad", Concatenation: "concatenation",
          StridedSlice: "strided_slice", Transpose: "transpose", Pack: "pack", BroadcastTo: "broadcast_to",
          Tile: "tile", FullyConnected: "fully_connected",
          BatchMatMul: "batch_matmul", AddN: "add_n", Cast: "cast", TransposeConv2D: "transpose_conv",
          Select: "select_v2", Fill: "fill", GatherNd: "gather_nd",
          FloatQuantize: "quantize", Dequantize: "dequantize"}


def op_name(op: HostOp) -> str:
    """The TFLite-style op name used in kernel names and error messages."""
    if isinstance(op, Conv2D):
        return "depthwise_conv2d" if op.depthwise else "conv2d"
    if isinstance(op, Pool2D):
        return f"{op.kind}_pool2d"
    if isinstance(op, (Binary, Comparison, Reduce, Resize, ArgMinMax)):
        return op.kind
    if isinstance(op, FloatFunction):
        return op.function
    return _NAMES.get(type(op), type(op).__name__)
