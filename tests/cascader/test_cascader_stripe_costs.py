"""The cascader's cost of a stripe (`codegen.stripe_cost`) on hand-built primitives: it grows with the stripe, is
remembered, covers every primitive kind, and counts convolution weights at their encoded size."""
import numpy as np
import pytest
from ethosu.vela import api as vapi

from ethosu_tvm.codegen import stripe_cost as stripe_costs
from ethosu_tvm.codegen.stripe_cost import stripe_buffering, stripe_cost
from ethosu_tvm.codegen.weight_stream import convolution_traversal
from ethosu_tvm.legalize.ops import (
    BinaryElementwise,
    Conv2D,
    DepthwiseConv2D,
    Identity,
    Padding,
    Pooling,
)

from cascader_support import UNIT, operand

U55_128 = vapi.NpuAccelerator.Ethos_U55_128


def _conv(in_shape, out_channels, kernel, padding=Padding(1, 1, 1, 1), strides=(1, 1)):
    n, h, w, c = in_shape
    out_h = (h + padding.top + padding.bottom - kernel[0]) // strides[0] + 1
    out_w = (w + padding.left + padding.right - kernel[1]) // strides[1] + 1
    return Conv2D(operand("ifm", in_shape), operand("ofm", (n, out_h, out_w, out_channels)),
                  np.ones((out_channels, *kernel, c), dtype=np.int8), 0, np.zeros(out_channels, dtype=np.int64), UNIT,
                  strides=strides, padding=padding)


