"""The NPU primitive operators, as typed dataclasses: the interface between legalization, TE and code generation.

Every feature map is 4-D NHWC as the NPU sees it (lower-rank tensors get leading 1s). All numbers are the integers
the hardware is programmed with; the float scales are kept only for reporting and for Vela's API, which wants them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

ROUNDING_MODES = ("TFL", "NATURAL", "TRUNCATE")


@dataclass(frozen=True)
class Tensor:
    """A feature map flowing between NPU operators (or in/out of the NPU subgraph)."""

    name: str
    shape: tuple[int, int, int, int]
    dtype: str = "int8"


@dataclass(frozen=True)
class Operand:
    """How one operator reads or writes a tensor: the zero point and scale its arithmetic uses."""

    tensor: Tensor
    zero_point: int
    scale: float


@dataclass(frozen=True, eq=False)
class Requantize:
    """Output scaling: out = round(value · scale / 2^shift) per channel (arrays of 1 or C int64 values)."""

    scale: np.ndarray
    shift: np.ndarray
    rounding: str = "TFL"

    def __post_init__(self):
        if self.rounding not in ROUNDING_MODES:
            raise ValueError(f"rounding {self.rounding!r} is not one of {ROUNDING_MODES}")


@dataclass(frozen=True)
class Clamp:
    """Activation bounds in the output's integer domain (a fused RELU/RELU6 clip, or the dtype range)."""

    min: int = -128
    max: int = 127


@dataclass(frozen=True)
class Padding:
    top: int = 0
    left: int = 0
    bottom: int = 0
    right: int = 0


class _SingleInput:
    """Operators that read one feature map, `ifm`."""

    @property
    def inputs(self) -> tuple[Operand, ...]:
        return (self.ifm,)


@dataclass(frozen=True, eq=False)
class Conv2D(_SingleInput):
    """ethosu.conv2d: weights OHWI int8 (zero point subtracted by the hardware), 40-bit bias, per-channel requant."""

    op_name: ClassVar[str] = "ethosu.conv2d"
    ifm: Operand
    ofm: Operand
    weights: np.ndarray
    weight_zero_point: int
    bias: np.ndarray
    requant: Requantize
    strides: tuple[int, int] = (1, 1)
    dilation: tuple[int, int] = (1, 1)
    padding: Padding = field(default_factory=Padding)
    clamp: Clamp = field(default_factory=Clamp)
    source: str = ""

    @property
    def kernel(self) -> tuple[int, int]:
        return int(self.weights.shape[1]), int(self.weights.shape[2])


@dataclass(frozen=True, eq=False)
class DepthwiseConv2D(Conv2D):
    """ethosu.depthwise_conv2d: weights (C_out, KH, KW, 1); output channel o reads IFM channel o // multiplier."""

    op_name: ClassVar[str] = "ethosu.depthwise_conv2d"


@dataclass(frozen=True, eq=False)
class TransposeConv2D(Conv2D):
    """ethosu.transpose_conv2d: a stride-1 convolution over the IFM upscaled by 2 with zeros (each element at the
    even row and column, the IFM zero point between: the NPU's TRANSPOSE IFM upscaling), `padding` around the
    upscaled IFM. A TRANSPOSE_CONV of stride 2 with its kernel reversed in height and width."""

    op_name: ClassVar[str] = "ethosu.transpose_conv2d"


@dataclass(frozen=True, eq=False)
class Pooling(_SingleInput):
    """ethosu.pooling: MAX or AVG over valid taps (padding never contributes), then optional requant and clamp;
    REDUCE_SUM (1x1, unpadded): the centred IFM summed over its depth into an OFM of depth 1 (an int32 IFM allowed).

    `requant` scales an unpadded AVG's or a REDUCE_SUM's result before the OFM zero point is added: over a 1x1
    window, a requantization of the centred IFM (int16 QUANTIZE); for a REDUCE_SUM, BATCH_MATMUL's multiplier.
    With `upscale` the window moves over the IFM read twice as high and wide, each element repeated into 2x2 (the
    NPU's NEAREST upscaling on the fly, RESIZE_BILINEAR's last doubling), padding around that.
    """

    op_name: ClassVar[str] = "ethosu.pooling"
    pooling_type: str
    ifm: Operand
    ofm: Operand
    pool_shape: tuple[int, int]
    strides: tuple[int, int] = (1, 1)
    padding: Padding = field(default_factory=Padding)
    clamp: Clamp = field(default_factory=Clamp)
    source: str = ""
    requant: Requantize | None = None
    upscale: bool = False


