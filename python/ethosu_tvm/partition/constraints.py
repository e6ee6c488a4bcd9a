"""Ethos-U55 operator constraints, as facts taken from Vela's supported-operator checks, in our own code.

Each check takes a :class:`Match` and returns the reason the operator must stay on the host, or "" when the NPU can
run it. Reasons are one line and name the limit, so the offload report explains itself.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..qdq.match import Match
from ..qdq.values import Quant, const_value, dtype_of, is_const, quant_of, shape_of, slice_parameters
from ..quantization import (
    MAX_NPU_SHIFT,
    conv_multipliers,
    fully_connected_multipliers,
    mean_multiplier,
    per_channel_scale_shift,
    prelu_multipliers,
    quantize_multiplier,
    shifts_in_range,
    squared_difference_multipliers,
)

TENSOR_DIM_RANGE = (1, 65535)
STRIDE_RANGE = (1, 3)
MAX_DILATED_KERNEL_HEIGHT = 64
MAX_DILATED_KERNEL_AREA = 64 * 64
MAX_WEIGHT_SUM = 127 * 65536
MAX_PADDED_AVG_POOL_KERNEL = 8
MAX_POOL_KERNEL_HEIGHT = 256
MAX_POOL_KERNEL_AREA = 256 * 256
# Unpadded average pools whose IFM block does not fit in SHRAM run as depthwise convolutions, so their kernels
# stay within the depthwise limits (Vela instead splits larger pools, which we do not do yet).
MAX_AVG_KERNEL_HEIGHT = MAX_DILATED_KERNEL_HEIGHT
MAX_AVG_KERNEL_AREA = MAX_DILATED_KERNEL_AREA
SUPPORTED_DTYPES = ("int8",)
ELEMENTWISE_DTYPES = ("int8", "int16")  # binary elementwise operators
# Copies (data movement) move the integers unchanged: a 1x1 max pool does so for 16-bit feature maps too.
COPY_DTYPES = ("int8", "int16")


def _first(*reasons: Callable[[], str]) -> str:
    """Evaluate checks in order and return the first failure (later checks may rely on earlier ones)."""
    for reason in reasons:
        text = reason()
        if text:
            return text
    return ""


def _feature_map(expr, what: str, batch_one: bool = True, dtypes: tuple[str, ...] = SUPPORTED_DTYPES) -> str:
    shape, dtype = shape_of(expr), dtype_of(expr)
    if dtype not in dtypes:
        return f"{what} has data type {dtype}; tensors must be of type {', '.join(dtypes)}"
    if len(shape) > 4:
        return f"{what} is {len(shape)}-D; tensors must not be greater than 4-D"
    low, high = TENSOR_DIM_RANGE
    if not all(low <= d <= high for d in shape):
        return f"{what} has shape {shape}; tensor dimensions must be in the range [{low}, {high}]"
    if batch_one and len(shape) == 4 and shape[0] != 1:
        return f"{what} has batch size {shape[0]}; the IFM batch size must be 1"
    return ""


def _feature_map_input(expr, what: str, batch_one: bool = True, dtypes: tuple[str, ...] = COPY_DTYPES) -> str:
    """An input a copy reads: a feature map, not a model constant (the frontend leaves those to fold, or to the
    operator that takes them, such as a fully connected layer's transposed weights)."""
    if is_const(expr):
        return f"{what} is a constant; the NPU copies feature maps"
    return _feature_map(expr, what, batch_one, dtypes)


def _activation_quant(quant: Quant, what: str) -> str:
    if quant.per_axis:
        return f"{what} has per-axis quantization; per-axis quantization is only supported on weights"
    if not np.all(np.isfinite(quant.scale)) or not np.all(quant.scale > 0):
        return f"{what} has scale {quant.scale.tolist()}; quantization scales must be finite and positive"
    return ""


def _strides(strides, ofm_shape: tuple[int, ...]) -> str:
    """Stride limits apply only along axes with more than one output element (Vela's rule too)."""
    low, high = STRIDE_RANGE
    out_hw = ofm_shape[1:3]
    if not all(low <= s <= high or extent == 1 for s, extent in zip(strides, out_hw)):
        return f"stride HxW is {strides[0]}x{strides[1]}; stride values must be in the range [{low}, {high}]"
    return ""


def _scale_range(multipliers: np.ndarray) -> str:
    _, shift = per_channel_scale_shift(multipliers)
    if not shifts_in_range(shift):
        return (f"effective output scale {float(np.max(multipliers)):.3g} is outside what the NPU's 32-bit scale and"
                " 6-bit shift can represent")
    return ""


def _weights(weights: np.ndarray, zero_point: np.ndarray, axes: tuple[int, ...]) -> str:
    """The sum of |w - zp| over one output channel must fit the NPU's accumulator limit."""
    centred = np.abs(weights.astype(np.int64) - zero_point.reshape(-1)[0])
    total = int(np.max(np.sum(centred, axis=axes)))
    if total > MAX_WEIGHT_SUM:
        return f"the sum of the weights is {total}; it cannot exceed {MAX_WEIGHT_SUM}"
    return ""


def _requant_quants(match: Match) -> tuple[Quant, Quant, Quant]:
    return quant_of(match["ifm_dq"]), quant_of(match["weights_dq"]), quant_of(match["quantize"])


def _conv_common(match: Match, weight_axes: tuple[int, ...]) -> str:
    conv = match["conv"]
    attrs = conv.attrs
    kernel_h, kernel_w = shape_of(conv.args[1])[:2]
    dil_h, dil_w = (int(d) for d in attrs.dilation)
    dilated_h, dilated_w = dil_h * (kernel_h - 1) + 1, dil_w * (kernel_w - 1) + 1
    ifm_q, w_q, ofm_q = _requant_quants(match)
    weights = const_value(match["weights"])
    return _first(
        lambda: _feature_map(match["ifm"], "IFM"),
        lambda: _feature_map(match["quantize"], "OFM"),
        lambda: "" if str(attrs.data_layout) == "NHWC" else f"data layout {attrs.data_layout} is not NHWC",
        lambda: _activation_quant(ifm_q, "IFM"),
        lambda: _activation_quant(ofm_q, "OFM"),
        lambda: _strides([int(s) for s in attrs.strides], shape_of(conv)),
        lambda: "" if dilated_h <= MAX_DILATED_KERNEL_HEIGHT else
        f"dilated kernel height is {dilated_h}; it must be in the range [1, {MAX_DILATED_KERNEL_HEIGHT}]",
        lambda: "" if dilated_h * dilated_w <= MAX_DILATED_KERNEL_AREA else
        f"dilated kernel area is {dilated_h * dilated_w}; it must be in the range [1, {MAX_DILATED_KERNEL_AREA}]",
        # The NPU's weight encoding takes dilations 1 and 2 only.
        lambda: "" if max(dil_h, dil_w) <= 2 else f"dilation {dil_h}x{dil_w}; each must be 1 or 2",
        lambda: _weights(weights, w_q.zero_point, weight_axes),
        lambda: _scale_range(conv_multipliers(ifm_q.scalar_scale, w_q.scale, ofm_q.scalar_scale)),
    )


def check_conv2d(match: Match) -> str:
    conv = match["conv"]
    if int(conv.attrs.groups) != 1:
        return f"grouped convolution (groups={int(conv.attrs.groups)}) is not supported"
    return _conv_common(match, weight_axes=(0, 1, 2))  # HWIO: sum over H, W, I


def check_depthwise_conv2d(match: Match) -> str:
    conv = match["conv"]
    channels_in = shape_of(match["ifm"])[3]
    channels_out = shape_of(conv)[3]
    groups = int(conv.attrs.groups)
    if groups != channels_in:
        return f"grouped convolution (groups={groups}, {channels_in} input channels) is not supported"
    multiplier = channels_out // channels_in
    if multiplier > 1 and channels_in != 1:
        return (f"depth multiplier {multiplier} with {channels_in} IFM channels; for depth multipliers > 1 the IFM"
                " must have 1 channel")
    return _conv_common(match, weight_axes=(0, 1, 3))  # TFLite [1, H, W, C·M]: sum over H, W


def check_fully_connected(match: Match) -> str:
    ifm_q, w_q, ofm_q = _requant_quants(match)
    weights = const_value(match["weights"])  # TFLite [units, inputs]
    return _first(
        lambda: _feature_map(match["ifm"], "IFM", batch_one=False),
        lambda: "" if len(shape_of(match["ifm"])) == 2 else f"IFM is {len(shape_of(match['ifm']))}-D, expected 2-D",
        lambda: _feature_map(match["quantize"], "OFM", batch_one=False),
        lambda: _activation_quant(ifm_q, "IFM"),
        lambda: _activation_quant(ofm_q, "OFM"),
        lambda: _weights(weights, w_q.zero_point, (1,)),
        lambda: _scale_range(fully_connected_multipliers(ifm_q.scalar_scale, w_q.scale, ofm_q.scalar_scale)),
    )


def _pool_common(match: Match) -> str:
    attrs = match["pool"].attrs
    return _first(
        lambda: _feature_map(match["ifm"], "IFM"),
        lambda: _feature_map(match["out"], "OFM"),
        lambda: "" if str(attrs.layout) == "NHWC" else f"layout {attrs.layout} is not NHWC",
        lambda: "" if not bool(attrs.ceil_mode) else "ceil_mode pooling is not supported",
        lambda: _strides([int(s) for s in attrs.strides], shape_of(match["pool"])),
    )


def check_avg_pool2d(match: Match) -> str:
    attrs = match["pool"].attrs
    kernel_h, kernel_w = (int(k) for k in attrs.pool_size)
    padded = any(int(p) for p in attrs.padding)
    limit = MAX_PADDED_AVG_POOL_KERNEL

    def kernel() -> str:
        if padded and not (kernel_h <= limit and kernel_w <= limit):
            return f"padded average pool kernel HxW is {kernel_h}x{kernel_w}; it must be in the range [1, {limit}]"
        return _average_kernel(kernel_h, kernel_w)

    return _first(
        lambda: _pool_common(match),
        lambda: "count_include_pad average pooling is not supported" if bool(attrs.count_include_pad) else "",
        kernel,
    )


def _average_kernel(kernel_h: int, kernel_w: int, what: str = "average pool kernel", unit: str = "taps") -> str:
    if kernel_h > MAX_AVG_KERNEL_HEIGHT or kernel_h * kernel_w > MAX_AVG_KERNEL_AREA:
        return (f"{what} HxW is {kernel_h}x{kernel_w}; at most {MAX_AVG_KERNEL_HEIGHT} high and"
                f" {MAX_AVG_KERNEL_AREA} {unit} are supported")
    return ""


def _pool_kernel(kernel_h: int, kernel_w: int) -> str:
    if kernel_h > MAX_POOL_KERNEL_HEIGHT:
        return f"pool kernel height is {kernel_h}; it must be in the range [1, {MAX_POOL_KERNEL_HEIGHT}]"
    if kernel_h * kernel_w > MAX_POOL_KERNEL_AREA:
        return f"pool kernel area is {kernel_h * kernel_w}; it must be in the range [1, {MAX_POOL_KERNEL_AREA}]"
    return ""


def check_max_pool2d(match: Match) -> str:
    kernel_h, kernel_w = (int(k) for k in match["pool"].attrs.pool_size)
    return _first(lambda: _pool_common(match), lambda: _pool_kernel(kernel_h, kernel_w))


def _broadcast(lhs: tuple[int, ...], rhs: tuple[int, ...], out: tuple[int, ...]) -> str:
    if out not in (lhs, rhs):
        return f"operand shapes {lhs} and {rhs}; at least one operand's shape must match the OFM's shape {out}"
    size = min(len(lhs), len(rhs))
    for a, b, o in zip(lhs[len(lhs) - size:], rhs[len(rhs) - size:], out[len(out) - size:]):
        if not (a == b or a == 1 or b == 1) or o != max(a, b):
            return (f"operand shapes {lhs} and {rhs}; broadcasting is only allowed for dimensions of size 1, from"
                    " either operand")
    return ""


# Scalars that make the result independent of the IFM (code generation finds the IFM through its reads):
# a MUL by real 0, a MINIMUM with the dtype's minimum, a MAXIMUM with its maximum.
_ABSORBING = {"multiply": lambda value, zero_point, info: value == zero_point,
              "minimum": lambda value, zero_point, info: value == info.min,
              "maximum": lambda value, zero_point, info: value == info.max}


def _constant_operand(match: Match) -> str:
    """A one-element constant operand is the NPU's IFM2 scalar (operands reversed when it is the left one), a larger
    one a tensor in the constant region (IFM2, or the IFM when the feature map is the operand that broadcasts)."""
    roles = [role for role in ("lhs", "rhs") if is_const(match[role])]
    if len(roles) == 2:
        return "both operands are constants"
    if not roles:
        return ""
    constant = match[roles[0]]
    if int(np.prod(shape_of(constant))) != 1:
        return ""
    value = int(np.asarray(const_value(constant)).reshape(-1)[0])
    absorbing = _ABSORBING.get(match.kind, lambda *_: False)
    if absorbing(value, quant_of(match[f"{roles[0]}_dq"]).scalar_zero_point, np.iinfo(dtype_of(constant))):
        return f"a constant operand {value} that makes the result independent of the IFM"
    return ""


def _binary(match: Match, same_quant: bool) -> str:
    lhs_q, rhs_q, ofm_q = quant_of(match["lhs_dq"]), quant_of(match["rhs_dq"]), quant_of(match["quantize"])

    def matching() -> str:
        if same_quant and not all(
            q.scalar_scale == ofm_q.scalar_scale and q.scalar_zero_point == ofm_q.scalar_zero_point
            for q in (lhs_q, rhs_q)
        ):
            return "both input quantization parameters must match the OFM quantization parameters"
        return ""

    def same_type() -> str:
        types = [dtype_of(match[role]) for role in ("lhs", "rhs", "quantize")]
        return "" if len(set(types)) == 1 else f"operand and result types {', '.join(types)}; they must be the same"

    return _first(
        lambda: _constant_operand(match),
        lambda: "" if is_const(match["lhs"]) else _feature_map(match["lhs"], "IFM", dtypes=ELEMENTWISE_DTYPES),
        lambda: "" if is_const(match["rhs"]) else _feature_map(match["rhs"], "IFM2", dtypes=ELEMENTWISE_DTYPES),
        lambda: _feature_map(match["quantize"], "OFM", dtypes=ELEMENTWISE_DTYPES),
        same_type,
        lambda: _activation_quant(lhs_q, "IFM"),
        lambda: _activation_quant(rhs_q, "IFM2"),
        lambda: _activation_quant(ofm_q, "OFM"),
        lambda: _broadcast(shape_of(match["lhs"]), shape_of(match["rhs"]), shape_of(match["quantize"])),
        matching,
    )


def reduced_axes(match: Match) -> tuple[int, ...]:
    """The axes a MEAN, SUM, REDUCE_MAX or REDUCE_MIN reduces, non-negative and sorted (None in Relax: all)."""
    rank = len(shape_of(match["ifm"]))
    axis = match["reduce"].attrs.axis
    return tuple(range(rank)) if axis is None else tuple(sorted({int(a) % rank for a in axis}))


def reduction_window(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[
        tuple[int, int, int, int], tuple[int, int], tuple[int, int, int] | None]:
    """The NPU's form of a reduction of a tensor of batch 1: (4-D IFM view, kernel (height, width), swap), one
    window covering the reduced elements of each output element. Height and width are reduced in place. Otherwise
    the reduced axes (extent-1 axes aside) are made adjacent: when they are the first and the last of three, the
    tensor, seen as (A, B, C), is first transposed to (B, A, C) (`swap` is then (A, B, C)). The tensor is then seen
    as (1, outer, reduced, inner) and reduced along its width."""
    full = (1,) * (4 - len(shape)) + tuple(shape)
    axes = tuple(a + 4 - len(shape) for a in axes)
    wide = [a for a in axes if full[a] != 1]
    if all(a in (1, 2) for a in wide):
        return full, (full[1] if 1 in wide else 1, full[2] if 2 in wide else 1), None
    if not wide:
        return (1, 1, 1, int(np.prod(full))), (1, 1), None
    kept = [a for a in range(wide[0], wide[-1] + 1) if full[a] != 1 and a not in wide]
    if kept:  # at most three axes are wider than 1: the middle one is kept
        swap = (full[wide[0]], full[kept[0]], full[wide[-1]])
        return (1, swap[1], swap[0] * swap[2], 1), (1, swap[0] * swap[2]), swap
    outer, reduced, inner = (int(np.prod(part)) for part in (full[:wide[0]], full[wide[0]:wide[-1] + 1],
                                                             full[wide[-1] + 1:]))
    return (1, outer, reduced, inner), (1, reduced), None


def _reduction(match: Match, kernel_check: Callable[[int, int], str], dtypes: tuple[str, ...]) -> str:
    """What every reduction on the NPU needs: feature maps (batch 1), per-tensor quantization, and a window whose
    view and kernel the NPU takes."""
    shape, axes = shape_of(match["ifm"]), reduced_axes(match)
    what = match.kind.upper()

    def window() -> str:
        view, (kernel_h, kernel_w), _ = reduction_window(shape, axes)
        low, high = TENSOR_DIM_RANGE
        if not all(low <= d <= high for d in view):
            return f"{what} viewed as {view}; each extent must be in the range [{low}, {high}]"
        return kernel_check(kernel_h, kernel_w)

    return _first(
        lambda: _feature_map(match["ifm"], "IFM", dtypes=dtypes),
        lambda: _feature_map(match["quantize"], "OFM", batch_one=False, dtypes=dtypes),
        lambda: _activation_quant(quant_of(match["ifm_dq"]), "IFM"),
        lambda: _activation_quant(quant_of(match["quantize"]), "OFM"),
        window,
    )


def _depthwise_kernel(kernel_h: int, kernel_w: int) -> str:
    """A sum runs as a depthwise convolution with unit weights: its kernel limits apply (those of the average pools
    that run as one)."""
    return _average_kernel(kernel_h, kernel_w, "reduction window", "elements")


def mean_as_average(match: Match) -> bool:
    """Whether a MEAN is an average pool: over height and width of a 4-D tensor with equal scales (TFLite's
    integer Mean kernel). Other MEANs are sums, requantized as TFLite's QuantizedMeanOrSum does."""
    ifm_q, ofm_q = quant_of(match["ifm_dq"]), quant_of(match["quantize"])
    return (len(shape_of(match["ifm"])) == 4 and reduced_axes(match) == (1, 2)
            and ifm_q.scalar_scale == ofm_q.scalar_scale)


def reduction_count(match: Match) -> int:
    """How many input elements each output element of a reduction reduces."""
    shape = shape_of(match["ifm"])
    return int(np.prod([shape[a] for a in reduced_axes(match)]))


def sum_multiplier(match: Match) -> tuple[int, int]:
    """TFLite's (multiplier, left shift) of a SUM, or of a MEAN that is no average pool, for the centred sum:
    input scale / output scale in double, with MEAN's 1/count folded in."""
    ifm_q, ofm_q = quant_of(match["ifm_dq"]), quant_of(match["quantize"])
    real = float(np.float64(ifm_q.scalar_scale) / np.float64(ofm_q.scalar_scale))
    if match.kind == "mean":
        return mean_multiplier(real, reduction_count(match))
    return quantize_multiplier(real)


def check_sum(match: Match) -> str:
    """SUM (8- and 16-bit), and MEAN other than an average pool: a depthwise convolution with unit weights over the
    reduction window, the centred sum requantized by TFLite's multiplier (the NPU's 6-bit shift must hold it)."""

    def scale() -> str:
        multiplier, shift = sum_multiplier(match)
        if multiplier == 0 or not shifts_in_range(31 - shift):
            return (f"{match.kind.upper()} multiplier {multiplier} · 2^({shift} − 31); the NPU's right shift must be"
                    f" in the range [0, {MAX_NPU_SHIFT}]")
        return ""

    return _first(lambda: _reduction(match, _depthwise_kernel, COPY_DTYPES), scale)


def check_mean(match: Match) -> str:
    """MEAN over height and width with equal scales is an average pool of the centred values (TFLite's integer
    Mean kernel); other MEANs are 8-bit sums (see `check_sum`)."""
    shape = shape_of(match["ifm"])
    if not mean_as_average(match):
        return _first(lambda: _feature_map(match["ifm"], "IFM"), lambda: check_sum(match))
    return _first(
        lambda: _feature_map(match["ifm"], "IFM"),
        lambda: _activation_quant(quant_of(match["ifm_dq"]), "IFM"),
        lambda: _activation_quant(quant_of(match["quantize"]), "OFM"),
        lambda: _average_kernel(shape[1], shape[2]),
    )


def check_reduce_extreme(match: Match) -> str:
    """REDUCE_MAX (REDUCE_MIN: of the inputs' bitwise complements, a table) is a max pool over the reduction
    window of the raw int8 values; TFLite requires the output to keep the input's quantization."""
    ifm_q, ofm_q = quant_of(match["ifm_dq"]), quant_of(match["quantize"])

    def same_quant() -> str:
        if (ifm_q.scalar_scale, ifm_q.scalar_zero_point) != (ofm_q.scalar_scale, ofm_q.scalar_zero_point):
            return f"{match.kind.upper()} with different input and output quantizations"
        return ""

    return _first(lambda: _reduction(match, _pool_kernel, SUPPORTED_DTYPES), same_quant)


ARG_MAX_DEPTH = 127  # the reversed index takes the low 7 bits below the value


def check_arg_max(match: Match) -> str:
    """int8 ARG_MAX over the depth axis into int32 indices: each value shifted left by 7 bits with its reversed index
    below (so ties go to the first index), a max pool over the depth, and the index recovered from the low bits."""
    shape = shape_of(match["ifm"])
    axis, index_dtype = int(match["arg"].attrs.axis) % len(shape), dtype_of(match["cast"])

    def form() -> str:
        if axis != len(shape) - 1:
            return f"ARG_MAX over axis {axis} of a {len(shape)}-D tensor; only over the last (depth) axis"
        if shape[-1] > ARG_MAX_DEPTH:
            return f"ARG_MAX over {shape[-1]} values; the IFM depth must be at most {ARG_MAX_DEPTH}"
        if index_dtype != "int32":
            return f"ARG_MAX with {index_dtype} indices; the NPU writes int32 ones"
        rows, high = int(np.prod(shape[:-1])), TENSOR_DIM_RANGE[1]
        return "" if rows <= high else f"ARG_MAX over {rows} rows (all but the depth axis); at most {high}"

    return _first(lambda: _feature_map(match["ifm"], "IFM"), form)


def check_lookup(match: Match) -> str:
    """Unary int8 functions become a 256-entry table: only the feature maps and their quantization matter."""
    return _first(
        lambda: _feature_map(match["ifm"], "IFM", batch_one=False),
        lambda: _feature_map(match["quantize"], "OFM", batch_one=False),
        lambda: _activation_quant(quant_of(match["ifm_dq"]), "IFM"),
        lambda: _activation_quant(quant_of(match["quantize"]), "OFM"),
    )


def check_prelu(match: Match) -> str:
    """PRELU is a table, a MIN with the input zero point, a MUL by alpha (a constant IFM2, broadcast by the NPU)
    and a MAX: int8 feature maps, an int8 alpha of one scale that broadcasts to the input."""
    ifm_q, alpha_q, ofm_q = quant_of(match["ifm_dq"]), quant_of(match["alpha_dq"]), quant_of(match["quantize"])
    shape, alpha_shape = shape_of(match["ifm"]), shape_of(match["alpha"])

    def alpha() -> str:
        if dtype_of(match["alpha"]) != "int8":
            return f"alpha has data type {dtype_of(match['alpha'])}; it must be int8"
        if len(alpha_shape) > len(shape) or any(a not in (1, d) for a, d in zip(alpha_shape[::-1], shape[::-1])):
            return f"alpha of shape {alpha_shape} does not broadcast to the input {shape}"
        return ""

    return _first(
        lambda: _feature_map(match["ifm"], "IFM"),
        lambda: _feature_map(match["quantize"], "OFM"),
        lambda: _activation_quant(ifm_q, "IFM"),
        lambda: _activation_quant(alpha_q, "alpha"),
        lambda: _activation_quant(ofm_q, "OFM"),
        alpha,
        lambda: _scale_range(np.array(prelu_multipliers(ifm_q.scalar_scale, alpha_q.scalar_scale,
                                                        ofm_q.scalar_scale)[1:])),
    )


def check_squared_difference(match: Match) -> str:
    """Five elementwise operations on 32-bit intermediates; their difference broadcasts as binary operands do."""
    lhs_q, rhs_q, ofm_q = quant_of(match["lhs_dq"]), quant_of(match["rhs_dq"]), quant_of(match["quantize"])
    return _first(
        lambda: "a constant operand; the NPU takes two feature maps" if is_const(match["lhs"]) or is_const(
            match["rhs"]) else "",
        lambda: _feature_map(match["lhs"], "IFM"),
        lambda: _feature_map(match["rhs"], "IFM2"),
        lambda: _feature_map(match["quantize"], "OFM"),
        lambda: _activation_quant(lhs_q, "IFM"),
        lambda: _activation_quant(rhs_q, "IFM2"),
        lambda: _activation_quant(ofm_q, "OFM"),
        lambda: _broadcast(shape_of(match["lhs"]), shape_of(match["rhs"]), shape_of(match["quantize"])),
        lambda: _scale_range(np.array(squared_difference_multipliers(lhs_q.scalar_scale, rhs_q.scalar_scale,
                                                                     ofm_q.scalar_scale))),
    )


SOFTMAX_OUTPUT = (1.0 / 256.0, -128)  # TFLite fixes the int8 output quantization


def check_softmax(match: Match) -> str:
    """int8 SOFTMAX over the last axis, as Vela's sequence of NPU operations (bit-exact with TFLite's kernel). The
    rows are the NPU's height and width, so their number is limited like a dimension (Vela's own limit)."""
    shape = shape_of(match["ifm"])

    def axis() -> str:
        value = int(match["core"].attrs.axis)
        return "" if value in (-1, len(shape) - 1) else f"softmax over axis {value}; only the last axis is supported"

    def beta() -> str:
        value = match.get("beta")
        size = 1 if value is None else np.asarray(const_value(value)).size
        return "" if size == 1 else f"beta has {size} values; it must be a scalar"

    def output() -> str:
        ofm = quant_of(match["quantize"])
        found = (ofm.scalar_scale, ofm.scalar_zero_point)
        return "" if found == SOFTMAX_OUTPUT else (f"OFM quantization (scale, zero point) is {found}; "
                                                   "int8 softmax needs (1/256, -128)")

    def rows() -> str:
        count = int(np.prod(shape[:-1])) if len(shape) > 1 else 1
        high = TENSOR_DIM_RANGE[1]
        return "" if count <= high else (f"IFM has {count} rows (product of all but the last dimension); "
                                         f"softmax rows must be at most {high}")

    return _first(
        lambda: _feature_map(match["ifm"], "IFM"),
        lambda: _feature_map(match["quantize"], "OFM"),
        lambda: _activation_quant(quant_of(match["ifm_dq"]), "IFM"),
        lambda: _activation_quant(quant_of(match["quantize"]), "OFM"),
        axis,
        beta,
        output,
        rows,
    )


def check_reshape(match: Match) -> str:
    """A copy of the same integers in another shape (8- or 16-bit)."""
    return _first(
        lambda: _feature_map_input(match["ifm"], "IFM", batch_one=False),
        lambda: _feature_map(match["reshape"], "OFM", batch_one=False, dtypes=COPY_DTYPES),
    )


def _npu_axis(axis: int, rank: int) -> int:
    """An axis of a rank-`rank` tensor in the 4-D NHWC shape the NPU sees (leading 1s)."""
    return axis % rank + 4 - rank


def check_concatenation(match: Match) -> str:
    """One copy per input into a box of the OFM: boxes are 3-D (batch 1), and the integers are copied unchanged."""
    concat = match["concat"]
    count = len(concat.args[0].fields)
    ofm_q = quant_of(match["quantize"])

    def axis() -> str:
        npu_axis = _npu_axis(int(concat.attrs.axis), len(shape_of(concat)))
        return "" if npu_axis > 0 else "CONCATENATION along the batch axis; the NPU copies 3-D boxes"

    def same_quant(index: int) -> str:
        q = quant_of(match[f"input{index}_dq"])
        if q.scalar_scale != ofm_q.scalar_scale or q.scalar_zero_point != ofm_q.scalar_zero_point:
            return (f"input {index} is quantized ({q.scalar_scale:.6g}, {q.scalar_zero_point}), the output"
                    f" ({ofm_q.scalar_scale:.6g}, {ofm_q.scalar_zero_point}); the inputs must share the output's"
                    " quantization")
        return ""

    return _first(
        *(lambda i=i: _feature_map_input(match[f"input{i}"], f"input {i}", dtypes=SUPPORTED_DTYPES)
          for i in range(count)),
        lambda: _feature_map(match["quantize"], "OFM"),
        lambda: _activation_quant(ofm_q, "OFM"),
        *(lambda i=i: _activation_quant(quant_of(match[f"input{i}_dq"]), f"input {i}") for i in range(count)),
        *(lambda i=i: same_quant(i) for i in range(count)),
        axis,
    )


def check_pack(match: Match) -> str:
    """A concatenation of the inputs along the new axis (each input copied into its box of the OFM)."""
    concat = match["concat"]
    count = len(concat.args[0].fields)
    rank = len(shape_of(concat))
    axis = int(concat.attrs.axis) % rank

    def axes() -> str:
        for i in range(count):
            expand_axes = [int(a) % rank for a in match[f"expand{i}"].attrs.axis]
            if expand_axes != [axis]:
                return f"input {i} gains axes {expand_axes}, the concatenation is along {axis}"
        return "" if _npu_axis(axis, rank) > 0 else "PACK along the batch axis; the NPU copies 3-D boxes"

    return _first(
        *(lambda i=i: _feature_map_input(match[f"input{i}"], f"input {i}", batch_one=False) for i in range(count)),
        lambda: _feature_map(concat, "OFM", dtypes=COPY_DTYPES),
        axes,
    )


def check_pad(match: Match) -> str:
    """PAD and PADV2 with a constant: the IFM copied into its box of the OFM, constant blocks copied around it."""
    attrs = match["pad"].attrs

    def value() -> str:
        pad_value, info = float(attrs.pad_value), np.iinfo(dtype_of(match["ifm"]))
        if pad_value.is_integer() and info.min <= pad_value <= info.max:
            return ""
        return f"pad value {pad_value} is not an {info.dtype} integer"

    return _first(
        lambda: _feature_map_input(match["ifm"], "IFM"),
        lambda: _feature_map(match["pad"], "OFM", dtypes=COPY_DTYPES),
        lambda: "" if str(attrs.pad_mode) == "constant" else f"{attrs.pad_mode} padding; only constant padding",
        value,
    )


def check_strided_slice(match: Match) -> str:
    """A copy of a box of the IFM, strided on height and width as a 1x1 pool strides; the box must have batch 1
    (the NPU copies 3-D boxes), the IFM need not."""
    call = match["slice"]
    shape = shape_of(match["ifm"])
    axes, begin, strides = slice_parameters(call)
    strides_4d = (1,) * (4 - len(strides)) + strides

    def box() -> str:
        if axes != tuple(range(len(shape))) or not all(0 <= b < d for b, d in zip(begin, shape)):
            return f"strided slice over axes {axes} from {begin}; every axis from a start inside it"
        sliced = (1,) * (4 - len(shape)) + shape_of(call)
        if any(s != 1 and sliced[axis] > 1 for axis, s in ((0, strides_4d[0]), (3, strides_4d[3]))):
            return f"strides {strides}; the NPU strides only height and width"
        if any(s < 1 for s in strides_4d[1:3]):
            return f"strides {strides}; the NPU strides forwards"
        return _strides(strides_4d[1:3], sliced)

    return _first(
        lambda: _feature_map_input(match["ifm"], "IFM", batch_one=False),
        lambda: _feature_map(call, "OFM", dtypes=COPY_DTYPES),
        box,
        lambda: "" if match.get("reshape") is None else _feature_map(match["reshape"], "OFM", False, COPY_DTYPES),
    )


def check_resize_nearest_neighbor(match: Match) -> str:
    """The NPU's NEAREST upscaling doubles height and width: TFLite's nearest neighbour by exactly 2, whose output
    (y, x) reads (y // 2, x // 2) unless corners are aligned."""
    attrs = match["resize"].attrs
    (_, height, width, _), (_, out_h, out_w, _) = shape_of(match["ifm"]), shape_of(match["resize"])

    def mode() -> str:
        if str(attrs.layout) != "NHWC" or str(attrs.method) != "nearest_neighbor":
            return f"{attrs.method} resize in {attrs.layout}; only nearest neighbour in NHWC"
        if str(attrs.coordinate_transformation_mode) not in ("asymmetric", "half_pixel"):
            return "nearest neighbour resize with align_corners; the NPU upscales without"
        return ""

    def scale() -> str:
        if (out_h, out_w) != (2 * height, 2 * width):
            return f"resize from {height}x{width} to {out_h}x{out_w}; the NPU upscales height and width by 2"
        return ""

    return _first(
        lambda: _feature_map_input(match["ifm"], "IFM"),
        lambda: _feature_map(match["resize"], "OFM", dtypes=COPY_DTYPES),
        mode,
        scale,
    )


def permutation_of(match: Match) -> tuple[int, ...]:
    """The TRANSPOSE's permutation (None in Relax: the axes reversed)."""
    rank, axes = len(shape_of(match["ifm"])), match["permute"].attrs.axes
    return tuple(range(rank))[::-1] if axes is None else tuple(int(a) % rank for a in axes)


def transposed_view(shape: tuple[int, ...], perm: tuple[int, ...]) -> tuple[int, int, int] | None:
    """The input seen as (A, B, C) whose output is (B, A, C) in element order, when the permutation is one: with
    axes of extent 1 left out, it swaps two axes followed by at most one more (the NPU reads the IFM with its row
    and column strides swapped, depth kept). (1, 1, N) when the order of the other axes is kept (a reshape); None
    otherwise."""
    kept = [axis for axis in perm if shape[axis] != 1]
    dims = [shape[axis] for axis in sorted(kept)]
    order = [sorted(kept).index(axis) for axis in kept]
    if order == sorted(order):
        return (1, 1, int(np.prod(dims, dtype=np.int64)))
    if order == [1, 0]:
        return (dims[0], dims[1], 1)
    if order == [1, 0, 2]:
        return (dims[0], dims[1], dims[2])
    return None


def check_transpose(match: Match) -> str:
    """Permutations the NPU expresses as one copy with swapped strides (see `transposed_view`)."""
    shape, perm = shape_of(match["ifm"]), permutation_of(match)

    def view() -> str:
        found = transposed_view(shape, perm)
        if found is None:
            return (f"TRANSPOSE of {shape} by {perm}; the NPU swaps two axes (unit axes aside) and keeps the"
                    " innermost after them")
        low, high = TENSOR_DIM_RANGE
        if found[:2] != (1, 1) and not all(low <= d <= high for d in found):  # (1, 1, N): a reshape
            return f"TRANSPOSE viewed as {found}; each extent must be in the range [{low}, {high}]"
        return ""

    return _first(
        lambda: _feature_map_input(match["ifm"], "IFM", batch_one=False),
        lambda: _feature_map(match["permute"], "OFM", False, COPY_DTYPES),
        view,
    )


CHECKS: dict[str, Callable[[Match], str]] = {
    "conv2d": check_conv2d,
    "depthwise_conv2d": check_depthwise_conv2d,
    "fully_connected": check_fully_connected,
    "avg_pool2d": check_avg_pool2d,
    "max_pool2d": check_max_pool2d,
    "add": lambda m: _binary(m, same_quant=False),
    "subtract": lambda m: _binary(m, same_quant=False),
    "multiply": lambda m: _binary(m, same_quant=False),
    "minimum": lambda m: _binary(m, same_quant=True),
    "maximum": lambda m: _binary(m, same_quant=True),
    "mean": check_mean,
    "sum": check_sum,
    "reduce_max": check_reduce_extreme,
    "reduce_min": check_reduce_extreme,
    "arg_max": check_arg_max,
    "relu": check_lookup,
    "clip": check_lookup,
    "abs": check_lookup,
    "leaky_relu": check_lookup,
    "requantize": check_lookup,
    "tanh": check_lookup,
    "logistic": check_lookup,
    "exp": check_lookup,
    "log": check_lookup,
    "rsqrt": check_lookup,
    "sqrt": check_lookup,
    "neg": check_lookup,
    "elu": check_lookup,
    "hard_swish": check_lookup,
    "reshape": check_reshape,
    "prelu": check_prelu,
    "squared_difference": check_squared_difference,
    "softmax": check_softmax,
    "concatenation": check_concatenation,
    "pack": check_pack,
    "pad": check_pad,
    "strided_slice": check_strided_slice,
    "resize_nearest_neighbor": check_resize_nearest_neighbor,
    "transpose": check_transpose,
}
