"""Models that differ only at their edges (`make_edge`): the I/O types a TFLite model can carry (uint8, int16, float32
through QUANTIZE and DEQUANTIZE), inputs read by several operators and outputs that later operators read too, each
around a small int8 or int16 body."""
from __future__ import annotations

from .net import Net
from .quant import OP

_SHAPE = (1, 8, 8, 4)


def _uint8_body(net: Net) -> None:
    """uint8 in, int8 body, uint8 out, as TFLite's converter writes `inference_input_type=tf.uint8`."""
    x = net.quantize(net.input(_SHAPE, "uint8"))
    net.output(net.quantize(net.conv2d(x, out_channels=4), out_dtype="uint8"))


def _float_body(net: Net) -> None:
    """float32 in, int8 body, float32 out."""
    net.output(net.conv2d(net.input(_SHAPE, float_edge=True), out_channels=4), float_edge=True)


def _float_int16_body(net: Net) -> None:
    """float32 in, int16 body, float32 out (QUANTIZE to and DEQUANTIZE from int16)."""
    net.output(net.conv2d(net.input(_SHAPE, "int16", float_edge=True), out_channels=4), float_edge=True)


def _int16_io(net: Net) -> None:
    """int16 in and out."""
    net.output(net.conv2d(net.input(_SHAPE, "int16"), out_channels=4))


def _uint8_to_float(net: Net) -> None:
    """A uint8 input DEQUANTIZEd straight to a float32 output and QUANTIZEd into an int8 body; the body's result
    QUANTIZEd to uint8 and DEQUANTIZEd from there to float32."""
    raw = net.input(_SHAPE, "uint8")
    net.output(raw, float_edge=True)
    y = net.quantize(net.conv2d(net.quantize(raw), out_channels=4), out_dtype="uint8")
    net.output(y, float_edge=True)


def _float_to_uint8(net: Net) -> None:
    """float32 QUANTIZEd to uint8 and then to int8: LiteRT runs it, TFLite Micro's QUANTIZE has no float32 to uint8."""
    x = net.quantize(net.input(_SHAPE, "uint8", float_edge=True))
    net.output(net.conv2d(x, out_channels=4))


def _input_fanout(net: Net) -> None:
    """An int8 input read by a conv, the ADD after it and a pool."""
    x = net.input(_SHAPE)
    net.output(net.add(net.conv2d(x, out_channels=4), x))
    net.output(net.max_pool2d(x))


def _uint8_fanout(net: Net) -> None:
    """The int8 QUANTIZE of a uint8 input feeding two branches that an ADD joins."""
    x = net.quantize(net.input(_SHAPE, "uint8"))
    y = net.add(net.conv2d(x, out_channels=4), net.depthwise_conv2d(x))
    net.output(net.quantize(y, out_dtype="uint8"))


def _float_fanout(net: Net) -> None:
    """The int8 QUANTIZE of a float32 input feeding a conv and the ADD after it."""
    x = net.input(_SHAPE, float_edge=True)
    net.output(net.add(net.conv2d(x, out_channels=4), x), float_edge=True)


def _last_float_input(net: Net) -> int:
    """The float32 tensor of the input just added with `float_edge` (Net's layers take its QUANTIZEd one)."""
    return net._io_tensors["inputs"][-1]


def _float_two_quantizes(net: Net) -> None:
    """A float32 input read by two QUANTIZEs of different scales, joined by an ADD."""
    x = net.input(_SHAPE, float_edge=True)
    wide = net._activation(_SHAPE, "int8", 2 * x.scale, x.zero_point)
    net.builder.add_operator(OP.QUANTIZE, [_last_float_input(net)], [wide.index])
    net.output(net.add(net.conv2d(wide, out_channels=4), x))


def _float_input_is_output(net: Net) -> None:
    """A float32 input given back as an output, beside the float32 result of the conv its QUANTIZE feeds."""
    x = net.input(_SHAPE, float_edge=True)
    net.output(net.conv2d(x, out_channels=4), float_edge=True)
    net._io_tensors["outputs"].append(_last_float_input(net))


def _npu_intermediate_output(net: Net) -> None:
    """A model output that the next conv reads too, and the same as float32 through a DEQUANTIZE."""
    y = net.conv2d(net.input(_SHAPE), out_channels=4, activation="RELU")
    net.output(y)
    net.output(net.conv2d(y, out_channels=4))
    net.output(y, float_edge=True)


def _host_intermediate_output(net: Net) -> None:
    """A model output computed by a host kernel (L2_NORMALIZATION) between NPU convs, read by the later one too."""
    y = net.l2_normalization(net.conv2d(net.input(_SHAPE), out_channels=4))
    net.output(y)
    net.output(net.conv2d(y, out_channels=4))


def _input_is_output(net: Net) -> None:
    """A model input given back as an output, and read by a conv whose result is given twice, and once more as
    uint8 (twice too)."""
    x = net.input(_SHAPE)
    net.output(x)
    y = net.conv2d(x, out_channels=4)
    net.output(y)
    net.output(y)
    z = net.quantize(y, out_dtype="uint8")
    net.output(z)
    net.output(z)


def _uint8_intermediate_output(net: Net) -> None:
    """A uint8 output that a QUANTIZE back to int8 and a conv read too."""
    y = net.quantize(net.conv2d(net.input(_SHAPE), out_channels=4), out_dtype="uint8")
    net.output(y)
    net.output(net.conv2d(net.quantize(y), out_channels=4))


def _int16_int8_edges(net: Net) -> None:
    """int16 in and out around an int8 body (QUANTIZE int16 to int8 and int8 to int16)."""
    x = net.quantize(net.input(_SHAPE, "int16"), out_dtype="int8")
    net.output(net.quantize(net.conv2d(x, out_channels=4), out_dtype="int16"))


def _mixed_inputs(net: Net) -> None:
    """uint8, int8 and float32 inputs joined in an int8 body, with int8, uint8 and float32 outputs."""
    a = net.quantize(net.input(_SHAPE, "uint8"))
    b = net.input(_SHAPE)
    c = net.input(_SHAPE, float_edge=True)
    y = net.add(net.conv2d(a, out_channels=4), b)
    net.output(y)
    net.output(net.quantize(net.mul(y, c), out_dtype="uint8"))
    net.output(net.max_pool2d(c), float_edge=True)


_EDGES = {"uint8_body": _uint8_body, "float_body": _float_body, "float_int16_body": _float_int16_body,
          "int16_io": _int16_io, "int16_int8_edges": _int16_int8_edges, "uint8_to_float": _uint8_to_float,
          "float_to_uint8": _float_to_uint8, "input_fanout": _input_fanout, "uint8_fanout": _uint8_fanout,
          "float_fanout": _float_fanout, "float_two_quantizes": _float_two_quantizes,
          "npu_intermediate_output": _npu_intermediate_output, "host_intermediate_output": _host_intermediate_output,
          "input_is_output": _input_is_output, "float_input_is_output": _float_input_is_output,
          "uint8_intermediate_output": _uint8_intermediate_output, "mixed_inputs": _mixed_inputs}
EDGES: tuple[str, ...] = tuple(_EDGES)


def make_edge(name: str, seed: int = 0) -> bytes:
    """A small model with one of the edge forms in `EDGES`."""
    if name not in _EDGES:
        raise ValueError(f"unknown edge form {name!r}; known: {', '.join(EDGES)}")
    net = Net(seed, f"ethosu_tvm.testing.models:{name}")
    _EDGES[name](net)
    return net.build()
