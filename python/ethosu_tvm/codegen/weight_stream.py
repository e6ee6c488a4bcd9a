"""A convolution's weight and scale/bias streams as code generation stores them in the constant pool.

The weight order (traversal) is chosen as Vela's weight encoder chooses it and the weights are encoded through Vela's
API. The cost model counts the streams at these stored lengths: compression matters, since flash traffic bounds many
layers and every stripe of a cascade reads the stream again. A two-core U65-512 takes a weight and a scale/bias
stream per core (`core_shares`); each kind's streams are stored back to back.
"""
from __future__ import annotations

import collections
import contextlib
import functools
import io

import numpy as np
from ethosu.vela import api as vapi

from ..arch import from_vela, round_up
from ..legalize.ops import Conv2D, DepthwiseConv2D
from . import weight_encoder

SCALE_BIAS_BYTES = 10  # per output channel


def block_traversal(kernel: tuple[int, int], ifm_depth: int, ifm_bits: int = 8) -> vapi.NpuBlockTraversal:
    """The weight order of a (non-depthwise) convolution with this kernel (height, width) and IFM, chosen as Vela's
    weight encoder chooses it: part-kernel-first for IFMs of depth 8 or less, and whenever it keeps at least as
    many multipliers busy as depth-first. Depth-first consumes the IFM depth in steps of 32 channels (16 for 16-bit
    IFMs); part-kernel-first consumes 8 channels times 4 kernel taps (2 for 16-bit IFMs)."""
    if ifm_depth <= 8:
        return vapi.NpuBlockTraversal.PART_KERNEL_FIRST
    taps = kernel[0] * kernel[1]
    depth_first = ifm_depth / round_up(ifm_depth, 32 if ifm_bits == 8 else 16)
    part_kernel = (ifm_depth / round_up(ifm_depth, 8)) * (taps / round_up(taps, 4 if ifm_bits == 8 else 2))
    if part_kernel >= depth_first:
        return vapi.NpuBlockTraversal.PART_KERNEL_FIRST
    return vapi.NpuBlockTraversal.DEPTH_FIRST


def convolution_traversal(op: Conv2D) -> vapi.NpuBlockTraversal:
    """The weight order of a convolution primitive: fixed per primitive (it depends on the kernel and the whole IFM
    depth, which every stripe reads), so all its stripes can share one weight stream. Depthwise weights are only
    ever depth-first."""
    if isinstance(op, DepthwiseConv2D):
        return vapi.NpuBlockTraversal.DEPTH_FIRST
    return block_traversal(op.kernel, op.ifm.tensor.shape[3], _dtype_bits(op.ifm.tensor.dtype))


def _dtype_bits(dtype: str) -> int:
    return vapi.NpuDataType[dtype.upper()].size_in_bits()


def _encode_request(op: Conv2D, channels: slice, depth: int, accelerator: vapi.NpuAccelerator) -> tuple:
    """The arguments of Vela's `npu_encode_weights` for the weight stream of `op`'s output `channels`, encoded for
    OFM blocks of `depth` channels in the primitive's traversal."""
    centred = op.weights[channels].astype(np.int16) - np.int16(op.weight_zero_point)
    return (accelerator, centred, (op.dilation[1], op.dilation[0]), _dtype_bits(op.ifm.tensor.dtype), depth,
            isinstance(op, DepthwiseConv2D), convolution_traversal(op))


def core_channels(start: int, stop: int, cores: int) -> list[slice]:
    """Each core's output channels of start..stop−1, as Vela 5.2 splits an operation over the cores: core c
    computes every `cores`-th channel from start + c; a core left without channels gets no streams."""
    return [slice(start + core, stop, cores) for core in range(min(cores, stop - start))]


