"""Small multi-operator networks: `make_graph`."""
from __future__ import annotations

from .net import Net


def _ds_cnn(net: Net) -> None:
    """Keyword-spotting DS-CNN in miniature: strided conv, two depthwise-separable blocks, pool, FC, softmax."""
    x = net.input((1, 49, 10, 1), scale=0.5847, zero_point=83)
    x = net.conv2d(x, out_channels=16, kernel=(10, 4), stride=(2, 2), activation="RELU")
    for _ in range(2):
        x = net.depthwise_conv2d(x, activation="RELU")
        x = net.conv2d(x, out_channels=16, kernel=(1, 1), activation="RELU")
    x = net.avg_pool2d(x, pool=(x.shape[1], x.shape[2]), stride=(1, 1))
    x = net.reshape(x, (1, 16))
    logits = net.fully_connected(x, units=12)
    net.output(net.softmax(logits, beta=1.0 / logits.rms))  # a beta that keeps the probabilities graded


def _resnet_block(net: Net) -> None:
    """Two 3x3 convolutions and a residual add with fused ReLU."""
    x = net.input((1, 16, 16, 8))
    y = net.conv2d(x, out_channels=8, activation="RELU")
    y = net.conv2d(y, out_channels=8)
    net.output(net.add(y, x, activation="RELU"))


def _inverted_residual(net: Net) -> None:
    """MobileNetV2 block: 1x1 expand, 3x3 depthwise, 1x1 project, residual add."""
    x = net.input((1, 16, 16, 8))
    y = net.conv2d(x, out_channels=32, kernel=(1, 1), activation="RELU6")
    y = net.depthwise_conv2d(y, activation="RELU6")
    y = net.conv2d(y, out_channels=8, kernel=(1, 1))
    net.output(net.add(y, x))


def _multi_io(net: Net) -> None:
    """Two inputs, two outputs: a conv of one added to the other, and a pooled product of both."""
    a = net.input((1, 8, 8, 4))
    b = net.input((1, 8, 8, 4), scale=0.03, zero_point=5)
    net.output(net.add(net.conv2d(a, out_channels=4), b))
    net.output(net.max_pool2d(net.mul(a, b)))


def _mobilenet_v2(net: Net) -> None:
    """MobileNetV2 as TensorFlow exports it: explicit PAD before strided depthwise convolutions, inverted residual
    blocks with a residual ADD, global MEAN (keep_dims false), a classifier and SOFTMAX."""
    x = net.input((1, 24, 24, 3))
    x = net.conv2d(x, out_channels=8, stride=(2, 2), activation="RELU6")
    for expand, out, stride in ((2, 8, 1), (3, 12, 2), (3, 12, 1)):
        y = net.conv2d(x, out_channels=x.shape[-1] * expand, kernel=(1, 1), activation="RELU6")
        if stride == 2:
            y = net.pad(y, paddings=((0, 0), (0, 1), (0, 1), (0, 0)))
            y = net.depthwise_conv2d(y, stride=(2, 2), padding="VALID", activation="RELU6")
        else:
            y = net.depthwise_conv2d(y, activation="RELU6")
        y = net.conv2d(y, out_channels=out, kernel=(1, 1))
        x = net.add(y, x) if stride == 1 and out == x.shape[-1] else y
    x = net.mean(x, axis=(1, 2), keep_dims=False)
    logits = net.fully_connected(x, units=10)
    net.output(net.softmax(logits, beta=1.0 / logits.rms))


def _efficientnet_lite(net: Net) -> None:
    """EfficientNet-lite/MobileNetV3 style: hard-swish activations and a squeeze-excite block (MEAN → 1x1
    reduce → 1x1 expand → LOGISTIC → MUL broadcast over H and W), then pooling, classifier and SOFTMAX."""
    x = net.input((1, 16, 16, 4))
    x = net.hard_swish(net.conv2d(x, out_channels=16, stride=(2, 2)))
    y = net.hard_swish(net.depthwise_conv2d(x))
    gate = net.mean(y, axis=(1, 2), keep_dims=True)
    gate = net.conv2d(gate, out_channels=4, kernel=(1, 1), activation="RELU")
    gate = net.logistic(net.conv2d(gate, out_channels=16, kernel=(1, 1)))
    y = net.mul(y, gate)
    x = net.add(net.conv2d(y, out_channels=16, kernel=(1, 1)), x)
    x = net.reshape(net.avg_pool2d(x, pool=(8, 8), stride=(1, 1)), (1, 16))
    logits = net.fully_connected(x, units=8)
    net.output(net.softmax(logits, beta=1.0 / logits.rms))


