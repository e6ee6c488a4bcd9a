"""NPU_OP_CONV and NPU_OP_DEPTHWISE: acc = sum((ifm - ifm_zp) * w) + bias, then the per-channel output stage.

Convolutions are one int64 matrix product over all kernel taps (im2col); depthwise convolutions accumulate one
broadcast product per tap. NumPy's integer matmul is exact and avoids BLAS, whose thread start-up costs more than the
products themselves at these sizes.
"""
from __future__ import annotations

import functools
from typing import Callable

import numpy as np

from ...arch import Accelerator
from ...arch.operation import DEPTHWISE
from .. import output, scales
from ..errors import SimulatorError
from ..featuremap import read
from ..memory import Memory
from ..operation import BlockOperation
from ..regfile import RegisterFile
from ..weights import Decoding, WeightFormatError, WeightLayout, decoding
from .window import padded_input, taps


def _core_depths(op: BlockOperation, core: int) -> tuple[int, int]:
    """(OFM channels, OFM block depth) of one core: the cores take the OFM channels in turn (core c every
    `op.cores`-th channel from c), each a share of the block depth."""
    return len(range(core, op.ofm.depth, op.cores)), (op.block[2] + op.cores - 1 - core) // op.cores


def _decodings(op: BlockOperation, regs: RegisterFile, memory: Memory, accelerator: Accelerator):
    """Each core's weight stream, read and its decoding started: (core, decoding, how errors name the stream)."""
    depthwise = op.kind == DEPTHWISE
    if depthwise and op.kernel.part_kernel:
        raise regs.error("KERNEL_STRIDE", "depthwise convolutions only support depth-first weight order")
    if op.ifm.bits == 32:
        raise regs.error("IFM_PRECISION", "convolutions need an 8- or 16-bit IFM")
    for core, stream in enumerate(op.weights):
        channels, block_depth = _core_depths(op, core)
        if not channels:
            continue
        layout = WeightLayout(ofm_depth=channels, kernel_height=op.kernel.height, kernel_width=op.kernel.width,
                              ifm_depth=1 if depthwise else op.ifm.depth, ofm_block_depth=block_depth,
                              ofm_ublock_depth=accelerator.ofm_ublock_depth,
                              ifm_ublock_depth=accelerator.ifm_ublock_depth, depthwise=depthwise,
                              part_kernel=op.kernel.part_kernel, ifm_bits=op.ifm.bits,
                              dilation_y=op.kernel.dilation_y, dilation_x=op.kernel.dilation_x)
        base, length = f"WEIGHT{core or ''}_BASE", f"WEIGHT{core or ''}_LENGTH"
        encoded = memory.read_bytes(stream.region, stream.base, stream.length,
                                    f"{regs.where()}: weight stream at {regs.describe(base)}")
        yield core, decoding(encoded, layout), f"{regs.where()}: weight stream at {regs.describe(base)}, " + \
            regs.describe(length)


def _decoded(stream: Decoding, name: str) -> np.ndarray:
    try:
        return stream.weights
    except WeightFormatError as err:
        raise SimulatorError(f"{name}: {err}") from None


def _weights(op: BlockOperation, regs: RegisterFile, memory: Memory, accelerator: Accelerator) -> np.ndarray:
    """OHWI weights, assembled from each core's stream."""
    weights = np.zeros((op.ofm.depth, op.kernel.height, op.kernel.width, 1 if op.kind == DEPTHWISE else op.ifm.depth),
                       np.int16)
    for core, stream, name in _decodings(op, regs, memory, accelerator):
        weights[core::op.cores] = _decoded(stream, name)
    return weights


def _channel_scales(op: BlockOperation, regs: RegisterFile, memory: Memory) -> scales.ChannelScales:
    """Per-channel bias, multiplier and shift, assembled from each core's scale stream."""
    if op.output.global_scale:
        raise regs.error("OFM_PRECISION", "convolutions need per-channel scaling (a scale stream)")
    parts = []
    for core, stream in enumerate(op.scales):
        channels = _core_depths(op, core)[0]
        base, length = f"SCALE{core or ''}_BASE", f"SCALE{core or ''}_LENGTH"
        data = memory.read_bytes(stream.region, stream.base, stream.length,
                                 f"{regs.where()}: scale stream at {regs.describe(base)}")
        try:
            parts.append(scales.parse_records(data, channels))
        except ValueError as err:
            raise regs.error(length, str(err)) from None
    return scales.interleave(parts)


def check(op: BlockOperation, regs: RegisterFile, memory: Memory, accelerator: Accelerator) -> Callable[[], None]:
    """`execute`'s checks in its order, without its arithmetic: the weight streams decoded against their layout,
    the scale streams parsed, the IFM's bounds and the output stage's rules. The weight streams decode meanwhile
    (`sim.mlw`): the function returned waits for them, raising what `execute` would have raised at them, and so
    does a later check's failure here, since theirs comes first."""
    streams = []
    try:
        for stream in _decodings(op, regs, memory, accelerator):
            streams.append(stream)
        _channel_scales(op, regs, memory)
        read(memory, op.ifm)
        output.check(op.output, regs)
    except Exception:
        _wait(streams)
        raise
    return functools.partial(_wait, streams)


def _wait(streams) -> None:
    for _, stream, name in streams:
        _decoded(stream, name)


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
