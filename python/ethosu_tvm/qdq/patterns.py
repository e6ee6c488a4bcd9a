"""relax.dpl patterns of the QDQ Relax form TVM's TFLite frontend emits: one builder per TFLite operator shape.

Each pattern names its interesting sub-expressions (annotations) so that checks, legalization and host-kernel reading
get them by role ("ifm", "weights", "conv", ...) instead of walking the graph again. The builders take the composite
name, so the NPU (``ethos-u.<kind>``) and the host (``host.<kind>``) assemble their pattern lists from the same
definitions and agree on what one TFLite operator looks like in Relax.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field

import tvm
from tvm import relax
from tvm.relax import dpl
from tvm.relax.dpl import DFPattern, has_dtype, is_const, is_op, is_tuple, wildcard

from .values import bound_values


@dataclass(frozen=True)
class CompositePattern:
    """A named pattern with its annotated roles; `name` is the composite name ``<target>.<kind>``, e.g.
    ``ethos-u.conv2d`` for the NPU or ``host.conv2d`` for a host kernel."""

    name: str
    pattern: DFPattern
    annotations: dict[str, DFPattern] = field(default_factory=dict)

    @property
    def kind(self) -> str:
        return self.name.split(".", 1)[1]


@functools.lru_cache(maxsize=None)
def required_ops(pattern: DFPattern) -> frozenset[str]:
    """The operators every expression `pattern` matches contains: a module without one of them cannot match it.
    (FuseOpsByPattern tries every pattern it is given at every binding: an unrolled LSTM has thousands.)"""
    if isinstance(pattern, dpl.CallPattern):
        op = pattern.op
        own = {op.expr.name} if isinstance(op, dpl.ExprPattern) and isinstance(op.expr, tvm.ir.Op) else set()
        return frozenset(own.union(*(required_ops(arg) for arg in pattern.args or ())))
    if isinstance(pattern, dpl.OrPattern):  # either side may match
        return required_ops(pattern.left) & required_ops(pattern.right)
    if isinstance(pattern, dpl.AndPattern):
        return required_ops(pattern.left) | required_ops(pattern.right)
    if isinstance(pattern, (dpl.TuplePattern, dpl.UnorderedTuplePattern)):
        return frozenset().union(*(required_ops(field) for field in pattern.fields))
    if isinstance(pattern, dpl.TupleGetItemPattern):
        return required_ops(pattern.tuple)
    if isinstance(pattern, (dpl.AttrPattern, dpl.DataTypePattern, dpl.ShapePattern, dpl.TypePattern)):
        return required_ops(pattern.pattern)
    return frozenset()  # wildcards, constants, variables, negations: no operator required


def dequantized(x: DFPattern) -> DFPattern:
    return is_op("relax.dequantize")(x, is_const(), is_const())


def quantized(x: DFPattern) -> DFPattern:
    return is_op("relax.quantize")(x, is_const(), is_const())


def _int_clip(x: DFPattern) -> DFPattern:
    """A fused activation as the frontend writes it after quantize: a clip on the integer output."""
    return is_op("relax.clip")(x, wildcard(), wildcard())


def _requantized(core: DFPattern, roles: dict[str, DFPattern]) -> DFPattern:
    """core [+ dequantized bias] → quantize [→ int clip]; records the roles "bias_dq", "quantize", "clip"."""
    bias_dq = dequantized(is_const())
    biased = is_op("relax.add")(core, bias_dq)
    quantize = quantized(biased | core)
    clip = _int_clip(quantize)
    roles.update(bias_dq=bias_dq, quantize=quantize, clip=clip)
    return clip | quantize


def conv_like(name: str, depthwise: bool) -> CompositePattern:
    ifm, weights = wildcard(), is_const()
    ifm_dq, weights_dq = dequantized(ifm), dequantized(weights)
    kernel = is_op("relax.reshape")(weights_dq, wildcard()) if depthwise else weights_dq
    conv = is_op("relax.nn.conv2d")(ifm_dq, kernel)
    roles = dict(ifm=ifm, ifm_dq=ifm_dq, weights=weights, weights_dq=weights_dq, conv=conv)
    return CompositePattern(name, _requantized(conv, roles), roles)


def transpose_conv(name: str) -> CompositePattern:
    """TRANSPOSE_CONV: the frontend's conv2d_transpose with IOHW weights, then the conv-like requantization."""
    ifm, weights = wildcard(), is_const()
    ifm_dq, weights_dq = dequantized(ifm), dequantized(weights)
    conv = is_op("relax.nn.conv2d_transpose")(ifm_dq, weights_dq)
    roles = dict(ifm=ifm, ifm_dq=ifm_dq, weights=weights, weights_dq=weights_dq, conv=conv)
    return CompositePattern(name, _requantized(conv, roles), roles)