def _unet(net: Net) -> None:
    """UNet style: an encoder step down, a TRANSPOSE_CONV and a RESIZE_NEAREST_NEIGHBOR step up, skip connections
    by CONCATENATION, and a STRIDED_SLICE crop of the result."""
    x = net.input((1, 16, 16, 4))
    skip = net.conv2d(x, out_channels=8, activation="RELU")
    down = net.conv2d(skip, out_channels=16, stride=(2, 2), activation="RELU")
    bottom = net.conv2d(down, out_channels=16, activation="RELU")
    up = net.transpose_conv(bottom, out_channels=8, out_scale=skip.scale, out_zp=skip.zero_point)
    y = net.conv2d(net.concatenation([up, skip]), out_channels=8, activation="RELU")
    coarse = net.conv2d(bottom, out_channels=8, kernel=(1, 1), out_scale=y.scale, out_zp=y.zero_point)
    coarse = net.resize_nearest_neighbor(coarse, size=(16, 16))
    y = net.conv2d(net.concatenation([y, coarse]), out_channels=2, kernel=(1, 1))
    net.output(net.strided_slice(y, begin=(0, 2, 2, 0), end=(1, 14, 14, 2), strides=(1, 1, 1, 1)))


def _uint8_io(net: Net) -> None:
    """An int8 network between uint8 I/O, as TFLite's converter writes one for `inference_input_type=tf.uint8`: a
    camera image QUANTIZEd into int8 first, the scores QUANTIZEd back into uint8 last."""
    x = net.quantize(net.input((1, 12, 12, 3), "uint8", scale=1 / 255, zero_point=0))
    x = net.conv2d(x, out_channels=8, stride=(2, 2), activation="RELU6")
    x = net.depthwise_conv2d(x, activation="RELU6")
    net.output(net.quantize(net.conv2d(x, out_channels=4, kernel=(1, 1)), out_dtype="uint8"))


def _padded_convolutions(net: Net) -> None:
    """PADs the convolutions after them take as their own padding: an asymmetric one before a VALID 5x5 CONV_2D,
    one before a stride-2 SAME DEPTHWISE_CONV_2D whose own padding (bottom and right) it completes on each side."""
    x = net.input((1, 12, 11, 5))
    x = net.pad(x, paddings=((0, 0), (2, 1), (0, 2), (0, 0)))
    x = net.conv2d(x, out_channels=8, kernel=(5, 5), padding="VALID", activation="RELU6")
    x = net.pad(x, paddings=((0, 0), (1, 0), (1, 0), (0, 0)))
    net.output(net.depthwise_conv2d(x, stride=(2, 2), padding="SAME"))


def _unfolded_pads(net: Net) -> None:
    """PADs the NPU's convolution padding cannot stand for: a pad wider than half the kernel, a PAD two
    convolutions read, and one before a pool."""
    x = net.input((1, 9, 8, 4))
    y = net.pad(x, paddings=((0, 0), (2, 0), (0, 0), (0, 0)))
    y = net.depthwise_conv2d(y, padding="VALID")
    shared = net.pad(y, paddings=((0, 0), (0, 1), (1, 0), (0, 0)))
    net.output(net.conv2d(shared, out_channels=4, stride=(2, 2), padding="VALID"))
    net.output(net.depthwise_conv2d(shared, padding="VALID"))
    net.output(net.avg_pool2d(net.pad(y, paddings=((0, 0), (1, 1), (1, 1), (0, 0))), pool=(3, 3), stride=(1, 1),
                              padding="VALID"))


_GRAPHS = {"ds_cnn": _ds_cnn, "resnet_block": _resnet_block, "inverted_residual": _inverted_residual,
           "multi_io": _multi_io, "mobilenet_v2": _mobilenet_v2, "efficientnet_lite": _efficientnet_lite,
           "unet": _unet, "uint8_io": _uint8_io, "padded_convolutions": _padded_convolutions,
           "unfolded_pads": _unfolded_pads}
GRAPHS: tuple[str, ...] = tuple(_GRAPHS)


def make_graph(name: str, seed: int = 0, per_tensor_axis: int | None = None, float_io: bool = False) -> bytes:
    """A small multi-operator model (one of `GRAPHS`); `per_tensor_axis` and `float_io` as for :func:`make`."""
    if name not in _GRAPHS:
        raise ValueError(f"unknown graph {name!r}; known: {', '.join(GRAPHS)}")
    net = Net(seed, f"ethosu_tvm.testing.models:{name}", per_tensor_axis, float_io)
    _GRAPHS[name](net)
    return net.build()
