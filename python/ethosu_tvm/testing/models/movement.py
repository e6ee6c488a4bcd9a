"""Ops that move or copy values without arithmetic on them: reshape, concatenation, slicing, padding, resizing, ...
Their outputs keep the input's quantization."""
from __future__ import annotations

import numpy as np

from .base import NetBase
from .quant import ACTIVATIONS, OP, QTensor, choice, pair


def _pairs(paddings, x: QTensor) -> np.ndarray:
    """Paddings as an int32 [rank, 2] array of non-negative (before, after) pairs."""
    pads = np.array(paddings, dtype=np.int32)
    if pads.shape != (len(x.shape), 2) or pads.min() < 0:
        raise ValueError(f"paddings must be {len(x.shape)} non-negative (before, after) pairs")
    return pads


class DataMovementOps(NetBase):
    """Reshape, concatenation, split, split_v, slices, squeeze, expand_dims, transpose, pack, unpack, pad,
    resize, depth_to_space, space_to_depth, mirror_pad, padv2, reverse_v2, gather, broadcast_to,
    tile, space_to_batch_nd and batch_to_space_nd."""

    def reshape(self, x: QTensor, new_shape=(1, -1), batch_from_shape: bool = False) -> QTensor:
        """RESHAPE; `batch_from_shape` computes the new shape as Keras exports `tf.reshape(x, [tf.shape(x)[0],
        *new_shape[1:]])` from a model with a dynamic batch: SHAPE → STRIDED_SLICE → PACK, with shape signatures
        of batch -1."""
        shape = list(new_shape)
        total = int(np.prod(x.shape))
        if shape.count(-1) > 1:
            raise ValueError("new_shape may contain at most one -1")
        if -1 in shape:
            known = int(np.prod([d for d in shape if d != -1]))
            if known <= 0 or total % known:
                raise ValueError(f"cannot reshape {x.shape} to {tuple(new_shape)}")
            shape[shape.index(-1)] = total // known
        if int(np.prod(shape)) != total or min(shape) < 1:
            raise ValueError(f"cannot reshape {x.shape} to {tuple(new_shape)}")
        y = self._same_quant(x, shape)
        if not batch_from_shape:
            shape_t = self._const(np.array(shape, dtype=np.int32))
            self.builder.add_operator(OP.RESHAPE, [x.index, shape_t], [y.index], "ReshapeOptions",
                                      dict(NewShape=list(shape)))
            return y
        for tensor in (x, y):
            self.builder.set_shape_signature(tensor.index, (-1,) + tensor.shape[1:])
        dims = self.builder.add_tensor(self._name("shape"), (len(x.shape),), np.int32)
        self.builder.add_operator(OP.SHAPE, [x.index], [dims], "ShapeOptions", dict(OutType=2))  # INT32
        batch = self.builder.add_tensor(self._name("batch"), (), np.int32)
        ends = [self._const(np.array([v], dtype=np.int32)) for v in (0, 1, 1)]
        self.builder.add_operator(OP.STRIDED_SLICE, [dims, *ends], [batch], "StridedSliceOptions",
                                  dict(ShrinkAxisMask=1))
        rest = [self._const(np.array(d, dtype=np.int32)) for d in new_shape[1:]]
        packed = self.builder.add_tensor(self._name("new_shape"), (len(shape),), np.int32)
        self.builder.add_operator(OP.PACK, [batch, *rest], [packed], "PackOptions",
                                  dict(ValuesCount=len(shape), Axis=0))
        self.builder.add_operator(OP.RESHAPE, [x.index, packed], [y.index])
        return y

    def concatenation(self, inputs: list[QTensor], axis: int = -1, activation: str = "NONE") -> QTensor:
        """CONCATENATION; TFLite's int8 kernel needs every input to share the output's quantization."""
        first = inputs[0]
        rank = len(first.shape)
        if not -rank <= axis < rank:
            raise ValueError(f"axis {axis} is out of range for rank {rank}")
        axis %= rank
        for t in inputs[1:]:
            self._require_same_quant(first, t, "concatenation")
            if t.shape[:axis] + t.shape[axis + 1:] != first.shape[:axis] + first.shape[axis + 1:]:
                raise ValueError(f"shapes {first.shape} and {t.shape} differ outside axis {axis}")
        shape = list(first.shape)
        shape[axis] = sum(t.shape[axis] for t in inputs)
        y = self._same_quant(first, shape)
        self.builder.add_operator(OP.CONCATENATION, [t.index for t in inputs], [y.index], "ConcatenationOptions",
                                  dict(Axis=axis, FusedActivationFunction=choice(activation, ACTIVATIONS,
                                                                                  "activation")))
        return y

    def _moved(self, x: QTensor, shape, out_scale, out_zp) -> QTensor:
        """The output of a copy: `x`'s quantization unless given (TFLite's kernels copy the integers whatever the
        output's quantization, or refuse)."""
        return self._activation(shape, x.dtype, x.scale if out_scale is None else out_scale,
                                x.zero_point if out_zp is None else out_zp)

    def split(self, x: QTensor, num_splits: int = 2, axis: int = -1, out_scale=None, out_zp=None) -> list[QTensor]:
        rank = len(x.shape)
        if not -rank <= axis < rank:
            raise ValueError(f"axis {axis} is out of range for rank {rank}")
        axis %= rank
        if num_splits < 1 or x.shape[axis] % num_splits:
            raise ValueError(f"dimension {x.shape[axis]} cannot be split into {num_splits} equal parts")
        shape = list(x.shape)
        shape[axis] //= num_splits
        outputs = [self._moved(x, shape, out_scale, out_zp) for _ in range(num_splits)]
        axis_t = self._const(np.array(axis, dtype=np.int32))
        self.builder.add_operator(OP.SPLIT, [axis_t, x.index], [t.index for t in outputs], "SplitOptions",
                                  dict(NumSplits=num_splits))
        return outputs

    def split_v(self, x: QTensor, size_splits=(1, -1, 2), axis: int = -1, out_scale=None,
                out_zp=None) -> list[QTensor]:
        """SPLIT_V; one size of -1 takes what the others leave."""
        rank = len(x.shape)
        if not -rank <= axis < rank:
            raise ValueError(f"axis {axis} is out of range for rank {rank}")
        sizes = list(size_splits)
        if sizes.count(-1) == 1:
            sizes[sizes.index(-1)] = x.shape[axis] - sum(s for s in sizes if s != -1)
        if not sizes or min(sizes) < 1 or sum(sizes) != x.shape[axis]:
            raise ValueError(f"sizes {tuple(size_splits)} do not split {x.shape[axis]} elements")
        shape = list(x.shape)
        outputs = []
        for size in sizes:
            shape[axis] = size
            outputs.append(self._moved(x, shape, out_scale, out_zp))
        consts = [self._const(np.array(size_splits, dtype=np.int32)), self._const(np.array(axis, dtype=np.int32))]
        self.builder.add_operator(OP.SPLIT_V, [x.index, *consts], [t.index for t in outputs], "SplitVOptions",
                                  dict(NumSplits=len(sizes)))
        return outputs

    def unpack(self, x: QTensor, axis: int = 0, out_scale=None, out_zp=None) -> list[QTensor]:
        """UNPACK; LiteRT refuses another output quantization, TFLite Micro copies the integers."""
        rank = len(x.shape)
        if not -rank <= axis < rank:
            raise ValueError(f"axis {axis} is out of range for rank {rank}")
        shape = x.shape[:axis % rank] + x.shape[axis % rank + 1:]
        outputs = [self._moved(x, shape, out_scale, out_zp) for _ in range(x.shape[axis])]
        self.builder.add_operator(OP.UNPACK, [x.index], [t.index for t in outputs], "UnpackOptions",
                                  dict(Num=len(outputs), Axis=axis))
        return outputs

    def strided_slice(self, x: QTensor, begin=(0, 1, 1, 0), end=(1, 7, 7, 4), strides=(1, 2, 1, 1),
                      begin_mask: int = 0, end_mask: int = 0, ellipsis_mask: int = 0, new_axis_mask: int = 0,
                      shrink_axis_mask: int = 0, offset: bool = False, out_scale=None, out_zp=None) -> QTensor:
        """STRIDED_SLICE; the output shape is NumPy's for the same index (`offset`: end counts from begin)."""
        if not len(begin) == len(end) == len(strides):
            raise ValueError("begin, end and strides differ in length")
        if 0 in strides:
            raise ValueError("strides must be non-zero")
        index = []
        for i, (b, e, s) in enumerate(zip(begin, end, strides)):
            if ellipsis_mask >> i & 1:
                index.append(Ellipsis)
            elif new_axis_mask >> i & 1:
                index.append(None)
            elif shrink_axis_mask >> i & 1:
                index.append(b)
            else:
                index.append(slice(None if begin_mask >> i & 1 else b,
                                   None if end_mask >> i & 1 else (b + e if offset else e), s))
        try:
            shape = np.empty(x.shape, dtype=np.int8)[tuple(index)].shape
        except IndexError as err:
            raise ValueError(f"the index {index} does not fit {x.shape}: {err}") from None
        if min(shape, default=1) < 1:
            raise ValueError(f"the slice of {x.shape} is empty")
        y = self._moved(x, shape, out_scale, out_zp)
        consts = [self._const(np.array(v, dtype=np.int32)) for v in (begin, end, strides)]
        self.builder.add_operator(OP.STRIDED_SLICE, [x.index, *consts], [y.index], "StridedSliceOptions",
                                  dict(BeginMask=begin_mask, EndMask=end_mask, EllipsisMask=ellipsis_mask,
                                       NewAxisMask=new_axis_mask, ShrinkAxisMask=shrink_axis_mask, Offset=offset))
        return y

    def slice(self, x: QTensor, begin=(0, 1, 2, 0), size=(1, 5, 4, -1), out_scale=None, out_zp=None) -> QTensor:
        """SLICE; a size of -1 takes the rest of the dimension."""
        if not len(begin) == len(size) == len(x.shape):
            raise ValueError(f"begin and size need {len(x.shape)} values each")
        shape = [d - b if s == -1 else s for d, b, s in zip(x.shape, begin, size)]
        if any(b < 0 or s < 1 or b + s > d for d, b, s in zip(x.shape, begin, shape)):
            raise ValueError(f"slice begin={tuple(begin)} size={tuple(size)} does not fit {x.shape}")
        y = self._moved(x, shape, out_scale, out_zp)
        consts = [self._const(np.array(v, dtype=np.int32)) for v in (begin, size)]
        self.builder.add_operator(OP.SLICE, [x.index, *consts], [y.index], "SliceOptions")
        return y

    def squeeze(self, x: QTensor, axis=(0,)) -> QTensor:
        axes = sorted({a % len(x.shape) for a in axis})
        if any(x.shape[a] != 1 for a in axes):
            raise ValueError(f"cannot squeeze axes {tuple(axis)} of {x.shape}: not all of size 1")
        y = self._same_quant(x, [d for i, d in enumerate(x.shape) if i not in axes])
        self.builder.add_operator(OP.SQUEEZE, [x.index], [y.index], "SqueezeOptions", dict(SqueezeDims=axes))
        return y

    def expand_dims(self, x: QTensor, axis: int = 0) -> QTensor:
        rank = len(x.shape) + 1
        if not -rank <= axis < rank:
            raise ValueError(f"axis {axis} is out of range for rank {rank}")
        shape = list(x.shape)
        shape.insert(axis % rank, 1)
        y = self._same_quant(x, shape)
        self.builder.add_operator(OP.EXPAND_DIMS, [x.index, self._const(np.array([axis], dtype=np.int32))],
                                  [y.index], "ExpandDimsOptions")
        return y

    def transpose(self, x: QTensor, perm=(0, 2, 1, 3), out_scale=None, out_zp=None) -> QTensor:
        if sorted(perm) != list(range(len(x.shape))):
            raise ValueError(f"perm {tuple(perm)} is not a permutation of {len(x.shape)} axes")
        y = self._moved(x, [x.shape[p] for p in perm], out_scale, out_zp)
        self.builder.add_operator(OP.TRANSPOSE, [x.index, self._const(np.array(perm, dtype=np.int32))],
                                  [y.index], "TransposeOptions")
        return y

    def pack(self, inputs: list[QTensor], axis: int = 0, out_scale=None, out_zp=None) -> QTensor:
        """PACK (stack) of same-quantized inputs; LiteRT refuses another output quantization, TFLite Micro copies
        the integers."""
        first = inputs[0]
        rank = len(first.shape) + 1
        if not -rank <= axis < rank:
            raise ValueError(f"axis {axis} is out of range for rank {rank}")
        for t in inputs[1:]:
            self._require_same_quant(first, t, "pack")
            if t.shape != first.shape:
                raise ValueError(f"pack needs equal shapes, got {first.shape} and {t.shape}")
        shape = list(first.shape)
        shape.insert(axis % rank, len(inputs))
        y = self._moved(first, shape, out_scale, out_zp)
        self.builder.add_operator(OP.PACK, [t.index for t in inputs], [y.index], "PackOptions",
                                  dict(ValuesCount=len(inputs), Axis=axis % rank))
        return y

    def pad(self, x: QTensor, paddings=((0, 0), (1, 1), (2, 1), (0, 0))) -> QTensor:
        """PAD with the zero point (real 0.0)."""
        pads = _pairs(paddings, x)
        y = self._same_quant(x, tuple(d + int(p.sum()) for d, p in zip(x.shape, pads)))
        self.builder.add_operator(OP.PAD, [x.index, self._const(pads)], [y.index], "PadOptions")
        return y

    def _resize(self, builtin, options_table, x: QTensor, size, align_corners, half_pixel_centers) -> QTensor:
        height, width = pair(size, "size")
        if align_corners and half_pixel_centers:
            raise ValueError("align_corners and half_pixel_centers cannot both be set")
        y = self._same_quant(x, (x.shape[0], height, width, x.shape[3]))
        self.builder.add_operator(builtin, [x.index, self._const(np.array([height, width], dtype=np.int32))],
                                  [y.index], options_table,
                                  dict(AlignCorners=align_corners, HalfPixelCenters=half_pixel_centers))
        return y

    def resize_nearest_neighbor(self, x: QTensor, size=(16, 16), align_corners: bool = False,
                                half_pixel_centers: bool = False) -> QTensor:
        return self._resize(OP.RESIZE_NEAREST_NEIGHBOR, "ResizeNearestNeighborOptions", x, size, align_corners,
                            half_pixel_centers)

    def resize_bilinear(self, x: QTensor, size=(16, 16), align_corners: bool = False,
                        half_pixel_centers: bool = False) -> QTensor:
        return self._resize(OP.RESIZE_BILINEAR, "ResizeBilinearOptions", x, size, align_corners,
                            half_pixel_centers)

    def depth_to_space(self, x: QTensor, block_size: int = 2) -> QTensor:
        """DEPTH_TO_SPACE (NHWC): channel blocks of block_size² become block_size × block_size pixels."""
        n, h, w, c = x.shape
        if block_size < 1 or c % (block_size * block_size):
            raise ValueError(f"{c} channels do not divide into blocks of {block_size}x{block_size}")
        y = self._same_quant(x, (n, h * block_size, w * block_size, c // block_size ** 2))
        self.builder.add_operator(OP.DEPTH_TO_SPACE, [x.index], [y.index], "DepthToSpaceOptions",
                                  dict(BlockSize=block_size))
        return y

    def space_to_depth(self, x: QTensor, block_size: int = 2) -> QTensor:
        """SPACE_TO_DEPTH (NHWC): block_size × block_size pixels become channels."""
        n, h, w, c = x.shape
        if block_size < 1 or h % block_size or w % block_size:
            raise ValueError(f"{h}x{w} does not divide into blocks of {block_size}x{block_size}")
        y = self._same_quant(x, (n, h // block_size, w // block_size, c * block_size ** 2))
        self.builder.add_operator(OP.SPACE_TO_DEPTH, [x.index], [y.index], "SpaceToDepthOptions",
                                  dict(BlockSize=block_size))
        return y

    def mirror_pad(self, x: QTensor, paddings=((0, 0), (2, 1), (1, 2), (0, 0)), mode: str = "REFLECT") -> QTensor:
        """MIRROR_PAD; REFLECT leaves out the edge element (pads < size), SYMMETRIC repeats it (pads ≤ size)."""
        modes = {"REFLECT": 0, "SYMMETRIC": 1}
        pads = _pairs(paddings, x)
        limit = [d - (mode == "REFLECT") for d in x.shape]
        if any(p.max() > m for p, m in zip(pads, limit)):
            raise ValueError(f"{mode} paddings {pads.tolist()} exceed {x.shape}")
        y = self._same_quant(x, tuple(d + int(p.sum()) for d, p in zip(x.shape, pads)))
        self.builder.add_operator(OP.MIRROR_PAD, [x.index, self._const(pads)], [y.index], "MirrorPadOptions",
                                  dict(Mode=choice(mode, modes, "mode")))
        return y

    def padv2(self, x: QTensor, paddings=((0, 0), (1, 1), (2, 1), (0, 0)), value: int = 5) -> QTensor:
        """PADV2 with the integer `value` (a constant in the input's quantization)."""
        pads = _pairs(paddings, x)
        info = np.iinfo(x.dtype)
        if not info.min <= value <= info.max:
            raise ValueError(f"value {value} does not fit {x.dtype}")
        y = self._same_quant(x, tuple(d + int(p.sum()) for d, p in zip(x.shape, pads)))
        fill = self._activation((), x.dtype, x.scale, x.zero_point, name=self._name("const"),
                                data=np.array(value, dtype=x.dtype))
        self.builder.add_operator(OP.PADV2, [x.index, self._const(pads), fill.index], [y.index], "PadV2Options")
        return y

    def reverse_v2(self, x: QTensor, axis=(1,)) -> QTensor:
        """REVERSE_V2 along the axes (TFLite's kernels take one)."""
        if any(not -len(x.shape) <= a < len(x.shape) for a in axis):
            raise ValueError(f"axes {tuple(axis)} are out of range for rank {len(x.shape)}")
        y = self._same_quant(x, x.shape)
        self.builder.add_operator(OP.REVERSE_V2, [x.index, self._const(np.array(axis, dtype=np.int32))],
                                  [y.index], "ReverseV2Options")
        return y

    def gather(self, x: QTensor, indices=(3, 0, 0, 5), axis: int = -1, batch_dims: int = 0) -> QTensor:
        """GATHER with constant indices (any shape) along `axis`; the first `batch_dims` axes of the indices pair
        with those of `x`."""
        rank = len(x.shape)
        if not -rank <= axis < rank:
            raise ValueError(f"axis {axis} is out of range for rank {rank}")
        axis %= rank
        idx = np.array(indices, dtype=np.int32)
        if idx.size == 0 or idx.min() < 0 or idx.max() >= x.shape[axis]:
            raise ValueError(f"indices {idx.tolist()} are out of range for dimension {x.shape[axis]}")
        if not 0 <= batch_dims <= min(axis, idx.ndim) or idx.shape[:batch_dims] != x.shape[:batch_dims]:
            raise ValueError(f"batch_dims {batch_dims} does not pair indices {idx.shape} with {x.shape}")
        y = self._same_quant(x, x.shape[:axis] + idx.shape[batch_dims:] + x.shape[axis + 1:])
        self.builder.add_operator(OP.GATHER, [x.index, self._const(idx)], [y.index], "GatherOptions",
                                  dict(Axis=axis, BatchDims=batch_dims))
        return y

    def gather_nd(self, x: QTensor, indices=((0, 3, 1), (0, 7, 2), (0, 0, 5)), runtime_indices: bool = False,
                  index_source=None) -> QTensor:
        """GATHER_ND of x at int32 `indices` (the last axis indexes x's leading axes): a constant, or with
        `runtime_indices` a model input of that shape (give it valid values), or with `index_source=shape` the
        ARG_MAX over the last axis of a second int8 input of that shape (indices in range by construction)."""
        if index_source is not None:
            *lead, extent = (int(d) for d in index_source)
            if not lead or not 1 <= lead[-1] <= len(x.shape) or extent > min(x.shape[:lead[-1]]):
                raise ValueError(f"ARG_MAX indices of {index_source} do not fit the leading axes of {x.shape}")
            index = self.arg_max(self.input(tuple(index_source), "int8")).index
            shape = tuple(lead)
        else:
            idx = np.array(indices, dtype=np.int32)
            shape = idx.shape
            if idx.ndim < 1 or not 1 <= idx.shape[-1] <= len(x.shape):
                raise ValueError(f"indices of shape {idx.shape} for params of rank {len(x.shape)}")
            if np.any((idx < 0) | (idx >= np.array(x.shape[:idx.shape[-1]]))):
                raise ValueError(f"indices {idx.tolist()} are out of range for {x.shape}")
            index = self.plain_input(shape, np.int32) if runtime_indices else self._const(idx)
        y = self._same_quant(x, shape[:-1] + x.shape[shape[-1]:])
        self.builder.add_operator(OP.GATHER_ND, [x.index, index], [y.index])
        return y

    def fill(self, x: QTensor, shape=(2, 3, 4)) -> QTensor:
        """FILL of `shape` with the scalar x (in_shape ()), in x's quantization."""
        if x.shape != ():
            raise ValueError(f"FILL's value must be a scalar, got shape {x.shape}")
        y = self._same_quant(x, tuple(int(d) for d in shape))
        self.builder.add_operator(OP.FILL, [self._const(np.array(shape, np.int32)), x.index], [y.index])
        return y

    def broadcast_to(self, x: QTensor, shape=(1, 8, 8, 4)) -> QTensor:
        """BROADCAST_TO by NumPy's rules."""
        try:
            out = np.broadcast_shapes(x.shape, tuple(shape))
        except ValueError as err:
            raise ValueError(f"cannot broadcast {x.shape} to {tuple(shape)}: {err}") from None
        if out != tuple(shape):
            raise ValueError(f"cannot broadcast {x.shape} to {tuple(shape)}")
        y = self._same_quant(x, out)
        self.builder.add_operator(OP.BROADCAST_TO, [x.index, self._const(np.array(shape, dtype=np.int32))],
                                  [y.index], "BroadcastToOptions", version=2)
        return y

    def tile(self, x: QTensor, multiples=(1, 2, 3, 1), runtime_multiples: bool = False) -> QTensor:
        """TILE: x repeated `multiples[i]` times along axis i, in x's quantization (TFLite's quantizer keeps it);
        `runtime_multiples` makes the multiples an int32 model input. Version 1: LiteRT's reference resolver has
        no version 3, which TFLite's converter now writes for int8."""
        reps = np.array(multiples, dtype=np.int32)
        if reps.shape != (len(x.shape),) or reps.min(initial=1) < 1:
            raise ValueError(f"multiples must be {len(x.shape)} positive ints, got {tuple(multiples)}")
        y = self._same_quant(x, tuple(d * int(m) for d, m in zip(x.shape, reps)))
        operand = self.plain_input(reps.shape, np.int32) if runtime_multiples else self._const(reps)
        self.builder.add_operator(OP.TILE, [x.index, operand], [y.index], "TileOptions")
        return y

    def space_to_batch_nd(self, x: QTensor, block_shape=(2, 2), paddings=((1, 1), (0, 2))) -> QTensor:
        """SPACE_TO_BATCH_ND of an NHWC tensor on its own: padded with the zero point, then block_shape blocks of
        pixels become batches."""
        (bh, bw), pads = pair(block_shape, "block_shape"), np.array(paddings, dtype=np.int32)
        if pads.shape != (2, 2) or pads.min() < 0:
            raise ValueError("paddings must be 2 non-negative (before, after) pairs")
        n, h, w, c = x.shape
        h, w = h + int(pads[0].sum()), w + int(pads[1].sum())
        if bh < 1 or bw < 1 or h % bh or w % bw:
            raise ValueError(f"the padded {h}x{w} does not divide into {bh}x{bw} blocks")
        y = self._same_quant(x, (n * bh * bw, h // bh, w // bw, c))
        self.builder.add_operator(OP.SPACE_TO_BATCH_ND, [x.index, self._const(np.array([bh, bw], np.int32)),
                                                          self._const(pads)], [y.index])
        return y

    def batch_to_space_nd(self, x: QTensor, block_shape=(2, 2), crops=((1, 0), (0, 2))) -> QTensor:
        """BATCH_TO_SPACE_ND of an NHWC tensor on its own: batches become block_shape blocks of pixels, then the
        crops are cut off."""
        (bh, bw), cut = pair(block_shape, "block_shape"), np.array(crops, dtype=np.int32)
        n, h, w, c = x.shape
        if bh < 1 or bw < 1 or n % (bh * bw):
            raise ValueError(f"a batch of {n} does not divide into {bh}x{bw} blocks")
        if cut.shape != (2, 2) or cut.min() < 0 or cut[0].sum() >= h * bh or cut[1].sum() >= w * bw:
            raise ValueError(f"crops {cut.tolist()} do not fit {h * bh}x{w * bw}")
        y = self._same_quant(x, (n // (bh * bw), h * bh - int(cut[0].sum()), w * bw - int(cut[1].sum()), c))
        self.builder.add_operator(OP.BATCH_TO_SPACE_ND, [x.index, self._const(np.array([bh, bw], np.int32)),
                                                          self._const(cut)], [y.index])
        return y
