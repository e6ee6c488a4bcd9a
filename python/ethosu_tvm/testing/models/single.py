"""Single-operator models: the table of op kinds and `make`."""
from __future__ import annotations

import inspect

import numpy as np

from .net import Net

# Ops with 16-bit activation kernels in both LiteRT and TFLite Micro (16x8 for the weighted ones), and in LiteRT only.
INT16_TFLM_LACKS = {"gather_nd", "fill", "div", "tile"}
INT16_OPS = INT16_TFLM_LACKS | {
    "conv2d", "depthwise_conv2d", "fully_connected", "avg_pool2d", "max_pool2d", "add", "sub", "mul",
    "minimum", "maximum", "tanh", "logistic", "softmax", "leaky_relu", "reshape", "quantize", "mean", "sum",
    "resize_nearest_neighbor", "split", "split_v", "strided_slice", "slice", "transpose", "pack", "unpack", "padv2",
    "concatenation", "transpose_conv",
    "reverse_v2", "broadcast_to", "cast", "select_v2",
}
# Ops with a uint8 variant: TFLite Micro's QUANTIZE between uint8 and int8 (a model's uint8 edges).
UINT8_OPS = ("quantize",)
# op kind -> (Net method, number of tensor inputs, default input shape)
SINGLE = {
    "conv2d": (Net.conv2d, 1, (1, 8, 8, 4)),
    "depthwise_conv2d": (Net.depthwise_conv2d, 1, (1, 8, 8, 8)),
    "fully_connected": (Net.fully_connected, 1, (1, 32)),
    "avg_pool2d": (Net.avg_pool2d, 1, (1, 8, 8, 8)),
    "max_pool2d": (Net.max_pool2d, 1, (1, 8, 8, 8)),
    "add": (Net.add, 2, (1, 8, 8, 8)),
    "sub": (Net.sub, 2, (1, 8, 8, 8)),
    "mul": (Net.mul, 2, (1, 8, 8, 8)),
    "div": (Net.div, 2, (1, 8, 8, 8)),
    "minimum": (Net.minimum, 2, (1, 8, 8, 8)),
    "maximum": (Net.maximum, 2, (1, 8, 8, 8)),
    "abs": (Net.abs, 1, (1, 8, 8, 8)),
    "leaky_relu": (Net.leaky_relu, 1, (1, 8, 8, 8)),
    "tanh": (Net.tanh, 1, (1, 8, 8, 8)),
    "logistic": (Net.logistic, 1, (1, 8, 8, 8)),
    "hard_swish": (Net.hard_swish, 1, (1, 8, 8, 8)),
    "softmax": (Net.softmax, 1, (1, 10)),
    "log_softmax": (Net.log_softmax, 1, (2, 10)),
    "l2_normalization": (Net.l2_normalization, 1, (1, 4, 4, 16)),
    "add_n": (Net.add_n, 1, (1, 8, 8, 8)),
    "equal": (Net.equal, 2, (1, 8, 8, 8)),
    "not_equal": (Net.not_equal, 2, (1, 8, 8, 8)),
    "greater": (Net.greater, 2, (1, 8, 8, 8)),
    "greater_equal": (Net.greater_equal, 2, (1, 8, 8, 8)),
    "less": (Net.less, 2, (1, 8, 8, 8)),
    "less_equal": (Net.less_equal, 2, (1, 8, 8, 8)),
    "select_v2": (Net.select_v2, 2, (1, 8, 8, 8)),
    "reshape": (Net.reshape, 1, (1, 4, 4, 8)),
    "concatenation": (Net.concatenation, 2, (1, 4, 4, 8)),
    "split": (Net.split, 1, (1, 4, 4, 8)),
    "strided_slice": (Net.strided_slice, 1, (1, 8, 8, 4)),
    "pad": (Net.pad, 1, (1, 8, 8, 4)),
    "mean": (Net.mean, 1, (1, 8, 8, 8)),
    "resize_nearest_neighbor": (Net.resize_nearest_neighbor, 1, (1, 8, 8, 4)),
    "resize_bilinear": (Net.resize_bilinear, 1, (1, 8, 8, 4)),
    "transpose_conv": (Net.transpose_conv, 1, (1, 8, 8, 4)),
    "quantize": (Net.quantize, 1, (1, 8, 8, 8)),
    "relu": (Net.relu, 1, (1, 8, 8, 8)),
    "relu6": (Net.relu6, 1, (1, 8, 8, 8)),
    "relu_n1_to_1": (Net.relu_n1_to_1, 1, (1, 8, 8, 8)),
    "relu_0_to_1": (Net.relu_0_to_1, 1, (1, 8, 8, 8)),
    "exp": (Net.exp, 1, (1, 8, 8, 8)),
    "log": (Net.log, 1, (1, 8, 8, 8)),
    "elu": (Net.elu, 1, (1, 8, 8, 8)),
    "gelu": (Net.gelu, 1, (1, 8, 8, 8)),
    "rsqrt": (Net.rsqrt, 1, (1, 8, 8, 8)),
    "prelu": (Net.prelu, 1, (1, 8, 8, 8)),
    "squared_difference": (Net.squared_difference, 2, (1, 8, 8, 8)),
    "sum": (Net.sum, 1, (1, 8, 8, 8)),
    "reduce_max": (Net.reduce_max, 1, (1, 8, 8, 8)),
    "reduce_min": (Net.reduce_min, 1, (1, 8, 8, 8)),
    "slice": (Net.slice, 1, (1, 8, 8, 4)),
    "squeeze": (Net.squeeze, 1, (1, 8, 8, 4)),
    "expand_dims": (Net.expand_dims, 1, (8, 8, 4)),
    "transpose": (Net.transpose, 1, (1, 4, 6, 8)),
    "pack": (Net.pack, 2, (1, 4, 4, 8)),
    "split_v": (Net.split_v, 1, (1, 4, 4, 8)),
    "unpack": (Net.unpack, 1, (3, 4, 8)),
    "depth_to_space": (Net.depth_to_space, 1, (1, 4, 4, 8)),
    "space_to_depth": (Net.space_to_depth, 1, (1, 8, 8, 4)),
    "mirror_pad": (Net.mirror_pad, 1, (1, 8, 8, 4)),
    "padv2": (Net.padv2, 1, (1, 8, 8, 4)),
    "reverse_v2": (Net.reverse_v2, 1, (1, 8, 8, 4)),
    "gather": (Net.gather, 1, (1, 8, 8, 6)),
    "broadcast_to": (Net.broadcast_to, 1, (1, 1, 8, 4)),
    "tile": (Net.tile, 1, (1, 4, 3, 4)),
    "gather_nd": (Net.gather_nd, 1, (1, 8, 8, 6)),
    "fill": (Net.fill, 1, ()),
    "space_to_batch_nd": (Net.space_to_batch_nd, 1, (1, 6, 6, 4)),
    "batch_to_space_nd": (Net.batch_to_space_nd, 1, (4, 4, 4, 4)),
    "neg": (Net.neg, 1, (1, 8, 8, 8)),
    "sqrt": (Net.sqrt, 1, (1, 8, 8, 8)),
    "batch_matmul": (Net.batch_matmul, 2, (1, 2, 8, 8)),
    "arg_max": (Net.arg_max, 1, (1, 8, 8, 8)),
    "arg_min": (Net.arg_min, 1, (1, 8, 8, 8)),
    "cast": (Net.cast, 1, (1, 8, 8, 8)),
}
OPS: tuple[str, ...] = tuple(SINGLE)
# Input quantization defaults of ops defined only for non-negative inputs (LiteRT's RSQRT fails on the others).
_INPUT_DEFAULTS = {"log": {"in_zp": -128}, "rsqrt": {"in_zp": -128}, "sqrt": {"in_zp": -128}}
# Parameters of a binary op's second operand, a feature map or (constant_lhs/constant_rhs) a constant.
_SECOND_OPERAND = {"in2_shape", "in2_scale", "in2_zp", "constant_lhs", "constant_rhs"}
# Ops taking a list of same-quantized inputs (`num_inputs` of them).
_LIST_OPS = ("concatenation", "pack", "add_n")
# Ops whose second operand must not reach its zero point (LiteRT fails the invocation): by default a constant
# without it.
_NONZERO_RHS = ("div",)
# Ops whose first operand is a bool condition, and its parameters.
_CONDITION_OPS = ("select_v2",)
_CONDITION = {"condition_shape", "constant_condition"}


