"""Unscheduled NPU subgraphs run in the model's order or in TE's walk of the graph, whichever needs the smaller
scratch (`codegen.artifact._model_order`). In a downsampling residual block TE's walk follows the ADD's operands,
so it may run the 1x1 shortcut first, whose output then waits beside both 3x3 convolutions' outputs: three
feature maps live instead of two. Whether the model or the ADD puts the branch first, it runs first, bit-exact with
LiteRT. (Where both put the shortcut first, it still runs first: only these two orders are tried.)"""
import pytest

from ethosu_tvm.testing import models

from sim_support import assert_model_exact, compile_model

MAP = 8 * 8 * 16  # bytes of one of the block's feature maps


def _downsampling_block(shortcut_listed_first: bool) -> bytes:
    """y = conv3x3(conv3x3 stride 2 (x)); s = conv1x1 stride 2 (x); conv1x1(add(...)). Listed branch first, the ADD
    reads the shortcut first (as ResNet-large's do), so TE's walk runs it first; listed shortcut first, the ADD reads
    the branch first."""
    net = models.Net(3)
    x = net.input((1, 16, 16, 8), scale=0.05, zero_point=2)

    def branch():
        return net.conv2d(net.conv2d(x, out_channels=16, stride=(2, 2), activation="RELU"), out_channels=16)

    def shortcut():
        return net.conv2d(x, out_channels=16, kernel=(1, 1), stride=(2, 2))

    if shortcut_listed_first:
        s = shortcut()
        total = net.add(branch(), s, activation="RELU")
    else:
        y = branch()
        total = net.add(shortcut(), y, activation="RELU")
    net.output(net.conv2d(total, out_channels=8, kernel=(1, 1)))
    return net.build()


@pytest.mark.parametrize("accelerator", ["ethos-u55-64", "ethos-u55-256"])
@pytest.mark.parametrize("shortcut_listed_first", [False, True])
def test_the_branch_runs_before_the_shortcut(shortcut_listed_first, accelerator):
    model = _downsampling_block(shortcut_listed_first)
    assert_model_exact(model, accelerator, seeds=(0, 1))
    _, (artifact,) = compile_model(model, accelerator)
    branch, shortcut = ["conv2d:lv1", "conv2d:lv2"], ["conv2d:lv"]
    if not shortcut_listed_first:
        branch, shortcut = ["conv2d:lv", "conv2d:lv1"], ["conv2d:lv2"]
    assert [op.source for op in artifact.ops] == [*branch, *shortcut, "add:lv_1", "conv2d:lv3"]
    assert 2 * MAP <= artifact.scratch_size < 3 * MAP
