"""Decoding the register file into a typed description of the block operation an NPU_OP_* command starts.

The description is shared by execution, statistics, the cycle model and the disassembler. Register values the model
does not implement raise SimulatorError here or in the executor, always before the OFM is written.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..arch.operation import CONV, DEPTHWISE, ELEMENTWISE, POOL, Kernel
from . import featuremap
from .featuremap import FeatureMap
from .quant import Rounding
from .regfile import RegisterFile
from .registers import Command

_KINDS = {"NPU_OP_CONV": CONV, "NPU_OP_DEPTHWISE": DEPTHWISE, "NPU_OP_POOL": POOL, "NPU_OP_ELEMENTWISE": ELEMENTWISE}
POOL_MODES = ("MAX", "AVERAGE", "REDUCE_SUM")
ELEMENTWISE_MODES = ("MUL", "ADD", "SUB", "MIN", "MAX", "LRELU", "ABS", "CLZ", "SHR", "SHL")
_MODES = {POOL: POOL_MODES, ELEMENTWISE: ELEMENTWISE_MODES}
UNARY_MODES = ("LRELU", "ABS", "CLZ")
UPSCALE_MODES = ("NONE", "NEAREST", "TRANSPOSE")
_CLIP_TYPES = {0: None, 2: np.dtype(np.uint8), 3: np.dtype(np.int8), 5: np.dtype(np.int16)}


@dataclass(frozen=True)
class Padding:
    top: int
    left: int
    bottom: int
    right: int

    @property
    def any(self) -> bool:
        return bool(self.top or self.left or self.bottom or self.right)


@dataclass(frozen=True)
class Stream:
    """A weight or scale stream: bytes [base, base + length) of a region."""

    region: int
    base: int
    length: int


@dataclass(frozen=True)
class OutputStage:
    """Requantisation, clipping and activation between the accumulators and the OFM."""

    global_scale: bool
    scale: int  # OFM_SCALE multiplier (global mode)
    shift: int
    rounding: Rounding
    zero_point: int
    ofm_dtype: np.dtype
    clip_type: np.dtype  # ACTIVATION.clip_range, or the OFM type when that is OFM_PRECISION
    clip_forced: bool  # clip_range is not OFM_PRECISION
    act_min: int
    act_max: int
    function: int  # ACTIVATION.function: 0 none, 3 tanh, 4 sigmoid, 16..23 LUT slot 0..7


@dataclass(frozen=True)
class OperandScaling:
    """IFM_PRECISION scale_mode and OPA/OPB_SCALE for ADD/SUB (operand A is the first operand of the operation)."""

    mode: int  # 0 = OPA_OPB_16, 1 = OPA_32 (scale A), 2 = OPB_32 (scale B)
    rounding: Rounding
    opa_scale: int
    opa_shift: int
    opb_scale: int


@dataclass(frozen=True)
class BlockOperation:
    """Everything one CONV/DEPTHWISE/POOL/ELEMENTWISE command computes from."""

    command: Command
    kind: str
    mode: str  # pooling or elementwise mode, "" for convolutions
    ifm: FeatureMap
    ofm: FeatureMap
    kernel: Kernel
    padding: Padding
    upscale: str
    output: OutputStage
    block: tuple[int, int, int]  # OFM block height, width, depth
    acc_bits: int
    cores: int = 1  # the cores working on it (PARALLEL_MODE); they split the OFM depth
    weights: tuple[Stream, ...] = ()  # a weight stream per core (convolutions only)
    scales: tuple[Stream, ...] = ()  # a scale stream per core
    ifm2: FeatureMap | None = None
    ifm2_scalar: int | None = None
    reversed_operands: bool = False
    operand_scaling: OperandScaling | None = None

    @property
    def reads_ifm2(self) -> bool:
        """Whether the operation reads an IFM2 tensor (binary elementwise without a scalar)."""
        return self.ifm2 is not None and self.ifm2_scalar is None

    @property
    def macs(self) -> int:
        """Multiply-accumulates the operation performs (convolutions and pooling windows)."""
        oh, ow, oc = self.ofm.shape
        taps = self.kernel.height * self.kernel.width
        if self.kind == CONV:
            return oh * ow * oc * taps * self.ifm.depth
        if self.kind in (DEPTHWISE, POOL):
            return oh * ow * oc * taps
        return 0


def _kernel(regs: RegisterFile) -> Kernel:
    if regs.field("KERNEL_STRIDE", "decomposition"):
        raise regs.error("KERNEL_STRIDE", "4x4 kernel decomposition (an Ethos-U65 feature) is not modelled")
    stride_x = (regs.field("KERNEL_STRIDE", "stride_x_lsb") | regs.field("KERNEL_STRIDE", "stride_x_msb") << 1) + 1
    stride_y = (regs.field("KERNEL_STRIDE", "stride_y_lsb") | regs.field("KERNEL_STRIDE", "stride_y_msb") << 1) + 1
    dilation_x = regs.field("KERNEL_STRIDE", "dilation_x") + 1
    dilation_y = regs.field("KERNEL_STRIDE", "dilation_y") + 1
    taps = []
    for name, dilation in (("KERNEL_HEIGHT_M1", dilation_y), ("KERNEL_WIDTH_M1", dilation_x)):
        extent_m1 = regs.param(name)
        if extent_m1 % dilation:
            raise regs.error(name, f"a dilated kernel extent must be a multiple of the dilation {dilation} plus one")
        taps.append(extent_m1 // dilation + 1)
    return Kernel(taps[0], taps[1], stride_y, stride_x, dilation_y, dilation_x,
                  bool(regs.field("KERNEL_STRIDE", "weight_order")))


def _output_stage(regs: RegisterFile, ofm_dtype: np.dtype) -> OutputStage:
    forced = _CLIP_TYPES[regs.field("ACTIVATION", "clip_range")]
    clip_type = forced if forced is not None else ofm_dtype
    if clip_type.kind == "u":
        act_min, act_max = regs.param("ACTIVATION_MIN"), regs.param("ACTIVATION_MAX")
    else:
        act_min, act_max = regs.signed("ACTIVATION_MIN"), regs.signed("ACTIVATION_MAX")
    return OutputStage(
        global_scale=bool(regs.field("OFM_PRECISION", "scale_mode")),
        scale=regs.raw("OFM_SCALE"),
        shift=regs.field("OFM_SCALE", "shift"),
        rounding=Rounding(regs.field("OFM_PRECISION", "round_mode")),
        zero_point=regs.signed("OFM_ZERO_POINT"),
        ofm_dtype=ofm_dtype,
        clip_type=clip_type,
        clip_forced=forced is not None,
        act_min=act_min,
        act_max=act_max,
        function=regs.field("ACTIVATION", "function"),
    )


def _streams(regs: RegisterFile, kind: str, cores: int) -> tuple[Stream, ...]:
    """The weight or scale stream of each core: core 0's in the WEIGHT/SCALE registers, core 1's in WEIGHT1/SCALE1."""
    return tuple(Stream(regs.param(f"{kind}_REGION"), regs.raw(f"{kind}{core or ''}_BASE"),
                        regs.raw(f"{kind}{core or ''}_LENGTH")) for core in range(cores))


def _ifm_shape(op_kind: str, regs: RegisterFile, ofm_shape, kernel: Kernel, padding: Padding, upscale: str):
    """The IFM extent is implied: the window the OFM needs minus the padding, halved again when upscaling."""
    oh, ow, oc = ofm_shape
    depth = regs.param("IFM_DEPTH_M1") + 1
    if op_kind == ELEMENTWISE:
        return (oh, ow, depth)
    height = (oh - 1) * kernel.stride_y + kernel.extent_h - padding.top - padding.bottom
    width = (ow - 1) * kernel.stride_x + kernel.extent_w - padding.left - padding.right
    if height < 1 or width < 1:
        raise regs.error("IFM_PAD_BOTTOM", f"the padding leaves an IFM of {height}x{width}")
    if upscale != "NONE":
        height, width = -(-height // 2), -(-width // 2)
    return (height, width, depth)


def _check_depths(regs: RegisterFile, kind: str, mode: str, ifm_depth: int, ofm_depth: int) -> None:
    if mode == "REDUCE_SUM":
        if ofm_depth != 1:
            raise regs.error("OFM_DEPTH_M1", "REDUCE_SUM sums over the IFM depth into an OFM of depth 1")
    elif kind != CONV and ifm_depth != ofm_depth:
        raise regs.error("IFM_DEPTH_M1", f"{kind} needs IFM depth = OFM depth ({ofm_depth})")


def _accumulator_bits(regs: RegisterFile) -> int:
    acc_format = regs.field("ACC_FORMAT", "format")
    if acc_format == 2:
        raise regs.error("ACC_FORMAT", "the FP_S5_10 accumulator format is not supported")
    return 40 if acc_format == 1 else 32


def _elementwise_operands(regs: RegisterFile, mode: str, ofm_shape: tuple[int, int, int]) -> dict:
    """IFM2 (tensor or scalar), operand order and ADD/SUB operand scaling of an elementwise operation."""
    fields = dict(operand_scaling=OperandScaling(
        mode=regs.field("IFM_PRECISION", "scale_mode"),
        rounding=Rounding(regs.field("IFM_PRECISION", "round_mode")),
        opa_scale=regs.raw("OPA_SCALE"),
        opa_shift=regs.field("OPA_SCALE", "shift"),
        opb_scale=regs.raw("OPB_SCALE"),
    ))
    if mode in UNARY_MODES:
        return fields
    shape = tuple(1 if regs.field("IFM2_BROADCAST", f"broadcast_{axis}") else size
                  for axis, size in zip("hwc", ofm_shape))
    fields.update(ifm2=featuremap.from_registers(regs, "IFM2", shape),
                  reversed_operands=bool(regs.field("IFM2_BROADCAST", "operand_order")))
    if regs.field("IFM2_BROADCAST", "scalar"):
        fields.update(ifm2_scalar=regs.signed("IFM2_SCALAR"))
    return fields


def decode(regs: RegisterFile, command: Command) -> BlockOperation:
    """The block operation `command` starts, as the current registers describe it."""
    kind = _KINDS[command.opcode.name]
    mode = _MODES[kind][command.param] if kind in _MODES else ""
    ofm_shape = (regs.param("OFM_HEIGHT_M1") + 1, regs.param("OFM_WIDTH_M1") + 1, regs.param("OFM_DEPTH_M1") + 1)
    if kind == ELEMENTWISE:
        kernel, padding, upscale = Kernel(1, 1, 1, 1, 1, 1, False), Padding(0, 0, 0, 0), "NONE"
    else:
        kernel = _kernel(regs)
        padding = Padding(*(regs.param(f"IFM_PAD_{side}") for side in ("TOP", "LEFT", "BOTTOM", "RIGHT")))
        upscale = UPSCALE_MODES[regs.field("IFM_UPSCALE", "mode")]
    ifm_shape = _ifm_shape(kind, regs, ofm_shape, kernel, padding, upscale)
    _check_depths(regs, kind, mode, ifm_shape[2], ofm_shape[2])
    ofm = featuremap.from_registers(regs, "OFM", ofm_shape)
    ifm = featuremap.from_registers(regs, "IFM", ifm_shape)
    cores = regs.field("PARALLEL_MODE", "mode") + 1
    if cores > 1 and mode == "REDUCE_SUM" and ifm.brick:
        raise regs.error("IFM_PRECISION", "REDUCE_SUM on two cores needs an NHWC IFM")
    extra = {}
    if kind in (CONV, DEPTHWISE):
        extra = dict(weights=_streams(regs, "WEIGHT", cores), scales=_streams(regs, "SCALE", cores))
    elif kind == ELEMENTWISE:
        extra = _elementwise_operands(regs, mode, ofm_shape)
    return BlockOperation(
        command=command,
        kind=kind,
        mode=mode,
        ifm=ifm,
        ofm=ofm,
        kernel=kernel,
        padding=padding,
        upscale=upscale,
        output=_output_stage(regs, ofm.dtype),
        block=(regs.param("OFM_BLK_HEIGHT_M1") + 1, regs.param("OFM_BLK_WIDTH_M1") + 1,
               regs.param("OFM_BLK_DEPTH_M1") + 1),
        acc_bits=_accumulator_bits(regs),
        cores=cores,
        **extra,
    )
