"""Block-config choice (`codegen.block_config`): the block config picked is the fastest valid one, none when no
block fits, and the choice is remembered for operations that differ only in what it does not read."""
import copy

import pytest
from ethosu.vela import api as vapi

from ethosu_tvm.arch.system import DEFAULT_SYSTEM
from ethosu_tvm.codegen import block_config
from ethosu_tvm.codegen.block_config import choose_block_config, find_block_configs
from ethosu_tvm.codegen.operation_cost import costing, estimate_cycles
from ethosu_tvm.target import EthosuTarget
from ethosu_tvm.testing import models

from cost_support import PART_KERNEL, SINGLE_OPS, U55_128, codegen_operations
from sim_support import ACCELERATORS


@pytest.mark.parametrize("accelerator", ACCELERATORS)
@pytest.mark.parametrize("case", ["kws_first_conv", "conv3x3_depth32", "depthwise", "max_pool", "mul", "lut"])
def test_chosen_block_config_is_the_fastest_valid_one(case, accelerator):
    kind, params = SINGLE_OPS[case]
    _, npu_ops, _ = codegen_operations(models.make(kind, seed=1, **params), accelerator)
    npu_op = [op for op in npu_ops if isinstance(op, vapi.NpuBlockOperation)][0]
    npu_accelerator = EthosuTarget(accelerator).npu_accelerator
    # Code generation chooses before it encodes the weights (the stream depends on the block depth): the cost model
    # then counts them at their uncompressed size.
    for streams in ("weights", "biases"):
        if getattr(npu_op, streams, None):
            setattr(npu_op, streams, [vapi.NpuAddressRange(r.region, r.address, 0) for r in getattr(npu_op, streams)])
    configs = find_block_configs(npu_op, npu_accelerator)
    chosen = choose_block_config(npu_op, npu_accelerator)
    assert chosen in configs and len(configs) > 1
    assert npu_op.block_config == chosen
    best = estimate_cycles(npu_op, npu_accelerator, chosen).cycles
    assert all(estimate_cycles(npu_op, npu_accelerator, block).cycles >= best for block in configs)
    # A preferred depth wins when some valid config has it, and is ignored otherwise.
    for depth in {c.depth for c in configs}:
        assert choose_block_config(npu_op, npu_accelerator, depth).depth == depth
    assert choose_block_config(npu_op, npu_accelerator, 10_000) == chosen


def test_no_block_config_when_nothing_fits(monkeypatch, unremembered_block_configs):
    _, (npu_op,), _ = codegen_operations(models.make("max_pool2d", seed=0), "ethos-u55-128")

    from ethosu.vela import architecture_allocator

    monkeypatch.setattr(architecture_allocator, "try_block_config", lambda *arguments: None)  # no block fits
    block_config._choose_block_config.cache_clear()  # the answers before the patch are remembered
    block_config._find_block_configs.cache_clear()
    block_config._SEARCHES.clear()
    assert find_block_configs(npu_op, U55_128) == []
    assert choose_block_config(npu_op, U55_128) is None


def _choice_key(npu_op):
    """What choose_block_config remembers its choice by."""
    return (block_config._BlockSearch(npu_op), costing(npu_op, U55_128, DEFAULT_SYSTEM))