def op_params(method) -> list[str]:
    return [p for p in inspect.signature(method).parameters
            if p not in ("self", "x", "a", "b", "inputs", "condition", "y")]


def _condition(net: Net, params: dict, shape) -> int:
    """The bool condition: the first model input, of `condition_shape` (default the input's), or with
    `constant_condition` a constant of that shape drawn from the seed."""
    shape = tuple(int(d) for d in params.pop("condition_shape", shape))
    if params.pop("constant_condition", False):
        return net._const(net.rng.integers(0, 2, size=shape).astype(np.bool_))
    return net.plain_input(shape, np.bool_)


def _operands(net: Net, first, params: dict, shape, dtype, quant, nonzero_rhs: bool) -> tuple:
    """The two operands of a binary op: `first` and a second input, or a constant on the side named (with
    `nonzero_rhs`, a right-hand constant never holds its zero point)."""
    sides = [side for side in ("lhs", "rhs") if f"constant_{side}" in params]
    if len(sides) == 2:
        raise ValueError("give constant_lhs or constant_rhs, not both")
    if sides and "in2_shape" in params:
        raise ValueError(f"constant_{sides[0]} gives the constant's shape; in2_shape is for a second input")
    if not sides:
        return first, net.input(tuple(params.pop("in2_shape", shape)), dtype, *quant)
    scale, zero_point = quant
    default_scale, default_zp = (1 / 2048, 0) if dtype == "int16" else (0.02, -3)
    zero_point = default_zp if zero_point is None else zero_point
    constant = net.constant(tuple(params.pop(f"constant_{sides[0]}")), dtype,
                            default_scale if scale is None else scale, zero_point,
                            zero_point if nonzero_rhs and sides[0] == "rhs" else None)
    return (constant, first) if sides[0] == "lhs" else (first, constant)


