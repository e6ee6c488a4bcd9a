"""NPU_OP_CONV and NPU_OP_DEPTHWISE: acc = sum((ifm - ifm_zp) * w) + bias, then the per-channel output stage.

Convolutions are one int64 matrix product over all kernel taps (im2col); depthwise convolutions accumulate one
broadcast product per tap. NumPy's integer matmul is exact and avoids BLAS, whose thread start-up costs more than the
products themselves at these sizes.
"""
from __future__ import annotations

import numpy as np

from ...arch import Accelerator
from ...arch.operation import DEPTHWISE
from .. import output, scales
from ..errors import SimulatorError
from ..featuremap import read
from ..memory import Memory
from ..operation import BlockOperation
from ..regfile import RegisterFile
from ..weights import WeightFormatError, WeightLayout, decode_weights
from .window import padded_input, taps


def _weights(op: BlockOperation, regs: RegisterFile, memory: Memory, accelerator: Accelerator) -> np.ndarray:
    depthwise = op.kind == DEPTHWISE
    if depthwise and op.kernel.part_kernel:
        raise regs.error("KERNEL_STRIDE", "depthwise convolutions only support depth-first weight order")
    if op.ifm.bits == 32:
        raise regs.error("IFM_PRECISION", "convolutions need an 8- or 16-bit IFM")
    layout = WeightLayout(
        ofm_depth=op.ofm.depth,
        kernel_height=op.kernel.height,
        kernel_width=op.kernel.width,
        ifm_depth=1 if depthwise else op.ifm.depth,
        ofm_block_depth=op.block[2],
        ofm_ublock_depth=accelerator.ofm_ublock_depth,
        ifm_ublock_depth=accelerator.ifm_ublock_depth,
        depthwise=depthwise,
        part_kernel=op.kernel.part_kernel,
        ifm_bits=op.ifm.bits,
        dilation_y=op.kernel.dilation_y,
        dilation_x=op.kernel.dilation_x,
    )
    stream = op.weights
    encoded = memory.read_bytes(stream.region, stream.base, stream.length,
                                f"{regs.where()}: weight stream at {regs.describe('WEIGHT_BASE')}")
    try:
        return decode_weights(encoded, layout)
    except WeightFormatError as err:
        raise SimulatorError(f"{regs.where()}: weight stream at {regs.describe('WEIGHT_BASE')}, "
                             f"{regs.describe('WEIGHT_LENGTH')}: {err}") from None


def _channel_scales(op: BlockOperation, regs: RegisterFile, memory: Memory) -> scales.ChannelScales:
    if op.output.global_scale:
        raise regs.error("OFM_PRECISION", "convolutions need per-channel scaling (a scale stream)")
    stream = op.scales
    data = memory.read_bytes(stream.region, stream.base, stream.length,
                             f"{regs.where()}: scale stream at {regs.describe('SCALE_BASE')}")
    try:
        return scales.parse_records(data, op.ofm.depth)
    except ValueError as err:
        raise regs.error("SCALE_LENGTH", str(err)) from None


def execute(op: BlockOperation, regs: RegisterFile, memory: Memory, accelerator: Accelerator) -> np.ndarray:
    weights = _weights(op, regs, memory, accelerator).astype(np.int64)
    channel = _channel_scales(op, regs, memory)
    ifm = read(memory, op.ifm).astype(np.int64) - op.ifm.zero_point
    window = padded_input(ifm, op)
    oh, ow, oc = op.ofm.shape
    if op.kind == DEPTHWISE:
        acc = np.zeros((oh, ow, oc), np.int64)
        for ky, kx, view in taps(window, op):
            acc += view * weights[:, ky, kx, 0]
    else:
        columns = np.concatenate([view for _, _, view in taps(window, op)], axis=2)
        acc = (columns.reshape(oh * ow, -1) @ weights.reshape(oc, -1).T).reshape(oh, ow, oc)
    acc += channel.bias
    limit = 1 << (op.acc_bits - 1)
    if acc.size and (int(acc.min()) < -limit or int(acc.max()) >= limit):
        raise regs.error("ACC_FORMAT", f"the accumulators overflow {op.acc_bits} bits")
    return output.finish(acc, op.output, (channel.multiplier, channel.shift), regs, memory, accelerator)
