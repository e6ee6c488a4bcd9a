"""Converters of the operators that only move values, where TVM's converter emits what has no host kernel or reads
TFLite's operator otherwise: each becomes strided slices, concatenations, reshapes and transposes of the raw
integers (each a copy the NPU or a host kernel makes), in the output's quantization. GATHER_ND and FILL are in
`indexing`.
"""
from __future__ import annotations

import numpy as np
import tflite
from tvm import relax

from .converter import ConverterCore
from .indexing import GATHER_SLICES
from .slicing import SliceSpec, strided_slice, strided_slice_ranges
from .tflite_file import TFLITE_DTYPES, builtin_options


class DataMovementConverters(ConverterCore):
    def convert_reshape(self, op):
        # A folded new shape may hold -1; the output tensor has the static shape it resolves to.
        inputs = self.get_input_tensors(op)
        if len(inputs) < 2 or inputs[1].tensor_idx not in self.rewrites.folded:
            return super().convert_reshape(op)
        new_shape = [int(d) for d in self.rewrites.folded[inputs[1].tensor_idx].reshape(-1)]
        (output,) = self.get_output_tensors(op)
        shape = [int(d) for d in self.get_tensor_shape(output)]
        if len(new_shape) != len(shape) or any(d not in (-1, o) for d, o in zip(new_shape, shape)):
            raise ValueError(f"the shape computed at import {new_shape} does not give the output's {shape}")
        return relax.op.reshape(self.get_tensor_expr(inputs[0]), shape)

    def convert_expand_dims(self, op):
        # TVM's converter calls relax.op.expand_dims with an argument it does not take; it is a reshape.
        data = self.get_input_tensors(op)[0]
        (output,) = self.get_output_tensors(op)
        return relax.op.reshape(self.get_tensor_expr(data), [int(d) for d in self.get_tensor_shape(output)])

    def convert_strided_slice(self, op):
        # TVM's converter ignores `offset` and reads the masks unlike TFLite: slice what TFLite's kernel copies.
        data, *indices = self.get_input_tensors(op)
        options = builtin_options(op, tflite.StridedSliceOptions)
        spec = SliceSpec(*(tuple(int(v) for v in self.get_tensor_value(t).reshape(-1)) for t in indices),
                         options.BeginMask(), options.EndMask(), options.EllipsisMask(), options.NewAxisMask(),
                         options.ShrinkAxisMask(), bool(options.Offset()))
        ranges, shape = strided_slice_ranges(spec, self.shape_of(data))
        return self._slice(data, ranges, shape, self.get_output_tensors(op)[0])

    # SPLIT, SPLIT_V and UNPACK become one strided slice per output (TVM's converters emit a tuple-valued
    # split, and ignore a -1 size of SPLIT_V): every output is then a single-output host kernel. A ValueError
    # becomes an UnsupportedModelError naming the operator.
    def convert_split(self, op):
        axis_tensor, data = self.get_input_tensors(op)
        outputs = self.get_output_tensors(op)
        axis = int(self.get_tensor_value(axis_tensor).reshape(-1)[0]) % len(self.shape_of(data))
        size, count = self.shape_of(data)[axis], len(outputs)
        if size % count:
            raise ValueError(f"{size} elements do not split into {count} equal parts")
        return self._split(data, axis, [size // count] * count, outputs)

    def convert_split_v(self, op):
        data, sizes_tensor, axis_tensor = self.get_input_tensors(op)
        if self.has_expr(sizes_tensor.tensor_idx):
            raise ValueError("sizes computed at run time")
        axis = int(self.get_tensor_value(axis_tensor).reshape(-1)[0]) % len(self.shape_of(data))
        sizes = [int(s) for s in self.get_tensor_value(sizes_tensor).reshape(-1)]
        if sizes.count(-1) == 1:  # the one unknown size takes what the others leave
            sizes[sizes.index(-1)] = self.shape_of(data)[axis] - sum(s for s in sizes if s != -1)
        if min(sizes) < 0 or sum(sizes) != self.shape_of(data)[axis]:
            raise ValueError(f"sizes {sizes} do not split {self.shape_of(data)[axis]} elements")
        return self._split(data, axis, sizes, self.get_output_tensors(op))

    def convert_unpack(self, op):
        (data,) = self.get_input_tensors(op)
        outputs = self.get_output_tensors(op)
        axis = builtin_options(op, tflite.UnpackOptions).Axis() % len(self.shape_of(data))
        return self._split(data, axis, [1] * self.shape_of(data)[axis], outputs)

    def convert_pack(self, op):
        # TVM's converter refuses inputs quantized unlike the output, as LiteRT does; TFLite Micro copies the
        # integers, and so does the host kernel.
        inputs = self.get_input_tensors(op)
        axis = builtin_options(op, tflite.PackOptions).Axis() % (len(self.shape_of(inputs[0])) + 1)
        return relax.op.concat([relax.op.expand_dims(self.get_tensor_expr(t), axis) for t in inputs], axis)

    def convert_depth_to_space(self, op):
        return self._block_move(op, builtin_options(op, tflite.DepthToSpaceOptions).BlockSize(), to_depth=False)

    def convert_space_to_depth(self, op):
        return self._block_move(op, builtin_options(op, tflite.SpaceToDepthOptions).BlockSize(), to_depth=True)

    def _block_move(self, op, block: int, to_depth: bool):
        """DEPTH_TO_SPACE and SPACE_TO_DEPTH as `block` slices concatenated, between reshapes that only
        regroup the elements (each slice then a strided copy into its place in the output, as the NPU
        copies). With rows h·block + i and columns w·block + j, DEPTH_TO_SPACE reads its input as
        (1, (n, h), w, (i, j, c)), slices it by i along the channels and concatenates the slices along the
        width into (1, (n, h), (i, w), (j, c)), the output's element order; SPACE_TO_DEPTH slices
        (1, (n, h), (i, w), (j, c)) by i along the width and concatenates along the channels. Every step is in
        the output's quantization (TVM's converters nest a transpose in reshapes, which leaves the inner ones
        unquantized)."""
        (data,) = self.get_input_tensors(op)
        (output,) = self.get_output_tensors(op)
        n, h, w, c = self.shape_of(data)
        if to_depth:
            source, sliced, joined = (1, n * h // block, block * (w // block), block * c), 2, 3
        else:
            source, sliced, joined = (1, n * h, w, c), 3, 2
        x = self.get_tensor_expr(data)
        if source != (n, h, w, c):
            x = self.bound(relax.op.reshape(x, source), output)
        parts = []
        for i in range(block):
            ranges = [range(d) for d in source]
            step = source[sliced] // block
            ranges[sliced] = range(i * step, (i + 1) * step)
            parts.append(strided_slice(x, ranges, source))
        return relax.op.reshape(self.concatenated(parts, joined, output), list(self.shape_of(output)))

    def convert_mirror_pad(self, op):
        # TVM's converter refuses SYMMETRIC and emits a reflect pad that has no host kernel: per axis, a
        # concatenation of the reflected rows, each a slice of its own, and the tensor (the NPU copies forwards
        # only, so one copy per reflected row, as Vela does, rather than a backward slice).
        data, pads = self.get_input_tensors(op)
        (output,) = self.get_output_tensors(op)
        symmetric = builtin_options(op, tflite.MirrorPadOptions).Mode() == tflite.MirrorPadMode.SYMMETRIC
        widths = self.get_tensor_value(pads).reshape(-1, 2).tolist()
        shape = list(self.shape_of(data))
        x = self.bound(relax.op.reshape(self.get_tensor_expr(data), shape), output)  # a copy if none pads
        for axis, (before, after) in enumerate(widths):
            size, edge = shape[axis], 0 if symmetric else 1
            if max(before, after) > size - edge:
                raise ValueError(f"paddings {widths} exceed the input shape {self.shape_of(data)}")
            if before == after == 0:
                continue
            rows = [*range(before - 1 + edge, edge - 1, -1), None,
                    *range(size - 1 - edge, size - 1 - edge - after, -1)]
            parts = [range(size) if row is None else range(row, row + 1) for row in rows]
            x = self.concatenated([self._take(x, shape, axis, r) for r in parts], axis, output)
            shape[axis] += before + after
        return x

    def convert_tile(self, op):
        # TVM's converter emits a tile, which has no host kernel: per tiled axis, a concatenation of that many
        # copies of the tensor (the NPU's copies, as Vela splits TILE into one tiled axis at a time), the axes of
        # smaller multiples first so that less is copied twice. The integers are copied whatever the
        # quantizations, as LiteRT's kernel does: every copy is read in the output's quantization.
        data, multiples = self.get_input_tensors(op)
        (output,) = self.get_output_tensors(op)
        if self.has_expr(multiples.tensor_idx):
            raise ValueError("multiples computed at run time (only constant multiples are supported)")
        if not output.qnn_params:
            raise ValueError(f"an unquantized {TFLITE_DTYPES[output.tensor.Type()]} tensor (only quantized int8 "
                             "and int16 ones are supported)")
        reps = [int(m) for m in self.get_tensor_value(multiples).reshape(-1)]
        shape = self.shape_of(data)
        if len(reps) != len(shape) or tuple(d * m for d, m in zip(shape, reps)) != self.shape_of(output):
            raise ValueError(f"multiples {reps} of an input of shape {list(shape)} do not give the output "
                             f"{list(self.shape_of(output))}")
        x = self.get_tensor_expr(data)
        axes = sorted((a for a, m in enumerate(reps) if m > 1), key=reps.__getitem__)
        if not axes:
            return relax.op.reshape(x, list(shape))  # a copy
        for axis in axes:
            copies = relax.op.concat([self.dequantize(x, output) for _ in range(reps[axis])], axis)
            x = self.bound(self.quantize(copies, output), output)
        return x

    def convert_reverse_v2(self, op):
        # TVM's converter emits a flip, which has no host kernel: a slice with stride -1 on the axes.
        data, axes = self.get_input_tensors(op)
        shape = self.shape_of(data)
        axes = {int(a) % len(shape) for a in self.get_tensor_value(axes).reshape(-1)}
        ranges = [range(d - 1, -1, -1) if i in axes else range(d) for i, d in enumerate(shape)]
        return self._slice(data, ranges, shape, self.get_output_tensors(op)[0])

    def convert_gather(self, op):
        # TVM's converter emits a take, which has no host kernel: with constant indices, a strided slice when
        # they step evenly, else a concatenation of one slice per index (up to GATHER_SLICES of them; more are
        # one GATHER_ND over the axes up to `axis`, a host gather); then the output's shape.
        data, indices = self.get_input_tensors(op)
        (output,) = self.get_output_tensors(op)
        if self.has_expr(indices.tensor_idx):
            raise ValueError("indices computed at run time")
        shape, options = self.shape_of(data), builtin_options(op, tflite.GatherOptions)
        if options.BatchDims():
            raise ValueError(f"batch_dims {options.BatchDims()} is not supported")
        axis = options.Axis() % len(shape)
        picks = [int(i) for i in self.get_tensor_value(indices).reshape(-1)]
        if min(picks) < 0 or max(picks) >= shape[axis]:
            raise ValueError(f"indices {picks} are out of range for dimension {shape[axis]}")
        steps = {b - a for a, b in zip(picks, picks[1:])}
        if len(steps) <= 1 and 0 not in steps:
            step = steps.pop() if steps else 1
            ranges = [range(d) for d in shape]
            ranges[axis] = range(picks[0], picks[-1] + step, step)
            return self._slice(data, ranges, self.shape_of(output), output)
        x = self.get_tensor_expr(data)
        if len(picks) > GATHER_SLICES:
            grid = np.indices(shape[:axis] + (len(picks),))  # every point of the leading axes, every pick
            grid[axis] = np.asarray(picks)[grid[axis]]
            tuples = np.moveaxis(grid, 0, -1).astype(np.int64)
            return relax.op.reshape(relax.op.gather_nd(x, relax.const(tuples, "int64")), list(self.shape_of(output)))
        x = self.concatenated([self._take(x, shape, axis, range(i, i + 1)) for i in picks], axis, output)
        return relax.op.reshape(x, list(self.shape_of(output)))

    # SPACE_TO_BATCH_ND and BATCH_TO_SPACE_ND outside a dilated convolution (the chains are folded before):
    # TVM's converters call TOPI functions that have no host kernel; these are a pad or crop around a reshape →
    # transpose → reshape, each a host copy in the output's quantization.
    def convert_space_to_batch_nd(self, op):
        data, blocks, pads = self.get_input_tensors(op)
        (output,) = self.get_output_tensors(op)
        bh, bw, n, h, w, c = self._batch_blocks(data, blocks)
        widths = [[0, 0], *self.get_tensor_value(pads).reshape(-1, 2).tolist(), [0, 0]]
        zero_point = int(output.qnn_params["zero_point"].value.numpy()) if output.qnn_params else 0
        x = self.bound(relax.op.nn.pad(self.get_tensor_expr(data), [int(v) for pair in widths for v in pair],
                                      pad_value=float(zero_point)), output)
        h, w = h + sum(widths[1]), w + sum(widths[2])
        x = self.bound(relax.op.reshape(x, [n, h // bh, bh, w // bw, bw, c]), output)
        x = self.bound(relax.op.permute_dims(x, [2, 4, 0, 1, 3, 5]), output)
        return relax.op.reshape(x, list(self.shape_of(output)))

    def convert_batch_to_space_nd(self, op):
        data, blocks, crops = self.get_input_tensors(op)
        (output,) = self.get_output_tensors(op)
        bh, bw, n, h, w, c = self._batch_blocks(data, blocks)
        x = self.bound(relax.op.reshape(self.get_tensor_expr(data), [bh, bw, n // (bh * bw), h, w, c]), output)
        x = self.bound(relax.op.permute_dims(x, [2, 3, 0, 4, 1, 5]), output)
        shape = [n // (bh * bw), h * bh, w * bw, c]
        x = self.bound(relax.op.reshape(x, shape), output)
        (top, bottom), (left, right) = self.get_tensor_value(crops).reshape(2, 2).tolist()
        ranges = [range(shape[0]), range(top, shape[1] - bottom), range(left, shape[2] - right), range(c)]
        if tuple(len(r) for r in ranges) != self.shape_of(output):
            raise ValueError(f"crops {[[top, bottom], [left, right]]} do not give the output {self.shape_of(output)}")
        return strided_slice(x, ranges, shape)

    def _batch_blocks(self, data, blocks) -> tuple[int, ...]:
        """The block height and width and the NHWC shape of `data`; two spatial dimensions only."""
        block_shape = [int(b) for b in self.get_tensor_value(blocks).reshape(-1)]
        if len(self.shape_of(data)) != 4 or len(block_shape) != 2:
            raise ValueError(f"a block shape {block_shape} on a {len(self.shape_of(data))}-D input (only 2 on 4-D)")
        return (*block_shape, *self.shape_of(data))

    def _take(self, x, shape: list[int], axis: int, r: range):
        """The elements of `x` (of `shape`) at `r` along `axis`."""
        return strided_slice(x, [r if i == axis else range(d) for i, d in enumerate(shape)], shape)

    def _split(self, data, axis: int, sizes: list[int], outputs):
        if len(sizes) != len(outputs):
            raise ValueError(f"{len(outputs)} outputs for {len(sizes)} parts")
        starts = np.cumsum([0] + sizes).tolist()
        full = [range(d) for d in self.shape_of(data)]
        return relax.Tuple([self._slice(data, full[:axis] + [range(start, stop)] + full[axis + 1:],
                                        self.shape_of(output), output)
                            for start, stop, output in zip(starts, starts[1:], outputs)])

    def _slice(self, data, ranges: list[range], shape: tuple[int, ...], output):
        """The elements `ranges` select, reshaped to `shape`, which must be the output tensor's."""
        if shape != self.shape_of(output):
            raise ValueError(f"the output shape {self.shape_of(output)} is not TFLite's {shape}")
        sliced = strided_slice(self.get_tensor_expr(data), ranges, self.shape_of(data))
        if tuple(len(r) for r in ranges) == shape:
            return sliced
        sliced = self.bb.emit(sliced)
        self.record_quant([(sliced, output)])  # the output's values before the reshape
        return relax.op.reshape(sliced, list(shape))