def fully_connected(name: str) -> CompositePattern:
    ifm, weights = wildcard(), is_const()
    ifm_dq = dequantized(ifm)
    weights_dq = dequantized(is_op("relax.permute_dims")(weights))
    matmul = is_op("relax.matmul")(ifm_dq, weights_dq)
    roles = dict(ifm=ifm, ifm_dq=ifm_dq, weights=weights, weights_dq=weights_dq, matmul=matmul)
    return CompositePattern(name, _requantized(matmul, roles), roles)


def pool(name: str, kind: str) -> CompositePattern:
    """Pools run on the raw integer values (the frontend keeps no QDQ around them); avg pool widens to int32."""
    ifm = wildcard()
    if kind == "avg_pool2d":
        pool_call = is_op("relax.nn.avg_pool2d")(is_op("relax.astype")(ifm))
        out = is_op("relax.astype")(pool_call)
    else:
        pool_call = is_op("relax.nn.max_pool2d")(ifm)
        out = pool_call
    clip = _int_clip(out)
    return CompositePattern(name, clip | out, dict(ifm=ifm, pool=pool_call, out=out, clip=clip))


def binary(name: str, relax_op: str) -> CompositePattern:
    """dequantize both operands → op → optional float relu/clip (fused activation) → quantize."""
    lhs, rhs = wildcard(), wildcard()
    lhs_dq, rhs_dq = dequantized(lhs), dequantized(rhs)
    core = is_op(relax_op)(lhs_dq, rhs_dq)
    relu = is_op("relax.nn.relu")(core)
    float_clip = is_op("relax.clip")(core, wildcard(), wildcard())
    quantize = quantized(relu | float_clip | core)
    roles = dict(lhs=lhs, rhs=rhs, lhs_dq=lhs_dq, rhs_dq=rhs_dq, core=core, relu=relu, float_clip=float_clip,
                 quantize=quantize)
    return CompositePattern(name, quantize, roles)


def batch_matmul(name: str) -> CompositePattern:
    """Our importer's BATCH_MATMUL: dequantize both operands, each optionally with its last two axes swapped
    (adj_x, adj_y) → matmul → quantize."""
    lhs, rhs = wildcard(), wildcard()
    lhs_dq, rhs_dq = dequantized(lhs), dequantized(rhs)
    lhs_t, rhs_t = is_op("relax.permute_dims")(lhs_dq), is_op("relax.permute_dims")(rhs_dq)
    core = is_op("relax.matmul")(lhs_t | lhs_dq, rhs_t | rhs_dq)
    quantize = quantized(core)
    return CompositePattern(name, quantize, dict(lhs=lhs, rhs=rhs, lhs_dq=lhs_dq, rhs_dq=rhs_dq, lhs_t=lhs_t,
                                                 rhs_t=rhs_t, core=core, quantize=quantize))


def arg_min_max(name: str, relax_op: str) -> CompositePattern:
    """ARG_MAX or ARG_MIN: argmax/argmin of the raw integers, cast to the output's index dtype."""
    ifm = wildcard()
    arg = is_op(relax_op)(ifm)
    cast = is_op("relax.astype")(arg)
    return CompositePattern(name, cast, dict(ifm=ifm, arg=arg, cast=cast))