def test_block_config_is_remembered_for_operations_that_differ_only_in_what_the_choice_does_not_read():
    _, npu_ops, _ = codegen_operations(models.make("conv2d", seed=2, **SINGLE_OPS["conv3x3_depth32"][1]),
                                       "ethos-u55-128")
    (npu_op,) = [op for op in npu_ops if isinstance(op, vapi.NpuBlockOperation)]
    npu_op.block_config = None  # as code generation asks: before choosing
    chosen = choose_block_config(npu_op, U55_128)
    moved = copy.deepcopy(npu_op)
    moved.ifm.tiles = moved.ifm.tiles._replace(addresses=[a + 4096 for a in moved.ifm.tiles.addresses])
    moved.ofm.name, moved.ifm.name = "elsewhere", "another"
    moved.weights = [r._replace(address=r.address + 64) for r in moved.weights]
    moved.ofm.quantization = vapi.NpuQuantization(scale_f32=0.25, zero_point=3)  # another layer of the same shape
    moved.activation = vapi.NpuActivation(vapi.NpuActivationOp.NONE_OR_RELU)
    moved.activation.min, moved.activation.max = 0.0, 6.0
    assert _choice_key(moved) == _choice_key(npu_op)
    assert block_config._choose_block_config.__wrapped__(*_choice_key(moved), U55_128, None) == chosen
    # Everything the choice reads tells operations apart: regions, shapes, kernels, stream lengths, traversal.
    changes = [
        lambda op: setattr(op.ifm, "region", op.ifm.region + 1),
        lambda op: setattr(op.ofm, "shape", op.ofm.shape._replace(width=op.ofm.shape.width - 1)),
        lambda op: setattr(op.kernel, "stride_x", 2),
        lambda op: setattr(op, "weights", [r._replace(length=r.length + 16) for r in op.weights]),
        lambda op: setattr(op, "block_traversal", PART_KERNEL),
        lambda op: setattr(op, "activation", vapi.NpuActivation(vapi.NpuActivationOp.TABLE_LOOKUP)),
    ]
    for change in changes:
        other = copy.deepcopy(npu_op)
        change(other)
        assert _choice_key(other) != _choice_key(npu_op)


@pytest.mark.parametrize("case", ["conv3x3_depth32", "depthwise", "mul"])
def test_block_configs_of_stripes_at_any_height_are_vela_s(case, unremembered_block_configs):
    """The search is remembered by the OFM's extent up to the largest block and the IFM's depth: for stripes of
    every height and width around those limits (and an IFM2 larger than the IFM), Vela's own answer."""
    from ethosu.vela.architecture_features import Accelerator, create_default_arch

    for accelerator in vapi.NpuAccelerator:
        most = create_default_arch(Accelerator.from_npu_accelerator(accelerator)).ofm_block_max
        assert (most.height, most.width, most.depth) <= block_config.SEARCH_EXTENT
    kind, params = SINGLE_OPS[case]
    _, npu_ops, _ = codegen_operations(models.make(kind, seed=3, **params), "ethos-u55-128")
    (npu_op,) = [op for op in npu_ops if isinstance(op, vapi.NpuBlockOperation)]
    for height, width in [(1, 1), (1, 70), (2, 7), (5, 64), (31, 65), (32, 3), (33, 64), (40, 130), (112, 112)]:
        trial = copy.deepcopy(npu_op)
        trial.ofm.shape = trial.ofm.shape._replace(height=height, width=width)
        trial.ifm.shape = trial.ifm.shape._replace(height=height + 2, width=width + 2)
        if trial.ifm2 is not None:
            trial.ifm2.shape = trial.ifm2.shape._replace(height=height + 3, width=width + 3, depth=8)
        for accelerator in (U55_128, vapi.NpuAccelerator.Ethos_U55_32):
            assert find_block_configs(trial, accelerator) == vapi.npu_find_block_configs(trial, accelerator)


@pytest.mark.parametrize("case, upscale", [("conv3x3_depth32", False), ("conv3x3_depth32", True), ("depthwise", False),
                                           ("mul", False)])
def test_a_feature_map_no_larger_than_one_searched_takes_no_search(case, upscale, unremembered_block_configs):
    """After a search of an OFM (a whole tensor), OFMs no higher and no wider (its stripes) ask Vela's search
    nothing more, and get for each shape what Vela's own search of it answers (the block heights and widths it tries
    go in steps of at least two, the IFM upscaled or not); a larger OFM, or a first one row high, is searched."""
    kind, params = SINGLE_OPS[case]
    _, npu_ops, _ = codegen_operations(models.make(kind, seed=3, **params), "ethos-u55-128")
    (npu_op,) = [op for op in npu_ops if isinstance(op, vapi.NpuBlockOperation)]
    if upscale:
        npu_op.ifm_upscale = vapi.NpuResamplingMode.TRANSPOSE
    vela, search = vapi.npu_find_block_configs, block_config._vela_search
    block_config._find_block_configs.cache_clear()
    block_config._SEARCHES.clear()
    for accelerator in [a for a in vapi.NpuAccelerator if a.name.startswith("Ethos_U55")]:
        searched = []
        shapes = [(5, 7), (40, 20), (16, 20), (31, 2), (2, 20), (3, 1), (1, 9), (1, 3), (33, 64), (112, 70), (7, 100)]
        for height, width in shapes:
            trial = copy.deepcopy(npu_op)
            trial.ofm.shape = trial.ofm.shape._replace(height=height, width=width)
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(block_config, "_vela_search", lambda op, acc: searched.append(op) or search(op, acc))
                found = find_block_configs(trial, accelerator)
            assert found == vela(trial, accelerator)
        assert [(op.ofm.shape.height, op.ofm.shape.width) for op in searched] == [(5, 7), (40, 20), (1, 9), (33, 64)]


