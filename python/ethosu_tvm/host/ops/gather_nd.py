"""FILL and GATHER_ND (int8, int16): integers copied into place, as TFLite's kernels copy them.

GATHER_ND reads each slice from the flat position Σ index_k · stride_k (stride_k the product of the params' axes
after k), as TFLite does. LiteRT fails the invocation on an index outside its axis: such constant indices are refused;
with run-time ones the position is clamped into the params (a void kernel cannot fail). Run-time indices are the
kernel's first input: the composite casts them to int64 before it gathers, so they are its first parameter.
"""
from __future__ import annotations

import numpy as np
from tvm import te

from .. import fixed_point
from ..spec import Fill, GatherNd
from ..te_kernel import Constant, TeKernel, constant, require

_DTYPES = ("int8", "int16")


def define_fill(op: Fill) -> TeKernel:
    require(op.dtype in _DTYPES, "fill", f"{op.dtype} values (supported: {', '.join(_DTYPES)})")
    value = te.placeholder((1,), op.dtype, name="value")
    size = int(np.prod(op.output_shape, dtype=np.int64))
    return TeKernel(inputs=(value,), output=te.compute((size,), lambda i: value[0], name="output"))


def define_gather_nd(op: GatherNd) -> TeKernel:
    require(op.dtype in _DTYPES, "gather_nd", f"{op.dtype} params (supported: {', '.join(_DTYPES)})")
    require(op.indices_dtype in ("int32", "int64"), "gather_nd", f"{op.indices_dtype} indices (supported: int32, "
            "int64)")
    depth, rank = op.indices_shape[-1] if op.indices_shape else -1, len(op.params_shape)
    require(0 <= depth <= rank, "gather_nd", f"indices of shape {op.indices_shape} for params of rank {rank}")
    require(op.params_values is None or op.indices_values is None, "gather_nd", "both operands are constants")
    size = int(np.prod(op.params_shape, dtype=np.int64))
    slices = int(np.prod(op.indices_shape[:-1], dtype=np.int64))
    slice_size = int(np.prod(op.params_shape[depth:], dtype=np.int64))
    strides = [int(np.prod(op.params_shape[k + 1:], dtype=np.int64)) for k in range(depth)]
    if op.params_values is None:
        params = te.placeholder((size,), op.dtype, name="params")
    else:
        params = constant(np.asarray(op.params_values, op.dtype).reshape(size), "params")
    if op.indices_values is None:
        indices = te.placeholder((slices, depth), op.indices_dtype, name="indices")

        def start(s):
            position = sum((indices[s, k] * strides[k] for k in range(depth)), te.const(0, op.indices_dtype))
            return fixed_point.clamp(position, 0, size - slice_size).astype("int32")
    else:
        require(np.shape(op.indices_values) == op.indices_shape, "gather_nd", f"constant indices of shape "
                f"{np.shape(op.indices_values)} for {op.indices_shape}")
        values = np.asarray(op.indices_values, np.int64).reshape(slices, depth)
        outside = (values < 0) | (values >= np.array(op.params_shape[:depth], np.int64))
        require(not outside.any(), "gather_nd", f"index {values[outside.any(axis=1)][:1].tolist()} is outside the "
                f"params {op.params_shape} (LiteRT fails on it)")
        indices = constant((values @ np.array(strides, np.int64)).astype(np.int32), "positions")

        def start(s):
            return indices[s]

    output = te.compute((slices, slice_size), lambda s, j: params[start(s) + j], name="output")
    operands = (params, indices) if op.indices_values is not None else (indices, params)
    return TeKernel(inputs=tuple(t for t in operands if not isinstance(t, Constant)), output=output,
                    constants=tuple(t for t in operands if isinstance(t, Constant)))