def quantize_int32(name: str) -> CompositePattern:
    """QUANTIZE to int32 as our importer writes it (Relax's quantize has no int32 output): the input's real value
    divided by the output scale, rounded, cast to int32, plus the output zero point. Before the patterns of a
    division or a cast, which would take a part of it."""
    ifm = wildcard()
    ifm_dq = dequantized(ifm)
    scaled = is_op("relax.divide")(ifm_dq, is_const())
    quantize = is_op("relax.add")(is_op("relax.astype")(is_op("relax.round")(scaled)), is_const())
    return CompositePattern(name, quantize, dict(ifm=ifm, ifm_dq=ifm_dq, scaled=scaled, quantize=quantize))


def cast(name: str) -> CompositePattern:
    """CAST: an astype of raw integers (one no other pattern holds)."""
    ifm = wildcard()
    cast_call = is_op("relax.astype")(ifm)
    return CompositePattern(name, cast_call, dict(ifm=ifm, cast=cast_call))


COMPARISON_OPS = {"equal": "relax.equal", "not_equal": "relax.not_equal", "greater": "relax.greater",
                  "greater_equal": "relax.greater_equal", "less": "relax.less", "less_equal": "relax.less_equal"}


def comparison(name: str, relax_op: str) -> CompositePattern:
    """EQUAL, NOT_EQUAL, GREATER, ...: both operands dequantized, compared (a bool result, no quantize)."""
    lhs, rhs = wildcard(), wildcard()
    lhs_dq, rhs_dq = dequantized(lhs), dequantized(rhs)
    core = is_op(relax_op)(lhs_dq, rhs_dq)
    return CompositePattern(name, core, dict(lhs=lhs, rhs=rhs, lhs_dq=lhs_dq, rhs_dq=rhs_dq, core=core))


def select(name: str) -> CompositePattern:
    """SELECT_V2: a where of a bool condition over raw int8/int16 integers (PRELU and ELU have float ones)."""
    condition, x, y = wildcard(), wildcard(), wildcard()
    where = is_op("relax.where")(condition, x, y) & (has_dtype("int8") | has_dtype("int16"))
    return CompositePattern(name, where, dict(condition=condition, x=x, y=y, where=where))


def fill(name: str) -> CompositePattern:
    """FILL: a full of the raw integer value."""
    value = wildcard()
    full = is_op("relax.full")(wildcard(), value)
    return CompositePattern(name, full, dict(value=value, full=full))


def gather_nd(name: str) -> CompositePattern:
    """GATHER_ND: a gather_nd of raw integers by int64 indices (run-time int32 ones cast)."""
    params, indices = wildcard(), wildcard()
    cast = is_op("relax.astype")(indices)
    gather = is_op("relax.gather_nd")(params, cast | indices)
    return CompositePattern(name, gather, dict(params=params, indices=indices, cast=cast, gather=gather))


def squared_difference(name: str) -> CompositePattern:
    """The frontend's SQUARED_DIFFERENCE: dequantize both operands → subtract → multiply the difference by itself
    → quantize."""
    lhs, rhs = wildcard(), wildcard()
    lhs_dq, rhs_dq = dequantized(lhs), dequantized(rhs)
    difference = is_op("relax.subtract")(lhs_dq, rhs_dq)
    core = is_op("relax.multiply")(difference, difference)
    quantize = quantized(core)
    return CompositePattern(name, quantize, dict(lhs=lhs, rhs=rhs, lhs_dq=lhs_dq, rhs_dq=rhs_dq,
                                                 difference=difference, core=core, quantize=quantize))


def reduction(name: str, relax_op: str) -> CompositePattern:
    """MEAN, SUM, REDUCE_MAX or REDUCE_MIN: dequantize → reduce over axes → quantize."""
    ifm = wildcard()
    ifm_dq = dequantized(ifm)
    reduce_call = is_op(relax_op)(ifm_dq)
    quantize = quantized(reduce_call)
    return CompositePattern(name, quantize, dict(ifm=ifm, ifm_dq=ifm_dq, reduce=reduce_call, quantize=quantize))