def _encoded(op, depth: int | None = None) -> int:
    """Bytes of op's weight stream as Vela encodes it for blocks of `depth` channels (default: all of them)."""
    depth = depth or op.weights.shape[0]
    stream = vapi.npu_encode_weights(U55_128, op.weights.astype(np.int16) - op.weight_zero_point, (1, 1), 8, depth,
                                     isinstance(op, DepthwiseConv2D), convolution_traversal(op))
    return -(-len(stream) // 16) * 16


@pytest.mark.parametrize("strides", [(1, 1), (2, 2)])
def test_stripe_cost_grows_with_stripe_height(strides):
    op = _conv((1, 32, 32, 16), 24, (3, 3), strides=strides)
    _, out_h, out_w, out_c = op.ofm.tensor.shape
    costs = []
    for rows in range(1, out_h + 1):
        in_rows = min((rows - 1) * strides[0] + 3, 32)  # a stripe in the middle (top/bottom padding at the end)
        costs.append(stripe_cost(op, (1, rows, out_w, out_c), [(1, in_rows, 32, 16)], U55_128))
    # Cycles need not grow row by row: Vela offers some block heights only for some stripe heights, and a block
    # trades compute against weight re-reads, so one more row can allow a better block.
    for smaller, larger in zip(costs, costs[1:]):
        assert smaller.bytes_read <= larger.bytes_read and smaller.bytes_written < larger.bytes_written
    assert min(c.cycles for c in costs) == costs[0].cycles
    assert costs[-1].compute_cycles > 4 * costs[0].compute_cycles
    # Every stripe reads the whole encoded weight stream and the 10-byte scale/bias entry of each channel.
    assert {c.weight_bytes for c in costs} == {_encoded(op) + 240}


def test_stripe_cost_is_memoised():
    op = _conv((1, 16, 16, 8), 8, (3, 3))
    first = stripe_cost(op, (1, 4, 16, 8), [(1, 6, 16, 8)], U55_128)
    assert stripe_cost(op, (4, 16, 8), ((6, 16, 8),), U55_128) is first
    assert stripe_cost(op, (1, 4, 16, 8), ((1, 6, 16, 8),), U55_128) is first
    assert stripe_cost(op, (1, 5, 16, 8), [(1, 7, 16, 8)], U55_128) is not first
    twin = _conv((1, 16, 16, 8), 8, (3, 3))  # equal fields, another primitive
    assert stripe_cost(twin, (1, 4, 16, 8), [(1, 6, 16, 8)], U55_128) == first


def test_a_buffering_option_leaves_the_streamed_stripe_as_it_was():
    """A convolution stripe's cost and its buffering option share the operation that streams its weights (built
    once): asked in either order, each answer is the same, and the option's streaming cycles are the stripe's cost.
    The 1x1 convolution of 256 channels is weight-bound, so buffering changes its cycles (and may change its block
    config): a shared operation that the buffering option changed would show in the stripe's cost."""
    op = _conv((1, 4, 8, 64), 256, (1, 1), padding=Padding(0, 0, 0, 0))
    arguments = (op, (1, 2, 8, 256), [(1, 2, 8, 64)], U55_128)
    answers = []
    for order in ((stripe_cost, stripe_buffering), (stripe_buffering, stripe_cost)):
        for memo in (stripe_costs._stripe_cost, stripe_costs._stripe_buffering, stripe_costs._streamed):
            memo.cache_clear()
        answered = {ask: ask(*arguments) for ask in order}
        answers.append((answered[stripe_cost], answered[stripe_buffering]))
    assert answers[0] == answers[1]
    cost, buffering = answers[0]
    assert (buffering.streamed, buffering.overlap) == (cost.cycles, cost.overlap)
    assert buffering.buffered < buffering.streamed


def test_stripe_cost_of_every_primitive_kind():
    ifm, ofm = operand("ifm", (1, 8, 8, 16)), operand("ofm", (1, 8, 8, 16))
    shape = (1, 8, 8, 16)
    depthwise = DepthwiseConv2D(ifm, ofm, np.ones((16, 3, 3, 1), dtype=np.int8), 0, np.zeros(16, dtype=np.int64),
                                UNIT, padding=Padding(1, 1, 1, 1))
    conv_op, depthwise_op = _conv(shape, 16, (3, 3)), depthwise
    costs = {
        "conv": stripe_cost(conv_op, shape, [shape], U55_128),
        "depthwise": stripe_cost(depthwise_op, shape, [shape], U55_128),
        "max_pool": stripe_cost(Pooling("MAX", ifm, ofm, (3, 3), padding=Padding(1, 1, 1, 1)), shape, [shape],
                                U55_128),
        "avg_pool": stripe_cost(Pooling("AVG", ifm, ofm, (3, 3), padding=Padding(1, 1, 1, 1)), shape, [shape],
                                U55_128),
        "copy": stripe_cost(Identity(ifm, ofm), shape, [shape], U55_128),
        "lut": stripe_cost(Identity(ifm, ofm, np.arange(-128, 128, dtype=np.int8)), shape, [shape], U55_128),
    }
    for cost in costs.values():
        assert cost.cycles >= max(cost.compute_cycles, cost.memory_cycles) > 0
        assert cost.bytes_written == 8 * 8 * 16
    assert costs["conv"].weight_bytes == _encoded(conv_op) + 160
    assert costs["depthwise"].weight_bytes == _encoded(depthwise_op) + 160
    assert costs["max_pool"].weight_bytes == costs["copy"].weight_bytes == 0
    assert costs["conv"].compute_cycles > costs["depthwise"].compute_cycles
    assert costs["lut"].bytes_read == costs["copy"].bytes_read + 256  # the table, read from SHRAM
    # The NPU broadcasts only IFM2: a broadcast first operand is swapped, at no cost.
    full, row = operand("a", (1, 8, 8, 16)), operand("b", (1, 1, 8, 16))
    add = stripe_cost(BinaryElementwise("ADD", full, row, ofm, UNIT, UNIT, UNIT), shape, [shape, (1, 1, 8, 16)],
                      U55_128)
    swapped = stripe_cost(BinaryElementwise("ADD", row, full, ofm, UNIT, UNIT, UNIT), shape, [(1, 1, 8, 16), shape],
                          U55_128)
    assert add == swapped and add.bytes_read == (8 * 8 + 8) * 16