@dataclass(frozen=True, eq=False)
class BinaryElementwise:
    """ethosu.binary_elementwise: ADD/SUB/MUL/MIN/MAX with broadcasting of size-1 dimensions.

    ADD/SUB rescale each operand ((x − zp) << input_shift, then ifm_requant/ifm2_requant) before combining, as
    TFLite does (without `ifm_requant` they combine the centred operands as they are); MUL multiplies the centred
    operands (the NPU applies only the shift of `requant` to a product of 32-bit operands); MIN/MAX compare raw
    values (quantizations are equal).
    `requant` (None for MIN/MAX) scales the combined value to the output. A model constant is always IFM2, `ifm2`
    giving its quantization, and the IFM is the only input: with `ifm2_scalar` a one-element constant as that raw
    integer, with `ifm2_constant` a larger one as its raw values (4-D, broadcast against the OFM);
    `reversed_operands` then puts the constant on the left (SUB: constant − IFM).
    """

    op_name: ClassVar[str] = "ethosu.binary_elementwise"
    operator: str
    ifm: Operand
    ifm2: Operand
    ofm: Operand
    requant: Requantize | None = None
    ifm_requant: Requantize | None = None
    ifm2_requant: Requantize | None = None
    input_shift: int = 0
    clamp: Clamp = field(default_factory=Clamp)
    source: str = ""
    ifm2_scalar: int | None = None
    ifm2_constant: np.ndarray | None = None
    reversed_operands: bool = False

    @property
    def inputs(self) -> tuple[Operand, ...]:
        constant = self.ifm2_scalar is not None or self.ifm2_constant is not None
        return (self.ifm,) if constant else (self.ifm, self.ifm2)


@dataclass(frozen=True, eq=False)
class Identity(_SingleInput):
    """ethosu.identity: copy in NHWC element order (so also a reshape), optionally through a lookup table.

    `lut` (256 int8 entries, indexed by the raw input value + 128) carries an int8 → int8 function such as a
    requantization or an activation; without it the values are copied unchanged. `function` ("TANH" or "SIGMOID")
    is instead the NPU's built-in int16 function (TFLite's int16 TANH and LOGISTIC, output scale 1/32768) of the
    centred IFM times `input_scale`: TFLite's rescaling to units of 1/(3·4096).
    """

    op_name: ClassVar[str] = "ethosu.identity"
    ifm: Operand
    ofm: Operand
    lut: np.ndarray | None = None
    source: str = ""
    function: str = ""
    input_scale: Requantize | None = None


@dataclass(frozen=True, eq=False)
class Softmax(_SingleInput):
    """ethosu.softmax: SOFTMAX over the depth axis; int8 with output scale 1/256 and zero point −128, or int16 with
    1/32768 and 0 (TFLite's).

    int8: code generation expands it into Vela's sequence of NPU operations: a row maximum; x − max through
    `exp_lut` (256 int32 entries, indexed by x − max + 255: TFLite's exp in Q0.31); the row sum of the exps rounded
    to Q12.19; its reciprocal by count-leading-zeros, shifts and Newton-Raphson on int32 tensors; exp times the
    reciprocal, rounded to the output.
    int16: TFLite's int16 kernel step for step: x − max rescaled by `input_rescale` (NPU scale, right shift), its
    exp from `exp_lut` (TFLite's 513-entry table as the NPU's 512-word interpolating LUT), the sum normalised by
    count-leading-zeros into the 1/(1 + x) table (`reciprocal_lut`), exp times the reciprocal shifted back.
    """

    op_name: ClassVar[str] = "ethosu.softmax"
    ifm: Operand
    ofm: Operand
    exp_lut: np.ndarray
    source: str = ""
    input_rescale: tuple[int, int] | None = None
    reciprocal_lut: np.ndarray | None = None


@dataclass(frozen=True, eq=False)
class Concatenate:
    """ethosu.concatenate: the inputs side by side along `axis` of the OFM (1, 2 or 3 of NHWC), with equal
    quantizations, so the integers are copied unchanged (LiteRT's and TFLite Micro's int8 kernels refuse other
    quantizations and fused activations).

    The NPU runs it as one copy per input into the OFM's box at that input's offset along the axis.
    """

    op_name: ClassVar[str] = "ethosu.concatenate"
    inputs: tuple[Operand, ...]
    ofm: Operand
    axis: int
    source: str = ""

    @property
    def offsets(self) -> tuple[int, ...]:
        """Where each input starts along the axis."""
        starts = [0]
        for operand in self.inputs[:-1]:
            starts.append(starts[-1] + operand.tensor.shape[self.axis])
        return tuple(starts)