def resize(name: str, qdq: bool) -> CompositePattern:
    """RESIZE_BILINEAR imports as dequantize → resize2d → quantize (`qdq`), RESIZE_NEAREST_NEIGHBOR as a resize2d
    of the raw integers."""
    ifm = wildcard()
    if not qdq:
        resize_call = is_op("relax.image.resize2d")(ifm, wildcard())
        return CompositePattern(name, resize_call, dict(ifm=ifm, resize=resize_call))
    ifm_dq = dequantized(ifm)
    resize_call = is_op("relax.image.resize2d")(ifm_dq, wildcard())
    quantize = quantized(resize_call)
    return CompositePattern(name, quantize, dict(ifm=ifm, ifm_dq=ifm_dq, resize=resize_call, quantize=quantize))


def unary(name: str, core_of: Callable[[DFPattern], DFPattern]) -> CompositePattern:
    """dequantize → float op → quantize (on the NPU an int8 → int8 function run as a 256-entry lookup table)."""
    ifm = wildcard()
    ifm_dq = dequantized(ifm)
    core = core_of(ifm_dq)
    quantize = quantized(core)
    return CompositePattern(name, quantize, dict(ifm=ifm, ifm_dq=ifm_dq, core=core, quantize=quantize))


def hard_swish(name: str) -> CompositePattern:
    """The frontend's x · clip(x + 3, 0, 6) / 6 on the dequantized input."""
    ifm = wildcard()
    ifm_dq = dequantized(ifm)
    shifted = is_op("relax.clip")(is_op("relax.add")(ifm_dq, is_const()), wildcard(), wildcard())
    core = is_op("relax.divide")(is_op("relax.multiply")(ifm_dq, shifted), is_const())
    quantize = quantized(core)
    roles = dict(ifm=ifm, ifm_dq=ifm_dq, core=core, quantize=quantize)
    return CompositePattern(name, quantize, roles)


def _any_dtype(dtypes: tuple[str, ...]) -> DFPattern:
    check = has_dtype(dtypes[0])
    for dtype in dtypes[1:]:
        check = check | has_dtype(dtype)
    return check


def reshape(name: str, dtypes: tuple[str, ...] = ("int8",)) -> CompositePattern:
    """RESHAPE, SQUEEZE and EXPAND_DIMS (imported as a reshape): the same integer values under another shape."""
    ifm = wildcard() & _any_dtype(dtypes)
    reshape_call = is_op("relax.reshape")(ifm, wildcard()) | is_op("relax.squeeze")(ifm)
    return CompositePattern(name, reshape_call, dict(ifm=ifm, reshape=reshape_call))


def prelu(name: str) -> CompositePattern:
    """dequantize → where(x ≥ 0, x, x · dequantized alpha constant) → quantize (our importer's PRELU)."""
    ifm, alpha = wildcard(), is_const()
    ifm_dq, alpha_dq = dequantized(ifm), dequantized(alpha)
    negative = is_op("relax.multiply")(ifm_dq, alpha_dq)
    core = is_op("relax.where")(is_op("relax.greater_equal")(ifm_dq, is_const()), ifm_dq, negative)
    quantize = quantized(core)
    return CompositePattern(name, quantize, dict(ifm=ifm, ifm_dq=ifm_dq, alpha=alpha, alpha_dq=alpha_dq, core=core,
                                                 quantize=quantize))


def softmax(name: str) -> CompositePattern:
    """dequantize → [multiply by beta, when beta ≠ 1] → softmax → quantize."""
    ifm, beta = wildcard(), is_const()
    ifm_dq = dequantized(ifm)
    core = is_op("relax.nn.softmax")(is_op("relax.multiply")(ifm_dq, beta) | ifm_dq)
    quantize = quantized(core)
    return CompositePattern(name, quantize, dict(ifm=ifm, ifm_dq=ifm_dq, beta=beta, core=core, quantize=quantize))


