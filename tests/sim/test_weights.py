"""Weight streams: Vela's encoder followed by the simulator's decoder and un-reordering gives the weights back."""
import contextlib
import io

import numpy as np
import pytest

from ethosu_tvm.arch import ACCELERATORS
from ethosu_tvm.sim import mlw
from ethosu_tvm.sim.weights import WeightFormatError, WeightLayout, decoding, stream_order, unreorder

with contextlib.redirect_stdout(io.StringIO()):  # Vela announces its default configuration on first use
    from ethosu.vela.api import NpuAccelerator, NpuBlockTraversal, npu_encode_weights

_VELA_ACCELERATORS = {
    "ethos-u55-32": NpuAccelerator.Ethos_U55_32,
    "ethos-u55-64": NpuAccelerator.Ethos_U55_64,
    "ethos-u55-128": NpuAccelerator.Ethos_U55_128,
    "ethos-u55-256": NpuAccelerator.Ethos_U55_256,
}
# (OHWI shape, (dilation x, y), IFM bits, OFM block depth, depthwise, part-kernel-first)
_CASES = [
    ((20, 3, 3, 40), (1, 1), 8, 16, False, False),
    ((24, 3, 3, 40), (1, 1), 8, 16, False, True),
    ((64, 1, 1, 70), (1, 1), 8, 32, False, False),  # three IFM blocks, the last clipped
    ((7, 9, 10, 5), (1, 1), 8, 8, False, False),  # 9x10 kernel: four 8x8 sub-kernels
    ((7, 9, 10, 5), (1, 1), 8, 8, False, True),
    ((10, 4, 10, 1), (1, 2), 8, 8, False, True),  # dilation 2 halves the sub-kernel width
    ((16, 3, 3, 20), (1, 1), 16, 16, False, False),  # 16-bit IFM: 16-deep IFM blocks
    ((16, 3, 3, 20), (1, 1), 16, 16, False, True),
    ((20, 3, 3, 1), (1, 1), 8, 16, True, False),  # depthwise, taps padded to 4
    ((33, 5, 5, 1), (2, 1), 8, 16, True, False),
    ((8, 10, 9, 1), (1, 1), 16, 8, True, False),
]


def _layout(accelerator: str, shape, dilation, bits, block_depth, depthwise, part_kernel) -> WeightLayout:
    config = ACCELERATORS[accelerator]
    return WeightLayout(shape[0], shape[1], shape[2], shape[3], block_depth, config.ofm_ublock_depth,
                        config.ifm_ublock_depth, depthwise, part_kernel, bits, dilation[1], dilation[0])


@pytest.mark.parametrize("accelerator", sorted(_VELA_ACCELERATORS))
@pytest.mark.parametrize("case", _CASES, ids=lambda c: f"{'x'.join(map(str, c[0]))}-d{c[1][0]}{c[1][1]}-{c[2]}bit"
                         f"-blk{c[3]}{'-dw' if c[4] else ''}{'-pk' if c[5] else ''}")
def test_encode_decode_round_trip(accelerator, case):
    shape, dilation, bits, block_depth, depthwise, part_kernel = case
    weights = np.random.default_rng(sum(shape)).integers(-255, 256, size=shape, dtype=np.int16)
    traversal = NpuBlockTraversal.PART_KERNEL_FIRST if part_kernel else NpuBlockTraversal.DEPTH_FIRST
    encoded = npu_encode_weights(_VELA_ACCELERATORS[accelerator], weights, dilation, bits, block_depth, depthwise,
                                 traversal)
    decoded = decoding(bytes(encoded), _layout(accelerator, *case)).weights
    assert np.array_equal(decoded, weights)


def test_stream_order_visits_every_weight_once():
    for case in _CASES:
        order = stream_order(_layout("ethos-u55-32", *case))
        assert np.array_equal(np.sort(order[order >= 0]), np.arange(np.prod(case[0])))


def test_depth_first_order_hand_checked():
    """U55-128, 1x1 kernel, 2 OFM x 9 IFM channels: IFM lanes innermost, then OFM lanes, then IFM ublocks;
    the 32-deep IFM block is always visited in full (zeros past the 9 channels)."""
    order = stream_order(WeightLayout(2, 1, 1, 9, 16, 8, 8, False, False, 8))
    assert order[:8].tolist() == list(range(8))  # OFM 0, IFM 0..7
    assert order[8:16].tolist() == list(range(9, 17))  # OFM 1, IFM 0..7
    assert (order[16:64] == -1).all()  # OFM lanes 2..7 do not exist
    assert order[64:66].tolist() == [8, -1] and order[72] == 17  # second IFM ublock: channel 8
    assert order.size == 4 * 64


def test_wrong_length_and_padding_are_rejected():
    layout = WeightLayout(2, 1, 1, 9, 16, 8, 8, False, False, 8)
    with pytest.raises(WeightFormatError, match="decodes to 255 weights.*needs 256"):
        unreorder(np.zeros(255, np.int16), layout)
    stream = np.zeros(256, np.int16)
    stream[20] = 3  # a padding position (OFM lane 2)
    with pytest.raises(WeightFormatError, match="padding"):
        unreorder(stream, layout)


def test_corrupt_stream_is_an_error_not_a_crash():
    layout = WeightLayout(8, 1, 1, 8, 8, 8, 8, False, False, 8)
    with pytest.raises(WeightFormatError, match="mlw decoder aborted"):
        decoding(bytes(range(7, 50)), layout).weights
    weights = np.arange(64, dtype=np.int16).reshape(8, 1, 1, 8)
    encoded = npu_encode_weights(NpuAccelerator.Ethos_U55_128, weights, (1, 1), 8, 8, False,
                                 NpuBlockTraversal.DEPTH_FIRST)
    assert np.array_equal(decoding(bytes(encoded), layout).weights, weights)
    decoder = mlw._Decoder()  # a helper process killed by a stream starts again for its next one
    with pytest.raises(mlw.MlwDecodeError, match="bitbuf_getbit: underrun"):
        decoder.decode(bytes(range(7, 50)))
    assert np.array_equal(unreorder(decoder.decode(bytes(encoded)), layout), weights)