@dataclass(frozen=True, eq=False)
class Pad(_SingleInput):
    """ethosu.pad: the IFM at offset `before` (NHWC) in an OFM otherwise filled with `value` (PAD's zero point or
    PADV2's constant, a raw integer).

    The NPU runs it as a copy of the IFM into its box of the OFM, and copies of constant blocks of `value` into the
    boxes around it (as Vela does: the hardware's padding is meant for kernels that overlap the IFM).
    """

    op_name: ClassVar[str] = "ethosu.pad"
    ifm: Operand
    ofm: Operand
    before: tuple[int, int, int, int]
    value: int
    source: str = ""


@dataclass(frozen=True, eq=False)
class Slice(_SingleInput):
    """ethosu.slice: the IFM elements from `begin` (NHWC) on, every `strides` (height, width)-th row and column,
    as many as the OFM has, copied unchanged."""

    op_name: ClassVar[str] = "ethosu.slice"
    ifm: Operand
    ofm: Operand
    begin: tuple[int, int, int, int]
    strides: tuple[int, int] = (1, 1)
    source: str = ""


@dataclass(frozen=True, eq=False)
class Upscale(_SingleInput):
    """ethosu.upscale: each IFM element repeated into a 2x2 block of the OFM (RESIZE_NEAREST_NEIGHBOR by 2), copied
    unchanged; the NPU's NEAREST IFM upscaling."""

    op_name: ClassVar[str] = "ethosu.upscale"
    ifm: Operand
    ofm: Operand
    source: str = ""


@dataclass(frozen=True, eq=False)
class Transpose(_SingleInput):
    """ethosu.transpose: the IFM's elements seen as (A, B, C) = `view`, written as (B, A, C): the OFM's element
    order (a TRANSPOSE swapping two axes, unit axes aside, before at most one more). The NPU copies it with the row
    and column strides of the IFM or the OFM swapped, one copy per block of at most 65535 rows and columns."""

    op_name: ClassVar[str] = "ethosu.transpose"
    ifm: Operand
    ofm: Operand
    view: tuple[int, int, int]
    source: str = ""


NpuOp = (Conv2D | DepthwiseConv2D | TransposeConv2D | Pooling | BinaryElementwise | Identity | Softmax | Concatenate
         | Pad | Slice | Upscale | Transpose)


@dataclass(frozen=True, eq=False)
class NpuGraph:
    """One NPU subgraph: its inputs and outputs (in the Relax function's order) and its ops in execution order.

    `function` is the global name of the ``Codegen="ethos-u"`` Relax function it came from (main calls it);
    `composites` the source of each of its composite calls in order, a PAD folded into a convolution's padding
    too, though no primitive has it (the per-layer report attributes the primitives by them).
    """

    name: str
    inputs: tuple[Tensor, ...]
    outputs: tuple[Tensor, ...]
    ops: tuple[NpuOp, ...]
    function: str = ""
    composites: tuple[str, ...] = ()


def average_as_depthwise(op: Pooling) -> DepthwiseConv2D:
    """An unpadded average pool as a depthwise convolution with unit weights and the pooling's global scale.

    Used when the pool's IFM block does not fit in SHRAM (large kernels on small configurations): the depthwise
    datapath splits kernels into sub-kernels. Both compute the window sum, then requantize it once by
    (scale, shift) = ((2^(31+k) + 2^k) // n, 31 + k), k = bit length of n − 1, with TFL rounding.
    """
    kernel_h, kernel_w = op.pool_shape
    taps = kernel_h * kernel_w
    k = (taps - 1).bit_length()
    channels = op.ofm.tensor.shape[3]
    scale = ((1 << (31 + k)) + (1 << k)) // taps
    return DepthwiseConv2D(
        ifm=op.ifm, ofm=op.ofm, weights=np.ones((channels, kernel_h, kernel_w, 1), dtype=np.int8),
        weight_zero_point=0, bias=np.zeros(channels, dtype=np.int64),
        requant=Requantize(np.array([scale], dtype=np.int64), np.array([31 + k], dtype=np.int64), "TFL"),
        strides=op.strides, clamp=op.clamp, source=op.source,
    )