def log_softmax(name: str) -> CompositePattern:
    """dequantize → log_softmax → quantize."""
    ifm = wildcard()
    ifm_dq = dequantized(ifm)
    core = is_op("relax.nn.log_softmax")(ifm_dq)
    quantize = quantized(core)
    return CompositePattern(name, quantize, dict(ifm=ifm, ifm_dq=ifm_dq, core=core, quantize=quantize))


def l2_normalization(name: str) -> CompositePattern:
    """Our importer's L2_NORMALIZATION: dequantize → x / sqrt(sum(x · x) over the last axis) → quantize."""
    ifm = wildcard()
    ifm_dq = dequantized(ifm)
    total = is_op("relax.sum")(is_op("relax.multiply")(ifm_dq, ifm_dq))
    core = is_op("relax.divide")(ifm_dq, is_op("relax.sqrt")(total))
    quantize = quantized(core)
    return CompositePattern(name, quantize, dict(ifm=ifm, ifm_dq=ifm_dq, total=total, core=core, quantize=quantize))


def pad(name: str) -> CompositePattern:
    """PAD pads the raw integers (with the zero point as pad value)."""
    ifm = wildcard()
    pad_call = is_op("relax.nn.pad")(ifm)
    return CompositePattern(name, pad_call, dict(ifm=ifm, pad=pad_call))


def concatenation(name: str, arity: int) -> CompositePattern:
    """dequantize each input → concat → quantize; dpl tuples have a fixed size, so one pattern per input count."""
    inputs = [wildcard() for _ in range(arity)]
    dqs = [dequantized(x) for x in inputs]
    concat = is_op("relax.concat")(is_tuple(dqs))
    quantize = quantized(concat)
    roles = {f"input{i}": x for i, x in enumerate(inputs)} | {f"input{i}_dq": d for i, d in enumerate(dqs)}
    return CompositePattern(name, quantize, roles | dict(concat=concat, quantize=quantize))


def concat_arities(func: relax.Function) -> set[int]:
    """The input counts of the concatenations in `func` (each needs a pattern of its own)."""
    return {len(value.args[0].fields) for value in bound_values(func).values()
            if isinstance(value, relax.Call) and getattr(value.op, "name", "") == "relax.concat"
            and isinstance(value.args[0], relax.Tuple)}


def add_n(name: str, arity: int) -> CompositePattern:
    """Our importer's ADD_N: each input dequantized and given a new axis 0, concatenated along it, summed over it,
    quantized; one pattern per input count."""
    inputs = [wildcard() for _ in range(arity)]
    dqs = [dequantized(x) for x in inputs]
    concat = is_op("relax.concat")(is_tuple([is_op("relax.expand_dims")(d) for d in dqs]))
    total = is_op("relax.sum")(concat)
    quantize = quantized(total)
    roles = {f"input{i}": x for i, x in enumerate(inputs)} | {f"input{i}_dq": d for i, d in enumerate(dqs)}
    return CompositePattern(name, quantize, roles | dict(concat=concat, sum=total, quantize=quantize))


def strided_slice(name: str) -> CompositePattern:
    """STRIDED_SLICE, SLICE, and each output of SPLIT, SPLIT_V and UNPACK (the importer slices those): raw integers
    copied from a strided box of the input, then reshaped when axes shrink or appear."""
    ifm = wildcard()
    slice_call = is_op("relax.strided_slice")(ifm, varg_default_wildcard=True)
    reshape_call = is_op("relax.reshape")(slice_call, wildcard())
    return CompositePattern(name, reshape_call | slice_call, dict(ifm=ifm, slice=slice_call, reshape=reshape_call))


def transpose(name: str) -> CompositePattern:
    """TRANSPOSE: raw integers under permuted axes."""
    ifm = wildcard()
    permute = is_op("relax.permute_dims")(ifm)
    return CompositePattern(name, permute, dict(ifm=ifm, permute=permute))


def broadcast_to(name: str) -> CompositePattern:
    """BROADCAST_TO: raw integers repeated along the axes of extent 1 (NumPy's rules)."""
    ifm = wildcard()
    broadcast = is_op("relax.broadcast_to")(ifm, wildcard())
    return CompositePattern(name, broadcast, dict(ifm=ifm, broadcast=broadcast))