def core_shares(start: int, stop: int, depth: int, cores: int) -> list[tuple[slice, int]]:
    """Each core's output channels (`core_channels`) and its OFM block depth: its share of each block's `depth`
    channels, (depth + cores − 1 − c) // cores."""
    return [(channels, (depth + cores - 1 - core) // cores)
            for core, channels in enumerate(core_channels(start, stop, cores))]


# (op, start, stop, depth, accelerator) → `encoded_weights`, least recently used first
_STREAMS: collections.OrderedDict[tuple, tuple[bytes, ...]] = collections.OrderedDict()
_REMEMBERED = 1 << 10


def encoded_weights(op: Conv2D, start: int, stop: int, depth: int,
                    accelerator: vapi.NpuAccelerator) -> tuple[bytes, ...]:
    """The weight streams of `op`'s output channels start..stop−1 encoded for OFM blocks of `depth` channels, one
    stream per core (`core_shares`): what code generation stores in flash, and what the cost model counts.
    Remembered for the streams of a whole network: code generation costs a convolution's streams
    (`encoded_stream_bytes`) just before it stores them, and builds every operation again once it has chosen the
    weight buffers (a memory smaller than the network's convolutions would keep none of them for that second
    pass)."""
    return encoded_weights_at(op, start, stop, (depth,), accelerator)[0]


def encoded_weights_at(op: Conv2D, start: int, stop: int, depths, accelerator: vapi.NpuAccelerator
                       ) -> list[tuple[bytes, ...]]:
    """`encoded_weights` at each of `depths`; those not remembered are encoded in one batch, on two cores when it
    is large (`weight_encoder`)."""
    keys = [(op, start, stop, depth, accelerator) for depth in depths]
    missing = [key for key in dict.fromkeys(keys) if key not in _STREAMS]
    cores = from_vela(accelerator).cores
    requests = [[_encode_request(op, channels, share, accelerator)
                 for channels, share in core_shares(start, stop, key[3], cores)] for key in missing]
    streams = iter(weight_encoder.encode_all([request for each in requests for request in each]))
    found = {key: tuple(next(streams) for _ in each) for key, each in zip(missing, requests)}
    for key in keys:
        if key in found:
            _STREAMS[key] = found[key]
        else:
            found[key] = _STREAMS[key]
            _STREAMS.move_to_end(key)
    while len(_STREAMS) > _REMEMBERED:
        _STREAMS.popitem(last=False)
    return [found[key] for key in keys]


@functools.lru_cache(maxsize=1 << 10)
def encoded_scale_bias(op: Conv2D, start: int, stop: int, accelerator: vapi.NpuAccelerator) -> tuple[bytes, ...]:
    """The scale/bias streams of output channels start..stop−1, one per core (`core_channels`; unlike the weight
    streams, the same for every block depth), remembered as the weight streams are: Vela's API encodes them channel
    by channel, in Python."""
    count = op.weights.shape[0]
    scale = np.broadcast_to(op.requant.scale, (count,))
    shift = np.broadcast_to(op.requant.shift, (count,))
    with contextlib.redirect_stdout(io.StringIO()):  # Vela's first call announces its default configuration
        return tuple(b"".join(bytes(vapi.npu_encode_bias(np.int64(b), int(m), int(n)))
                              for b, m, n in zip(op.bias[selected], scale[selected], shift[selected]))
                     for selected in core_channels(start, stop, from_vela(accelerator).cores))


@functools.lru_cache(maxsize=1 << 12)
def encoded_stream_bytes(op: Conv2D, start: int, stop: int, depth: int,
                         accelerator: vapi.NpuAccelerator) -> tuple[int, int]:
    """The bytes of `op`'s weight streams (for blocks of `depth` channels) and scale/bias streams of output
    channels start..stop−1, as the constant pool stores them."""
    return (sum(round_up(len(stream)) for stream in encoded_weights(op, start, stop, depth, accelerator)),
            sum(round_up(SCALE_BIAS_BYTES * len(range(stop)[channels]))
                for channels in core_channels(start, stop, from_vela(accelerator).cores)))


def packed(streams: list[bytes]) -> tuple[bytes, list[tuple[int, int]]]:
    """The streams back to back, each but the last padded to the NPU's alignment (the pool pads the last), and
    each one's (offset, padded length) in them."""
    offsets = [0]
    for stream in streams:
        offsets.append(offsets[-1] + round_up(len(stream)))
    data = b"".join(stream.ljust(round_up(len(stream)), b"\0") for stream in streams[:-1]) + streams[-1]
    return data, [(offset, end - offset) for offset, end in zip(offsets, offsets[1:])]
