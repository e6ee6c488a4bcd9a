"""Stripes of NPU primitives → Vela API operations, with weight and scale/bias streams encoded into the constant pool.

Each feature map is the box of its stripe, addressed in its buffer by NHWC strides; a box that wraps around a rolling
buffer is split over the NPU's tiles (up to two rows and two columns of them). The NPU works on 3-D feature maps
(height, width, depth), so the batch of 1 is dropped. Block configs and the weight traversal of convolutions come
from the cost model (`codegen.block_config`, `codegen.weight_stream`). The weights and scale/bias streams
of a primitive are encoded once per output-channel range, traversal and block depth, and shared by its stripes.
A convolution that would fetch its streams from flash for many OFM blocks can get them DMAed into an SRAM weight
buffer of the memory plan first, with the block config that suits weights in SRAM; which convolutions do is decided
for the whole sequence by the cost model (`cascader.buffering`).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
from ethosu.vela import api as vapi
from ethosu.vela.operation import ExplicitScaling

from ..arch import LUT_REGION, MAX_EXTENT, from_vela
from ..arch.system import CONSTANTS_REGION, DEFAULT_SYSTEM, System
from ..cascader.buffering import Choice
from ..cascader.graph import WeightBuffer
from ..legalize.ops import (
    BinaryElementwise,
    Concatenate,
    Conv2D,
    DepthwiseConv2D,
    Identity,
    Operand,
    Pad,
    Padding,
    Pooling,
    Slice,
    Softmax,
    Transpose,
    TransposeConv2D,
    Upscale,
    average_as_depthwise,
)
from . import block_config
from .memory import ConstantPool, Placement, softmax_scratch, weight_buffer
from .npu_operands import (POOLING_OPS, activation, feature_map, padding, scalar_feature_map, scalar_value,
                           window_strides)
from .operation_cost import buffering_cost, estimate_cycles
from .softmax import SoftmaxSequence, row_segments
from .tir_regions import Interval
from .tir_to_npu import FeatureMapRegion, Stripe
from .vela_calls import CodegenError, describe, vela_call
from .weight_stream import (convolution_traversal, encoded_scale_bias, encoded_stream_bytes, encoded_weights,
                            packed)

_ROUNDING = {"TFL": vapi.NpuRoundingMode.TFL, "NATURAL": vapi.NpuRoundingMode.NATURAL,
             "TRUNCATE": vapi.NpuRoundingMode.TRUNCATE}
_ELEMENTWISE = {"ADD": vapi.NpuElementWiseOp.ADD, "SUB": vapi.NpuElementWiseOp.SUB,
                "MUL": vapi.NpuElementWiseOp.MUL, "MIN": vapi.NpuElementWiseOp.MIN,
                "MAX": vapi.NpuElementWiseOp.MAX}
_FUNCTIONS = {"TANH": vapi.NpuActivationOp.TANH, "SIGMOID": vapi.NpuActivationOp.SIGMOID}


def _blocks(extent: int) -> list[Interval]:
    """0 to `extent` in intervals of at most MAX_EXTENT, the largest an NPU operation takes."""
    return [Interval(start, min(start + MAX_EXTENT, extent)) for start in range(0, extent, MAX_EXTENT)]


def _require_block_config(npu_op: vapi.NpuBlockOperation, what: str) -> vapi.NpuBlockOperation:
    if npu_op.block_config is None:
        raise CodegenError(f"{what}: no block configuration fits in this accelerator's SHRAM")
    return npu_op


def buffering_key(stripe: Stripe) -> tuple[int, int, int]:
    """How a stripe is named in a set of stripes that buffer their weights: (primitive index, first OFM row, first
    OFM channel; a convolution may be split along its depth, `codegen.depth_split`)."""
    return stripe.op, stripe.ofm.box[1].start, stripe.ofm.box[3].start


def choose_block_config(op: vapi.NpuBlockOperation, accelerator, system: System, what: str,
                        depth: int | None = None) -> vapi.NpuShape3D | None:
    """The valid block config with the fewest estimated cycles in `system`, of block depth `depth` when there is
    one (the stripes of a convolution then share one weight stream); None when no block fits in SHRAM."""
    return vela_call(what, block_config.choose_block_config, op, accelerator, depth, system)


class OperationBuilder:
    """Builds the Vela operations of one NpuGraph's stripes, appending its constants to a shared pool."""

    def __init__(self, accelerator, placements: dict[str, Placement], pool: ConstantPool,
                 system: System = DEFAULT_SYSTEM, buffered: frozenset[tuple[int, int, int]] = frozenset(),
                 frugal: frozenset[tuple[int, int, int]] = frozenset()):
        self.accelerator = accelerator
        # `buffering_key`s of the stripes that buffer their weights, and of those that stream them frugally
        # (`cascader.buffering`)
        self.buffered = buffered
        self.frugal = frugal
        # per stripe built with a block operation: its options for `cascader.buffering.choose_buffering`
        self.choices: list[Choice] = []
        self.stripes: list[Stripe] = []
        self.system = system
        self.placements = placements
        self.pool = pool
        # (primitive index, output channels, traversal) → {block depth: (weights, scale/bias) per core} in the pool
        self._encoded: dict[tuple[int, Interval, vapi.NpuBlockTraversal],
                            dict[int, tuple[list[vapi.NpuAddressRange], list[vapi.NpuAddressRange]]]] = {}
        self._constants: dict[int, Placement] = {}  # primitive index → its constant IFM2 in the pool
        # weight buffer name → bytes, for every convolution stripe that buffering pays for (placed or not)
        self.weight_buffers: dict[str, int] = {}

    def fm(self, operand: Operand, region: FeatureMapRegion) -> vapi.NpuFeatureMap:
        return feature_map(operand, region, self.placements[region.tensor])

    def constant(self, data: bytes) -> vapi.NpuAddressRange:
        """A constant in the pool (which stores each distinct one once)."""
        offset, length = self.pool.add(data)
        return vapi.NpuAddressRange(region=CONSTANTS_REGION, address=offset, length=length)

    def build(self, op, stripe: Stripe) -> list[vapi.NpuOperation]:
        """The Vela operations of one stripe of a primitive (the last one produces its OFM)."""
        what = describe(op)
        if isinstance(op, Conv2D):
            return self._convolution_stripe(op, stripe, what)
        npu_ops = self._build(op, stripe, what)
        kernels = [npu_op for npu_op in npu_ops if isinstance(npu_op, vapi.NpuBlockOperation)]
        if kernels:
            cost = vela_call(what, estimate_cycles, kernels[-1], self.accelerator, system=self.system)
            self.choices.append(Choice(cost.cycles, cost.overlap))
            self.stripes.append(stripe)
        return npu_ops

    def _build(self, op, stripe: Stripe, what: str) -> list[vapi.NpuOperation]:
        if isinstance(op, Pooling):
            return [self.pooling(op, stripe, what)]
        if isinstance(op, BinaryElementwise):
            return [self.elementwise(op, stripe, what)]
        if isinstance(op, Identity) and op.lut is not None:
            return self.table_lookup(op, stripe, what)
        if isinstance(op, Identity) and op.function:
            # A 1x1 AVERAGE pool (global scaling, which MAX lacks): Vela's API derives the function's input scaling
            # from the IFM's scale as TFLite does
            activation = vapi.NpuActivation(_FUNCTIONS[op.function])
            return [self.copy(self.fm(op.ifm, stripe.ifms[0]), op.ofm, stripe, what, activation,
                              kind=vapi.NpuPoolingOp.AVERAGE)]
        if isinstance(op, Identity):
            return [self.copy(self.fm(op.ifm, stripe.ifms[0]), op.ofm, stripe, what)]
        if isinstance(op, Slice):
            return [self.copy(self.fm(op.ifm, stripe.ifms[0]), op.ofm, stripe, what, strides=op.strides)]
        if isinstance(op, Upscale):
            return [self.copy(self.fm(op.ifm, stripe.ifms[0]), op.ofm, stripe, what, upscale=True)]
        if isinstance(op, Transpose):
            return [self.transposed(op, stripe, what, a, b) for a in _blocks(op.view[0]) for b in _blocks(op.view[1])]
        if isinstance(op, Pad):
            return [self.copy(self.fm(op.ifm, stripe.ifms[0]), op.ofm, stripe, what) if stripe.ifms
                    else self.fill(op, stripe, what)]
        if isinstance(op, Concatenate):  # this stripe copies the one input it reads
            ifm = next(o for o in op.inputs if o.tensor.name == stripe.ifms[0].tensor)
            return [self.copy(self.fm(ifm, stripe.ifms[0]), op.ofm, stripe, what)]
        if isinstance(op, Softmax):
            return self.softmax(op, stripe, what)
        raise CodegenError(f"{what}: no NPU code generation for {type(op).__name__}")

    def _block_op(self, npu_op: vapi.NpuBlockOperation, op, stripe: Stripe, what: str,
                  depth: int | None = None) -> vapi.NpuBlockOperation:
        self._operands(npu_op, op, stripe)
        return self._with_block_config(npu_op, what, depth)

    def _operands(self, npu_op: vapi.NpuBlockOperation, op, stripe: Stripe) -> None:
        npu_op.ifm = self.fm(op.ifm, stripe.ifms[0])
        npu_op.ofm = self.fm(op.ofm, stripe.ofm)
        npu_op.activation = activation(op.clamp, op.ofm)

    def _with_block_config(self, npu_op: vapi.NpuBlockOperation, what: str,
                           depth: int | None = None) -> vapi.NpuBlockOperation:
        npu_op.block_config = choose_block_config(npu_op, self.accelerator, self.system, what, depth)
        return _require_block_config(npu_op, what)

    def convolution(self, op: Conv2D, stripe: Stripe, what: str, region: int = CONSTANTS_REGION,
                    encode: bool = True, frugal: bool = False) -> vapi.NpuBlockOperation:
        """The stripe's convolution, its block config chosen for weights in `region` (the constants, or a weight
        buffer in scratch; `frugal`: the constants, fetched fewest times) and its streams encoded into the pool
        (else only their lengths set, in `region`)."""
        depthwise = isinstance(op, DepthwiseConv2D)
        npu_op = vapi.NpuConvDepthWiseOperation() if depthwise else vapi.NpuConv2DOperation()
        kernel_h, kernel_w = op.kernel
        stride_y, stride_x = window_strides(op.strides, stripe.ofm)
        npu_op.kernel = vapi.NpuKernel(kernel_w, kernel_h, stride_x, stride_y, op.dilation[1], op.dilation[0])
        npu_op.padding = padding(stripe.ifms[0])
        if isinstance(op, TransposeConv2D):
            npu_op.ifm_upscale = vapi.NpuResamplingMode.TRANSPOSE
        npu_op.rounding_mode = _ROUNDING[op.requant.rounding]
        if not depthwise:
            npu_op.block_traversal = convolution_traversal(op)
        # Weights and biases are encoded after the block config: the weight stream depends on its depth.
        npu_op.weights = [vapi.NpuAddressRange(CONSTANTS_REGION, 0, 0)]
        npu_op.biases = [vapi.NpuAddressRange(CONSTANTS_REGION, 0, 0)]
        channels = stripe.ofm.box[3]
        preferred = next(iter(self._encodings(op, stripe)), None)
        if region == CONSTANTS_REGION and not frugal:
            self._block_op(npu_op, op, stripe, what, depth=preferred)
        else:
            self._operands(npu_op, op, stripe)
            if frugal:
                npu_op.block_config = vela_call(what, block_config.frugal_block_config, npu_op, self.accelerator,
                                                preferred, self.system)
            else:
                npu_op.block_config = vela_call(what, block_config.buffered_block_config, npu_op, op, channels.start,
                                                channels.stop, self.accelerator, preferred, self.system)
            _require_block_config(npu_op, what)
        weights, biases = vela_call(what, encoded_stream_bytes, op, channels.start, channels.stop,
                                    npu_op.block_config.depth, self.accelerator)
        npu_op.weights = [vapi.NpuAddressRange(region, 0, weights)]
        npu_op.biases = [vapi.NpuAddressRange(region, 0, biases)]
        return self._encoded_streams(npu_op, op, stripe, what) if encode else npu_op

    def _encodings(self, op: Conv2D,
                   stripe: Stripe) -> dict[int, tuple[list[vapi.NpuAddressRange], list[vapi.NpuAddressRange]]]:
        """Block depth → the streams of the stripe's output channels already in the pool (in the primitive's
        traversal, fixed per primitive, so all its stripes can share one weight stream)."""
        return self._encoded.setdefault((stripe.op, stripe.ofm.box[3], convolution_traversal(op)), {})

    def _encoded_streams(self, npu_op: vapi.NpuBlockOperation, op: Conv2D, stripe: Stripe,
                         what: str) -> vapi.NpuBlockOperation:
        """The convolution with its streams, encoded for its block depth, in the pool (once per depth)."""
        encoded = self._encodings(op, stripe)
        depth = npu_op.block_config.depth
        if depth not in encoded:
            encoded[depth] = self._encode(op, stripe.ofm.box[3], depth, what)
        npu_op.weights, npu_op.biases = map(list, encoded[depth])
        return npu_op

    def _convolution_stripe(self, op: Conv2D, stripe: Stripe, what: str) -> list[vapi.NpuOperation]:
        """A convolution stripe: with a DMA of its streams into its weight buffer first when it is in `buffered`
        and the memory plan placed the buffer (`_buffered`), else reading them from flash, with the frugal block
        config when it is in `frugal`. Its options, streaming (both ways) or buffered, join `choices`. All are
        chosen before any is encoded, so that none sways another's block depth."""
        copy = self.convolution(op, stripe, what, self.system.cache_region, encode=False)
        streamed = self.convolution(op, stripe, what, encode=False)
        frugal = self.convolution(op, stripe, what, encode=False, frugal=True)
        cost = vela_call(what, buffering_cost, streamed, copy, self.accelerator, self.system)
        option = None
        if frugal.block_config != streamed.block_config:
            frugal_cost = vela_call(what, estimate_cycles, frugal, self.accelerator, system=self.system)
            option = (frugal_cost.cycles, frugal_cost.overlap)
        self.choices.append(Choice(cost.streamed, cost.overlap, WeightBuffer(cost.nbytes, cost.dma, cost.buffered),
                                   option))
        self.stripes.append(stripe)
        if buffering_key(stripe) in self.buffered:
            name = weight_buffer(stripe)
            self.weight_buffers[name] = cost.nbytes
            if name in self.placements:
                return self._buffered(self._encoded_streams(copy, op, stripe, what), stripe, what)
        if buffering_key(stripe) in self.frugal:
            return [self._encoded_streams(frugal, op, stripe, what)]
        return [self._encoded_streams(streamed, op, stripe, what)]  # it streams (no room for its buffer, if any)

    def _buffered(self, npu_op: vapi.NpuBlockOperation, stripe: Stripe, what: str) -> list[vapi.NpuOperation]:
        """A DMA of the convolution's weight and scale/bias streams (adjacent in the pool) into its SRAM weight
        buffer, then the convolution reading the copy. Vela's API makes the operation wait for the DMA, and the
        DMA for the operations still reading the memory it overwrites (none: see `memory.plan`)."""
        weights, biases = npu_op.weights, npu_op.biases
        first, last = weights[0], biases[-1]
        if biases[0].address != weights[-1].address + weights[-1].length:
            raise CodegenError(f"{what}: its weight and scale/bias streams are not adjacent in the constant pool")
        buffer = self.placements[weight_buffer(stripe)]
        source = vapi.NpuAddressRange(CONSTANTS_REGION, first.address, last.address + last.length - first.address)
        copy = vapi.NpuAddressRange(buffer.region, buffer.offset, source.length)
        npu_op.weights, npu_op.biases = ([vapi.NpuAddressRange(buffer.region, buffer.offset + r.address - first.address,
                                                               r.length) for r in ranges]
                                         for ranges in (weights, biases))
        return [vapi.NpuDmaOperation(source, copy), npu_op]

    def _encode(self, op: Conv2D, channels: Interval, depth: int, what: str) -> tuple[list[vapi.NpuAddressRange], ...]:
        """The weight streams (in the primitive's traversal, for blocks of `depth` output channels) and scale/bias
        streams of `channels`, one of each per core, each kind's streams stored back to back."""
        streams = vela_call(what, encoded_weights, op, channels.start, channels.stop, depth, self.accelerator)
        scale_bias = vela_call(what, encoded_scale_bias, op, channels.start, channels.stop, self.accelerator)
        return self._stored(list(streams)), self._stored(list(scale_bias))

    def _stored(self, streams: list[bytes]) -> list[vapi.NpuAddressRange]:
        """Streams stored back to back in the pool, as the ranges of each."""
        data, ranges = packed(streams)
        start = self.constant(data).address
        return [vapi.NpuAddressRange(CONSTANTS_REGION, start + offset, length) for offset, length in ranges]

    def pooling(self, op: Pooling, stripe: Stripe, what: str) -> vapi.NpuOperation:
        kind = POOLING_OPS[op.pooling_type]
        npu_op = vapi.NpuPoolingOperation(kind)
        kernel_h, kernel_w = op.pool_shape
        stride_y, stride_x = window_strides(op.strides, stripe.ofm)
        npu_op.kernel = vapi.NpuKernel(kernel_w, kernel_h, stride_x, stride_y)
        npu_op.padding = padding(stripe.ifms[0])
        npu_op.rounding_mode = vapi.NpuRoundingMode.TFL
        npu_op.ifm, npu_op.ofm = self.fm(op.ifm, stripe.ifms[0]), self.fm(op.ofm, stripe.ofm)
        npu_op.activation = activation(op.clamp, op.ofm)
        if op.upscale:
            npu_op.ifm_upscale = vapi.NpuResamplingMode.NEAREST
        padded = stripe.ifms[0].padding != Padding()
        if kind == vapi.NpuPoolingOp.AVERAGE and padded:
            # The NPU divides a padded window by its valid taps itself; the API would emit per-channel scale mode
            # without a scale stream, Vela's compiler emits global mode with OFM_SCALE 1 (Vela's explicit scaling).
            npu_op.rescale = ExplicitScaling(False, shift=[0], multiplier=[1])
        if op.requant is not None:
            npu_op.rescale = ExplicitScaling(False, shift=[int(op.requant.shift[0])],
                                             multiplier=[int(op.requant.scale[0])])
        npu_op.block_config = choose_block_config(npu_op, self.accelerator, self.system, what)
        if npu_op.block_config is None and kind == vapi.NpuPoolingOp.AVERAGE and not padded and not op.upscale:
            return self.convolution(average_as_depthwise(op), stripe, what)
        return self._with_block_config(npu_op, what)

    def elementwise(self, op: BinaryElementwise, stripe: Stripe, what: str) -> vapi.NpuOperation:
        """The NPU broadcasts only IFM2: when the first operand is the broadcast one, swap and say so (a constant
        operand, otherwise IFM2, too)."""
        npu_op = vapi.NpuElementWiseOperation(_ELEMENTWISE[op.operator])
        npu_op.rounding_mode = vapi.NpuRoundingMode.TFL
        if op.operator == "MUL" or op.operator in ("ADD", "SUB") and op.ifm_requant is None:
            npu_op.rescale = (int(op.requant.scale[0]), int(op.requant.shift[0]))
        if op.ifm2_scalar is not None:
            npu_op.ifm = self.fm(op.ifm, stripe.ifms[0])
            npu_op.ifm2, npu_op.ifm2_scalar = scalar_feature_map(op.ifm2, npu_op.ifm), scalar_value(op)
            npu_op.reversed_operands = op.reversed_operands
        elif op.ifm2_constant is not None:
            npu_op.ifm, npu_op.ifm2 = self.fm(op.ifm, stripe.ifms[0]), self.constant_fm(op, stripe)
            npu_op.reversed_operands = op.reversed_operands
            if stripe.ifms[0].shape != stripe.ofm.shape:  # the feature map broadcasts: the constant is the IFM
                npu_op.ifm, npu_op.ifm2 = npu_op.ifm2, npu_op.ifm
                npu_op.reversed_operands = not op.reversed_operands
        else:
            first, second = (op.ifm, stripe.ifms[0]), (op.ifm2, stripe.ifms[1])
            if first[1].shape != stripe.ofm.shape:
                first, second = second, first
                npu_op.reversed_operands = True
            npu_op.ifm = self.fm(*first)
            npu_op.ifm2 = self.fm(*second)
        npu_op.ofm = self.fm(op.ofm, stripe.ofm)
        npu_op.activation = activation(op.clamp, op.ofm)
        npu_op.block_config = choose_block_config(npu_op, self.accelerator, self.system, what)
        return npu_op

    def constant_fm(self, op: BinaryElementwise, stripe: Stripe) -> vapi.NpuFeatureMap:
        """A constant operand, stored whole in the constant pool (once per primitive), read at the OFM stripe's box
        with its broadcast axes at 0."""
        values = op.ifm2_constant
        if stripe.op not in self._constants:
            offset, _ = self.pool.add(values.tobytes())
            self._constants[stripe.op] = Placement(CONSTANTS_REGION, offset)
        box = tuple(Interval(0, 1) if size == 1 else interval for size, interval in zip(values.shape, stripe.ofm.box))
        region = FeatureMapRegion(op.ifm2.tensor.name, str(values.dtype), values.shape, (False,) * 4, box)
        return feature_map(op.ifm2, region, self._constants[stripe.op])

    def table_lookup(self, op: Identity, stripe: Stripe, what: str) -> list[vapi.NpuOperation]:
        """DMA the 256-byte table into LUT slot 0 of SHRAM, then a copy whose activation is the lookup: with zero
        points 0 and no scaling, the table index is the raw input value + 128."""
        table = self.constant(op.lut.astype(np.int8).tobytes())
        shram = vapi.NpuAddressRange(LUT_REGION, from_vela(self.accelerator).lut_base, table.length)
        load = vapi.NpuDmaOperation(table, shram)
        activation = vapi.NpuActivation(vapi.NpuActivationOp.TABLE_LOOKUP)
        activation.lookup_table_index = 0
        return [load, self.copy(self.fm(op.ifm, stripe.ifms[0]), op.ofm, stripe, what, activation)]

    def softmax(self, op: Softmax, stripe: Stripe, what: str) -> list[vapi.NpuOperation]:
        """Vela's sequence for the stripe's rows (see codegen.softmax), in the stripe's own scratch area; once per run
        of rows when the IFM or OFM wraps around a rolling buffer."""
        scratch = self.placements[softmax_scratch(stripe)]
        npu_ops = []
        for ifm, ofm in row_segments(self.fm(op.ifm, stripe.ifms[0]), self.fm(op.ofm, stripe.ofm)):
            npu_ops += SoftmaxSequence(op, ifm, ofm, (scratch.region, scratch.offset), self.constant,
                                       from_vela(self.accelerator).lut_base, what).operations()
        for npu_op in npu_ops:
            if isinstance(npu_op, vapi.NpuBlockOperation):
                self._with_block_config(npu_op, what)
        return npu_ops

    def fill(self, op: Pad, stripe: Stripe, what: str) -> vapi.NpuOperation:
        """A copy of a constant block of the pad value, the shape of the stripe's OFM box, from the constants."""
        shape = stripe.ofm.shape
        offset, _ = self.pool.add(np.full(shape, op.value, dtype=stripe.ofm.dtype).tobytes())
        block = FeatureMapRegion(f"{stripe.ofm.tensor}_pad_value", stripe.ofm.dtype, shape, (False,) * len(shape),
                                 tuple(Interval(0, extent) for extent in shape))
        return self.copy(feature_map(op.ofm, block, Placement(CONSTANTS_REGION, offset)), op.ofm, stripe, what)

    def transposed(self, op: Transpose, stripe: Stripe, what: str, a: Interval, b: Interval) -> vapi.NpuOperation:
        """The OFM's (B, A, C) box of rows `b` and columns `a` from the box (`a`, `b`) of the IFM's (A, B, C) view:
        one copy reading the IFM with its row and column strides swapped, or writing the OFM so, whichever the cost
        model prefers (the blocks may fit the copy's b x a shape better than its a x b one, or the reverse)."""
        rows, columns, depth = op.view

        def view(region: FeatureMapRegion, shape: tuple[int, ...], box: tuple[Interval, ...]) -> FeatureMapRegion:
            return replace(region, layout=(1, *shape), box=(Interval(0, 1), *box, Interval(0, depth)))

        def swapped(fm: vapi.NpuFeatureMap, height: Interval, width: Interval) -> vapi.NpuFeatureMap:
            fm.shape = vapi.NpuShape3D(height=height.extent, width=width.extent, depth=depth)
            fm.strides = vapi.NpuShape3D(height=fm.strides.width, width=fm.strides.height, depth=fm.strides.depth)
            fm.tiles = vapi.NpuTileBox(height_0=height.extent, height_1=height.extent, width_0=width.extent,
                                       addresses=fm.tiles.addresses)
            return fm

        ifm = view(stripe.ifms[0], (rows, columns, depth), (a, b))
        target = Stripe(stripe.op, view(stripe.ofm, (columns, rows, depth), (b, a)), stripe.ifms)
        reading = self.copy(swapped(self.fm(op.ifm, ifm), b, a), op.ofm, target, what)
        writing = self.copy(self.fm(op.ifm, ifm), op.ofm, target, what,
                            ofm_view=swapped(self.fm(op.ofm, target.ofm), a, b))
        return min((reading, writing), key=lambda npu_op: vela_call(what, estimate_cycles, npu_op, self.accelerator,
                                                                    system=self.system).cycles)

    def copy(self, source: vapi.NpuFeatureMap, ofm: Operand, stripe: Stripe, what: str,
             activation: vapi.NpuActivation | None = None, upscale: bool = False,
             strides: tuple[int, int] = (1, 1), kind: vapi.NpuPoolingOp = vapi.NpuPoolingOp.MAX,
             ofm_view: vapi.NpuFeatureMap | None = None) -> vapi.NpuOperation:
        """A 1x1 max pool from `source` to the stripe's box of the OFM (for a reshape the source is the IFM's bytes
        in the OFM's shape; a concatenation or pad writes a box of its OFM; with `upscale` each source element
        fills 2x2 of the OFM; with `strides` (y, x) a slice skips rows and columns): a pool has no alignment rule
        on the size, which a DMA would have (multiples of 16). `kind` AVERAGE makes it a 1x1 average pool, which
        scales globally (the built-in functions' input scaling). `ofm_view`, when given, is how the copy writes the
        stripe's box (a transpose's, with swapped strides)."""
        npu_op = vapi.NpuPoolingOperation(kind)
        stride_y, stride_x = window_strides(strides, stripe.ofm)
        npu_op.kernel = vapi.NpuKernel(1, 1, stride_x, stride_y)
        npu_op.padding = vapi.NpuPadding(top=0, left=0, bottom=0, right=0)
        npu_op.rounding_mode = vapi.NpuRoundingMode.TFL
        npu_op.ifm = source
        npu_op.ofm = ofm_view or self.fm(ofm, stripe.ofm)
        npu_op.activation = activation
        if upscale:
            npu_op.ifm_upscale = vapi.NpuResamplingMode.NEAREST
        return self._with_block_config(npu_op, what)