def pack(name: str, arity: int, dtypes: tuple[str, ...] = ()) -> CompositePattern:
    """PACK: each raw integer input (of one of `dtypes`, when given) given the new axis, then concatenated along it;
    one pattern per input count."""
    inputs = [wildcard() & _any_dtype(dtypes) if dtypes else wildcard() for _ in range(arity)]
    expanded = [is_op("relax.expand_dims")(x) for x in inputs]
    concat = is_op("relax.concat")(is_tuple(expanded))
    roles = {f"input{i}": x for i, x in enumerate(inputs)} | {f"expand{i}": e for i, e in enumerate(expanded)}
    return CompositePattern(name, concat, roles | dict(concat=concat))


# Float cores of the dequantize → op → quantize functions, by composite kind.
UNARY_CORES: dict[str, Callable[[DFPattern], DFPattern]] = {
    "relu": lambda x: is_op("relax.nn.relu")(x),
    "clip": lambda x: is_op("relax.clip")(x, wildcard(), wildcard()),
    "abs": lambda x: is_op("relax.abs")(x),
    "leaky_relu": lambda x: is_op("relax.nn.leakyrelu")(x),
    "requantize": lambda x: x,
    "tanh": lambda x: is_op("relax.tanh")(x),
    "logistic": lambda x: is_op("relax.sigmoid")(x),
    "exp": lambda x: is_op("relax.exp")(x),
    "log": lambda x: is_op("relax.log")(x),
    "rsqrt": lambda x: is_op("relax.rsqrt")(x),
    "sqrt": lambda x: is_op("relax.sqrt")(x),
    "neg": lambda x: is_op("relax.negative")(x),
    # our importer's GELU (exact or approximate)
    "gelu": lambda x: is_op("relax.nn.gelu")(x),
    "gelu_tanh": lambda x: is_op("relax.nn.gelu_tanh")(x),
    # our importer's ELU: where(x < 0, exp(x) − 1, x)
    "elu": lambda x: is_op("relax.where")(is_op("relax.less")(x, is_const()),
                                          is_op("relax.subtract")(is_op("relax.exp")(x), is_const()), x),
}
REDUCTION_OPS = {"mean": "relax.mean", "sum": "relax.sum", "reduce_max": "relax.max", "reduce_min": "relax.min"}
BINARY_OPS = {"add": "relax.add", "subtract": "relax.subtract", "multiply": "relax.multiply",
              "minimum": "relax.minimum", "maximum": "relax.maximum"}


def weighted_and_elementwise(prefix: str) -> list[CompositePattern]:
    """Convolutions, fully connected, pools and binary elementwise ops, most specific first: the patterns the NPU
    and the host share (the host takes the ones the NPU's constraints reject)."""
    return [
        conv_like(f"{prefix}.depthwise_conv2d", depthwise=True),
        conv_like(f"{prefix}.conv2d", depthwise=False),
        fully_connected(f"{prefix}.fully_connected"),
        pool(f"{prefix}.avg_pool2d", "avg_pool2d"),
        pool(f"{prefix}.max_pool2d", "max_pool2d"),
        *(binary(f"{prefix}.{kind}", relax_op) for kind, relax_op in BINARY_OPS.items()),
    ]


def called_functions(mod: tvm.IRModule, attr: str, prefix: str) -> list[tuple[str, relax.Function]]:
    """The functions main calls whose attribute `attr` starts with `prefix`, as (global name, function), in main's
    call order (each once)."""
    found: list[tuple[str, relax.Function]] = []
    for block in mod["main"].body.blocks:
        for binding in block.bindings:
            callee = getattr(binding.value, "op", None)
            if not isinstance(callee, tvm.ir.GlobalVar) or any(name == callee.name_hint for name, _ in found):
                continue
            func = mod[callee]
            if isinstance(func, relax.Function) and str((func.attrs or {}).get(attr, "")).startswith(prefix):
                found.append((callee.name_hint, func))
    return found