def make(op: str, seed: int = 0, **params) -> bytes:
    """A .tflite model with the single operator `op` (one of `OPS`), its inputs named input_0, input_1, ...

    Input parameters: `in_shape`, `dtype` ("int8", "int16", or "uint8" for quantize), `in_scale`, `in_zp`;
    `per_tensor_axis` sets the QuantizedDimension of every single-scale tensor (as TFLite Micro's person_detect has
    3); `float_io=True` gives the model float32 inputs and outputs around QUANTIZE and DEQUANTIZE operators; binary
    ops also take `in2_shape`, `in2_scale`, `in2_zp` (broadcasting allowed), or make one operand a constant of that
    quantization with `constant_lhs=shape` or `constant_rhs=shape` (values from the seed); concatenation takes
    `num_inputs`; div's divisor is, unless another second operand is given, a constant of the input's last axis
    without its zero point (a divisor there fails LiteRT's invocation); select_v2 takes `condition_shape` and
    `constant_condition` (see `_condition`). Every other parameter is the op's own (see the `Net` method of the same
    name). Bad values raise ValueError.
    """
    if op not in SINGLE:
        raise ValueError(f"unknown op kind {op!r}; known: {', '.join(OPS)}")
    method, arity, default_shape = SINGLE[op]
    allowed = set(op_params(method)) | {"in_shape", "dtype", "in_scale", "in_zp", "per_tensor_axis", "float_io"}
    allowed |= _SECOND_OPERAND if arity == 2 and op not in _LIST_OPS else set()
    allowed |= {"num_inputs"} if op in _LIST_OPS else set()
    allowed |= _CONDITION if op in _CONDITION_OPS else set()
    unknown = sorted(set(params) - allowed)
    if unknown:
        raise ValueError(f"unknown parameter(s) {', '.join(unknown)} for op {op!r}; "
                         f"valid: {', '.join(sorted(allowed))}")
    params = {**_INPUT_DEFAULTS.get(op, {}), **params}
    dtype = params.pop("dtype", "int8")
    if dtype not in ("int8", "int16", "uint8"):
        raise ValueError(f"dtype must be 'int8', 'int16' or 'uint8', got {dtype!r}")
    if dtype == "uint8" and op not in UINT8_OPS:
        raise ValueError(f"op {op!r} has no uint8 variant here; only quantize takes uint8 (into int8)")
    if dtype == "int16" and op not in INT16_OPS:
        raise ValueError(f"op {op!r} has no int16 variant here; int16 ops: {', '.join(sorted(INT16_OPS))}")
    shape = tuple(params.pop("in_shape", default_shape))
    net = Net(seed, f"ethosu_tvm.testing.models:{op}", params.pop("per_tensor_axis", None),
              params.pop("float_io", False))
    leading = (_condition(net, params, shape),) if op in _CONDITION_OPS else ()
    first = net.input(shape, dtype, params.pop("in_scale", None), params.pop("in_zp", None))
    if op in _LIST_OPS:
        count = params.pop("num_inputs", 2)
        if count < 1:
            raise ValueError("num_inputs must be at least 1")
        inputs = [first] + [net.input(shape, dtype, first.scale, first.zero_point) for _ in range(count - 1)]
        result = method(net, inputs, **params)
    elif arity == 2:
        same = op in ("minimum", "maximum")
        default_scale, default_zp = (first.scale, first.zero_point) if same else (None, None)
        quant = (params.pop("in2_scale", default_scale),
                 params.pop("in2_zp", default_zp if same else (None if dtype == "int8" else 0)))
        if op in _NONZERO_RHS and not _SECOND_OPERAND & set(params):
            params["constant_rhs"] = shape[-1:]
        result = method(net, *leading, *_operands(net, first, params, shape, dtype, quant, op in _NONZERO_RHS),
                        **params)
    else:
        result = method(net, first, **params)
    for tensor in result if isinstance(result, list) else [result]:
        net.output(tensor)
    return net.build()