@pytest.mark.parametrize("case", ["conv3x3_depth32", "depthwise", "mul"])
def test_searches_are_shared_by_ofm_depths_and_ifm_depths_vela_does_not_tell_apart(case, unremembered_block_configs):
    """Vela reads the IFM depth only up to 32 and tries OFM block depths in multiples of 16 below the OFM's: an OFM
    of a depth searched before, or of a multiple of 16 below one, within its height and width, asks Vela nothing
    more, and every shape gets what Vela's own search of it answers."""
    kind, params = SINGLE_OPS[case]
    _, npu_ops, _ = codegen_operations(models.make(kind, seed=3, **params), "ethos-u55-128")
    (npu_op,) = [op for op in npu_ops if isinstance(op, vapi.NpuBlockOperation)]
    vela, search = vapi.npu_find_block_configs, block_config._vela_search
    # (OFM height, width, depth, IFM depth); the 7th and the last two are answered from earlier searches
    shapes = [(40, 70, 24, 24), (20, 20, 16, 40), (20, 20, 24, 100), (10, 10, 8, 8), (10, 10, 48, 33),
              (40, 70, 200, 64), (7, 7, 96, 500), (7, 7, 20, 32), (5, 5, 16, 32), (20, 20, 24, 48)]
    for accelerator in [a for a in vapi.NpuAccelerator if a.name.startswith("Ethos_U55")]:
        searched = []
        for height, width, depth, ifm_depth in shapes:
            trial = copy.deepcopy(npu_op)
            trial.ofm.shape = vapi.NpuShape3D(height, width, depth)
            trial.ifm.shape = vapi.NpuShape3D(height + 2, width + 2, ifm_depth)
            if trial.ifm2 is not None:
                trial.ifm2.shape = trial.ifm.shape
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(block_config, "_vela_search", lambda op, acc: searched.append(op) or search(op, acc))
                found = find_block_configs(trial, accelerator)
            assert found == vela(trial, accelerator), (height, width, depth, ifm_depth)
        assert [(op.ofm.shape.depth, op.ifm.shape.depth) for op in searched] == [
            (24, 24), (16, 40), (24, 100), (8, 8), (48, 33), (200, 64), (20, 32)]


@pytest.mark.parametrize("case", sorted(set(SINGLE_OPS) - {"reshape"}))
def test_the_search_is_vela_s_without_the_blocks_that_cannot_fit(case):
    """On every accelerator, for the operation and for it upscaled, one row high, one channel deep and very deep:
    the configs Vela's own search answers, in its order."""
    kind, params = SINGLE_OPS[case]
    _, npu_ops, _ = codegen_operations(models.make(kind, seed=3, **params), "ethos-u55-128")
    for npu_op in [op for op in npu_ops if isinstance(op, vapi.NpuBlockOperation)]:
        for change in [None, "upscale", "row", "shallow", "deep"]:
            trial = copy.deepcopy(npu_op)
            shape = trial.ofm.shape
            if change == "upscale":
                trial.ifm_upscale = vapi.NpuResamplingMode.NEAREST
            elif change:
                trial.ofm.shape = shape._replace(**{"row": dict(height=1), "shallow": dict(depth=1),
                                                    "deep": dict(depth=600, width=90)}[change])
            for accelerator in vapi.NpuAccelerator:
                try:
                    vela = tuple(vapi.npu_find_block_configs(trial, accelerator))
                except AssertionError:
                    vela = ()
                assert block_config._vela_search(trial, accelerator) == vela, (change, accelerator)
