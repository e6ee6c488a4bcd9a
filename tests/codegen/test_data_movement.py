"""Data movement on the NPU (int8, and int16 where the factory has it), bit-exact with LiteRT in the simulator on every
U55 configuration: CONCATENATION and PACK as one copy per input into a box of the OFM; PAD and PADV2 as a copy of the
IFM into its box and copies of constant blocks of the pad value around it; MIRROR_PAD as one copy per reflected row
or column, concatenated with the tensor; SLICE, STRIDED_SLICE, SPLIT, SPLIT_V and UNPACK as copies of boxes of the
IFM, strided on height and width like a 1x1 pool (then a reshape where axes shrink); RESIZE_NEAREST_NEIGHBOR by 2, 4
or 8 as copies with the NPU's NEAREST upscaling (with corners aligned, then a slice), RESIZE_BILINEAR by 2, 4 or 8 (or
(H-1)·k+1 x (W-1)·k+1 with corners aligned) as an average pool reading its IFM upscaled, after such copies for the
doublings before the last; TRANSPOSE of two axes (unit axes aside, axes that stay together merged) as a copy with
the IFM's row and column strides swapped. And the constraints that keep the rest on the host."""
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ethosu_tvm.frontend.importer import from_tflite
from ethosu_tvm.frontend.indexing import GATHER_SLICES
from ethosu_tvm.partition import partition_for_ethosu
from ethosu_tvm.partition.npu_view import transposed_view
from ethosu_tvm.testing import models
from ethosu_tvm.testing.reference import output_infos

from sim_support import ACCELERATORS, assert_model_exact, compile_model

CONCATENATIONS = {
    "channels": dict(in_shape=(1, 4, 4, 8), axis=3),
    "channels-odd": dict(in_shape=(1, 3, 5, 7), axis=-1, num_inputs=3),
    "rows": dict(in_shape=(1, 5, 6, 16), axis=1, num_inputs=3),
    "columns": dict(in_shape=(1, 5, 3, 7), axis=2),
    "2-D": dict(in_shape=(6, 5), axis=0, num_inputs=4),
    "3-D": dict(in_shape=(3, 4, 9), axis=1),
    "one input": dict(in_shape=(1, 2, 3, 4), axis=3, num_inputs=1),
}


@pytest.mark.parametrize("accelerator", ACCELERATORS)
@pytest.mark.parametrize("case", CONCATENATIONS)
def test_concatenation(case, accelerator):
    for seed in (0, 5):
        assert_model_exact(models.make("concatenation", seed, **CONCATENATIONS[case]), accelerator)


PACKS = {
    "rows": dict(in_shape=(3, 5), num_inputs=3, axis=0),
    "columns": dict(in_shape=(3, 5), num_inputs=3, axis=1),
    "channels": dict(in_shape=(3, 5), num_inputs=2, axis=2),
    "3-D": dict(in_shape=(1, 6, 2), num_inputs=2, axis=2),
    "5-D": {},
    "5-D-rows": dict(in_shape=(1, 3, 5, 6), num_inputs=3, axis=2),
    "5-D-channels": dict(in_shape=(1, 4, 3, 5), num_inputs=2, axis=4),
    "5-D-batches": dict(in_shape=(2, 3, 4, 5), num_inputs=2, axis=1),
}


@pytest.mark.parametrize("accelerator", ACCELERATORS)
@pytest.mark.parametrize("case", PACKS)
def test_pack(case, accelerator):
    """An input whose 4-D shape lacks the new axis where the output has it is first copied into that shape; a 5-D
    output is seen as (1, before, count, after), the axes around the new one merged."""
    for seed in (0, 5):
        assert_model_exact(models.make("pack", seed, **PACKS[case]), accelerator)


PADS = {
    "pad": ("pad", {}),
    "pad-zero-point": ("pad", dict(in_zp=50, paddings=((0, 0), (0, 3), (2, 0), (1, 1)))),
    "pad-channels": ("pad", dict(in_shape=(1, 5, 6, 7), paddings=((0, 0), (1, 0), (0, 0), (3, 6)))),
    "pad-3-D": ("pad", dict(in_shape=(3, 4, 5), paddings=((2, 1), (0, 0), (3, 4)))),
    "pad-wide": ("pad", dict(in_shape=(1, 2, 3, 16), paddings=((0, 0), (9, 7), (12, 20), (0, 0)))),
    "padv2": ("padv2", {}),
    "padv2-value": ("padv2", dict(in_zp=50, value=-128, paddings=((0, 0), (1, 2), (0, 0), (0, 5)))),
    "padv2-2-D": ("padv2", dict(in_shape=(5, 9), paddings=((3, 0), (1, 4)), value=127)),
}


@pytest.mark.parametrize("accelerator", ACCELERATORS)
@pytest.mark.parametrize("case", PADS)
def test_pad(case, accelerator):
    op, params = PADS[case]
    for seed in (0, 5):
        assert_model_exact(models.make(op, seed, **params), accelerator)


MIRROR_PADS = {
    "reflect": {},
    "symmetric": dict(mode="SYMMETRIC"),
    "reflect-wide": dict(in_shape=(1, 5, 6, 3), paddings=((0, 0), (4, 3), (0, 0), (2, 0))),
    "symmetric-channels": dict(in_shape=(1, 4, 3, 5), paddings=((0, 0), (0, 0), (1, 1), (3, 4)), mode="SYMMETRIC"),
    "reflect-2-D": dict(in_shape=(6, 9), paddings=((2, 5), (8, 1))),
}


@pytest.mark.parametrize("accelerator", ACCELERATORS)
@pytest.mark.parametrize("case", MIRROR_PADS)
def test_mirror_pad(case, accelerator):
    """Per padded axis, one copy per reflected row (the NPU copies forwards) and the tensor, concatenated."""
    for seed in (0, 5):
        assert_model_exact(models.make("mirror_pad", seed, **MIRROR_PADS[case]), accelerator)


BLOCK_MOVES = {
    "depth-to-space": ("depth_to_space", {}),
    "depth-to-space-by-3": ("depth_to_space", dict(block_size=3, in_shape=(1, 3, 5, 18))),
    "depth-to-space-by-4": ("depth_to_space", dict(block_size=4, in_shape=(1, 2, 3, 48))),
    "space-to-depth": ("space_to_depth", {}),
    "space-to-depth-by-3": ("space_to_depth", dict(block_size=3, in_shape=(1, 6, 9, 5))),
    "space-to-depth-by-4": ("space_to_depth", dict(block_size=4, in_shape=(1, 8, 4, 3))),
}


@pytest.mark.parametrize("accelerator", ACCELERATORS)
@pytest.mark.parametrize("case", BLOCK_MOVES)
def test_depth_to_space_and_back(case, accelerator):
    """DEPTH_TO_SPACE and SPACE_TO_DEPTH (which Vela leaves on the CPU): one strided copy per block row, each into
    its place in the output (the concatenation of the copies is written in place), then a copy into the output's
    shape; SPACE_TO_DEPTH first regroups its input (a copy)."""
    op, params = BLOCK_MOVES[case]
    block = params.get("block_size", 2)
    for seed in (0, 5):
        assert_model_exact(models.make(op, seed, **params), accelerator)
    _, (artifact,) = compile_model(models.make(op, 0, **params), accelerator)
    regroup = ["ethosu.identity"] if op == "space_to_depth" else []
    assert [o.op for o in artifact.ops] == regroup + ["ethosu.slice"] * block + ["ethosu.identity"]


def test_mirror_pad_of_a_thousand_columns():
    """MIRROR_PAD of 1,000 reflected columns: one slice per column, concatenated, whose definition nests one
    select per input; reading the loads of that TIR recursed once per input and exceeded Python's recursion
    limit."""
    model = models.make("mirror_pad", 0, in_shape=(1, 2, 1050, 2), paddings=((0, 0), (0, 0), (1000, 0), (0, 0)))
    assert_model_exact(model, "ethos-u55-128", seeds=(0,))


@pytest.mark.parametrize("count", [GATHER_SLICES, GATHER_SLICES + 1])
def test_gather_at_many_uneven_indices(count):
    """GATHER at up to GATHER_SLICES uneven constant indices is that many slices concatenated, on the NPU; more
    are one host gather (GATHER_ND over the axes up to the gathered one), whose build does not grow with them."""
    import ethosu_tvm
    from ethosu_tvm.testing.reference import random_inputs, run_litert

    indices = np.random.default_rng(count).integers(0, 40, size=count)
    model = models.make("gather", 0, in_shape=(1, 40, 4, 8), axis=1, indices=indices)
    module = ethosu_tvm.build(ethosu_tvm.from_tflite(model), target="ethos-u -accelerator-config=ethos-u55-128,c")
    assert module.offload.counts() == {"ethos-u" if count <= GATHER_SLICES else "host": 1}
    for seed in (0, 1):
        inputs = random_inputs(model, seed)
        assert np.array_equal(list(module.run(inputs).values())[0], run_litert(model, inputs)[0])


GATHERS_ND = {  # constant indices: one slice per index tuple, concatenated (Vela leaves GATHER_ND on the CPU)
    "rows": ("gather_nd", {}),
    "rows-int16": ("gather_nd", dict(dtype="int16")),
    "elements": ("gather_nd", dict(in_shape=(5, 4), indices=((4, 3), (0, 0), (2, 1), (4, 3)))),
    "planes": ("gather_nd", dict(in_shape=(1, 4, 3, 5), indices=((0, 1), (0, 3), (0, 0)))),
}


@pytest.mark.parametrize("accelerator", ACCELERATORS)
@pytest.mark.parametrize("case", GATHERS_ND)
def test_gather_nd_at_constant_indices(case, accelerator):
    op, params = GATHERS_ND[case]
    for seed in (0, 5):
        assert_model_exact(models.make(op, seed, **params), accelerator)


SLICES = {
    "slice": ("slice", {}),
    "slice-channels": ("slice", dict(in_shape=(1, 6, 7, 20), begin=(0, 0, 3, 5), size=(1, -1, 2, 11))),
    "slice-batch": ("slice", dict(in_shape=(3, 4, 5, 6), begin=(2, 1, 0, 3), size=(1, 2, 5, 3))),
    "slice-2-D": ("slice", dict(in_shape=(9, 13), begin=(4, 2), size=(3, 10))),
    "strided-slice": ("strided_slice", dict(strides=(1, 1, 1, 1))),
    "strided-slice-stride-2": ("strided_slice", {}),
    "strided-slice-strides-3x2": ("strided_slice", dict(in_shape=(1, 13, 11, 5), begin=(0, 1, 2, 1),
                                                        end=(1, 13, 11, 4), strides=(1, 3, 2, 1))),
    "strided-slice-shrunk-stride": ("strided_slice", dict(in_shape=(2, 9, 6, 3), begin=(1, 0, 5, 0), end=(2, 9, 6, 3),
                                                          strides=(7, 2, 5, 1), shrink_axis_mask=4)),
    "strided-slice-shrink-rows": ("strided_slice", dict(begin=(0, 2, 1, 1), end=(1, 3, 7, 4), strides=(1, 1, 1, 1),
                                                        shrink_axis_mask=2)),
    "strided-slice-shrink-columns": ("strided_slice", dict(begin=(0, 2, 1, 1), end=(1, 7, 3, 4),
                                                           strides=(1, 1, 1, 1), shrink_axis_mask=4)),
    "strided-slice-new-axis": ("strided_slice", dict(in_shape=(6, 10), begin=(1, 0, 2), end=(5, 0, 9),
                                                     strides=(1, 1, 1), new_axis_mask=2)),
    "split": ("split", {}),
    "split-rows": ("split", dict(in_shape=(1, 9, 4, 5), num_splits=3, axis=1)),
    "split_v": ("split_v", {}),
    "split_v-columns": ("split_v", dict(in_shape=(1, 3, 10, 4), size_splits=(4, -1), axis=2)),
    "unpack": ("unpack", dict(in_shape=(3, 4, 5), axis=1)),
    "unpack-first": ("unpack", dict(in_shape=(3, 4, 5), axis=0)),
}


@pytest.mark.parametrize("accelerator", ACCELERATORS)
@pytest.mark.parametrize("case", SLICES)
def test_slice(case, accelerator):
    """Each output of SPLIT, SPLIT_V and UNPACK is a subgraph of its own: they read the input, not each other."""
    op, params = SLICES[case]
    for seed in (0, 5):
        model = models.make(op, seed, **params)
        assert_model_exact(model, accelerator, subgraphs=len(output_infos(model)))


RESIZES = {
    "default": {},
    "half-pixel": dict(half_pixel_centers=True, in_shape=(1, 5, 3, 7), size=(10, 6)),
    "large": dict(in_shape=(1, 24, 20, 40), size=(48, 40)),
    "one-pixel": dict(in_shape=(1, 1, 1, 3), size=(2, 2)),
    "by-4": dict(in_shape=(1, 3, 5, 6), size=(12, 20)),
    "by-8-half-pixel": dict(in_shape=(1, 2, 3, 4), size=(16, 24), half_pixel_centers=True),
    "aligned-by-2": dict(in_shape=(1, 4, 3, 5), size=(7, 5), align_corners=True),
    "aligned-by-8": dict(in_shape=(1, 3, 2, 4), size=(17, 9), align_corners=True),
    "aligned-one-row": dict(in_shape=(1, 1, 4, 4), size=(1, 13), align_corners=True),
    "same-size": dict(in_shape=(1, 5, 6, 3), size=(5, 6)),
    "one-pixel-to-any": dict(in_shape=(1, 1, 1, 5), size=(3, 7), align_corners=True),
    "one-pixel-to-a-wide-box": dict(in_shape=(1, 1, 1, 4), size=(3, 6), half_pixel_centers=True),
    "int16-by-4": dict(in_shape=(1, 3, 2, 5), size=(12, 8), dtype="int16"),
    "int16-aligned-by-4": dict(in_shape=(1, 2, 3, 5), size=(5, 9), align_corners=True, dtype="int16"),
}


@pytest.mark.parametrize("accelerator", ACCELERATORS)
@pytest.mark.parametrize("case", RESIZES)
def test_resize_nearest_neighbor(case, accelerator):
    for seed in (0, 5):
        assert_model_exact(models.make("resize_nearest_neighbor", seed, **RESIZES[case]), accelerator)


BILINEAR_SHAPES = [(1, h, w, 3) for h in (1, 2, 3, 4) for w in (1, 2, 5)]
BILINEAR_MODES = {"asymmetric": {}, "align-corners": dict(align_corners=True),
                  "half-pixel": dict(half_pixel_centers=True)}


# half-pixel centres by 2 only: larger factors are refused (test_the_npu_refuses)
BILINEAR_FACTORS = [(mode, k) for mode in BILINEAR_MODES for k in ((2,) if mode == "half-pixel" else (2, 4, 8))]


@pytest.mark.parametrize("mode,factor", BILINEAR_FACTORS)
@pytest.mark.parametrize("in_shape", BILINEAR_SHAPES, ids=str)
def test_resize_bilinear_small_shapes(in_shape, mode, factor):
    """Every small IFM, by k = 2, 4 and 8 (half-pixel centres: 2) and to (H-1)·k+1 x (W-1)·k+1 with corners
    aligned: each output pixel one of TFLite's steps of 1/k (edges included), bit-exact over four seeds."""
    _, height, width, _ = in_shape
    aligned = mode == "align-corners"
    size = ((height - 1) * factor + 1, (width - 1) * factor + 1) if aligned else (factor * height, factor * width)
    model = models.make("resize_bilinear", 0, in_shape=in_shape, size=size, in_zp=-60, **BILINEAR_MODES[mode])
    assert_model_exact(model, "ethos-u55-128", seeds=range(4))


BILINEARS = {
    "default": {},
    "align-corners": dict(align_corners=True, size=(15, 15)),
    "half-pixel": dict(half_pixel_centers=True),
    "wide": dict(in_shape=(1, 3, 20, 40), size=(6, 40), in_zp=100),
    "align-corners-deep": dict(in_shape=(1, 5, 4, 33), size=(9, 7), align_corners=True),
    "half-pixel-large": dict(in_shape=(1, 12, 10, 20), size=(24, 20), half_pixel_centers=True, in_zp=30),
    "by-4": dict(in_shape=(1, 5, 3, 9), size=(20, 12), in_zp=-20),
    "by-8": dict(in_shape=(1, 3, 4, 5), size=(24, 32)),
    "aligned-by-4": dict(in_shape=(1, 4, 3, 6), size=(13, 9), align_corners=True),
    "aligned-by-8": dict(in_shape=(1, 2, 3, 5), size=(9, 17), align_corners=True, in_zp=90),
    "same-size": dict(in_shape=(1, 4, 7, 3), size=(4, 7), half_pixel_centers=True),
    "one-pixel-to-any": dict(in_shape=(1, 1, 1, 6), size=(5, 4), in_zp=-100),
    "one-pixel-half-pixel": dict(in_shape=(1, 1, 1, 6), size=(8, 8), half_pixel_centers=True),
    "one-pixel-aligned": dict(in_shape=(1, 1, 1, 6), size=(7, 5), align_corners=True),
}


@pytest.mark.parametrize("accelerator", ACCELERATORS)
@pytest.mark.parametrize("case", BILINEARS)
def test_resize_bilinear(case, accelerator):
    """RESIZE_BILINEAR as an average pool of the IFM upscaled by NEAREST: k x k of stride 1 over it upscaled by k, or
    with half-pixel centres 4x4 of stride 2 over it upscaled by 4; the same size as a copy."""
    for seed in (0, 5):
        assert_model_exact(models.make("resize_bilinear", seed, **BILINEARS[case]), accelerator)


@pytest.mark.parametrize("accelerator", ACCELERATORS)
@pytest.mark.parametrize("factor", (2, 4))
def test_resize_bilinear_pool_reads_the_last_doubling(factor, accelerator):
    """The average pool upscales its IFM as it reads it: by 2 nothing is copied (no scratch besides the I/O), by 4
    one copy of the IFM doubled (16x16x16 bytes)."""
    model = models.make("resize_bilinear", 0, in_shape=(1, 32 // factor, 32 // factor, 16), size=(32, 32))
    assert_model_exact(model, accelerator)
    _, (artifact,) = compile_model(model, accelerator)
    assert artifact.scratch_size == (0 if factor == 2 else 16 * 16 * 16)


TRANSPOSES = {
    "rows-columns": {},
    "rows-columns-large": dict(in_shape=(1, 20, 33, 24), perm=(0, 2, 1, 3)),
    "matrix": dict(in_shape=(6, 9), perm=(1, 0)),
    "3-D": dict(in_shape=(3, 5, 7), perm=(1, 0, 2)),
    "unit-axes": dict(in_shape=(1, 4, 1, 6), perm=(0, 3, 2, 1)),
    "reshape": dict(in_shape=(1, 3, 4, 1), perm=(0, 3, 1, 2)),
    "nchw-to-nhwc": dict(in_shape=(1, 3, 12, 10), perm=(0, 2, 3, 1)),
    "nhwc-to-nchw": dict(in_shape=(1, 7, 5, 16), perm=(0, 3, 1, 2)),
    "rotation-3-D": dict(in_shape=(4, 6, 5), perm=(2, 0, 1)),
    "merged-then-innermost": dict(in_shape=(2, 3, 4, 5), perm=(2, 0, 1, 3)),
}


@pytest.mark.parametrize("accelerator", ACCELERATORS)
@pytest.mark.parametrize("case", TRANSPOSES)
def test_transpose(case, accelerator):
    """Axes the output keeps side by side in order move as one: NCHW to NHWC swaps C with H·W."""
    for seed in (0, 5):
        assert_model_exact(models.make("transpose", seed, **TRANSPOSES[case]), accelerator)


@st.composite
def transposes(draw):
    """A shape of rank 2 to 4 (batch 1 at rank 4) and a permutation the NPU takes as one swap of two runs of axes,
    with or without one more run kept innermost."""
    rank = draw(st.integers(2, 4))
    shape = tuple(draw(st.lists(st.integers(1, 7), min_size=rank, max_size=rank)))
    shape = (1,) + shape[1:] if rank == 4 else shape
    perm = tuple(draw(st.permutations(range(rank))))
    assume(transposed_view(shape, perm) is not None)
    return shape, perm


@settings(max_examples=30, deadline=None)
@given(shape_perm=transposes(), dtype=st.sampled_from(["int8", "int16"]), accelerator=st.sampled_from(ACCELERATORS),
       seed=st.integers(0, 1000))
def test_transpose_sweep(shape_perm, dtype, accelerator, seed):
    shape, perm = shape_perm
    assert_model_exact(models.make("transpose", seed, dtype=dtype, in_shape=shape, perm=perm), accelerator)


@pytest.mark.parametrize("shape,perm,blocks", [((1, 3, 224, 224), (0, 2, 3, 1), 1),
                                               ((1, 2, 200, 330), (0, 2, 3, 1), 2),
                                               ((1, 165, 400, 3), (0, 3, 1, 2), 2)], ids=str)
def test_nchw_transposes_in_blocks_of_65535(shape, perm, blocks):
    """MobileNetV2's exported NCHW input, (3, 224·224) swapped, is one NPU operation, not one per row or channel
    (on ethos-u55-128 it writes the OFM with swapped strides: the cost model's blocks fit 3 x 50176 better than
    50176 x 3); H·W beyond 65535 (the NPU's largest extent) is swapped in blocks of 65535 rows, or columns back to
    NCHW."""
    model = models.make("transpose", 0, in_shape=shape, perm=perm)
    assert_model_exact(model, "ethos-u55-128", seeds=(0,))
    _, (artifact,) = compile_model(model, "ethos-u55-128")
    assert [(o.op, o.npu_operation, o.block_operations) for o in artifact.ops] == [
        ("ethosu.transpose", "NpuPoolingOperation", blocks)]


INT16 = {
    "padv2": ("padv2", dict(value=300)),
    "slice": ("slice", dict(in_shape=(1, 6, 7, 20), begin=(0, 0, 3, 5), size=(1, -1, 2, 11))),
    "strided-slice": ("strided_slice", dict(in_shape=(1, 13, 11, 5), begin=(0, 1, 2, 1), end=(1, 13, 11, 4),
                                            strides=(1, 3, 2, 1))),
    "split": ("split", dict(in_shape=(1, 9, 4, 5), num_splits=3, axis=1)),
    "concatenation-channels": ("concatenation", dict(in_shape=(1, 4, 5, 7), num_inputs=3)),
    "concatenation-rows": ("concatenation", dict(in_shape=(1, 3, 5, 4), axis=1)),
    "split_v": ("split_v", {}),
    "unpack": ("unpack", dict(in_shape=(3, 4, 5), axis=1)),
    "pack": ("pack", dict(in_shape=(3, 5), num_inputs=3, axis=1)),
    "pack-5-D": ("pack", dict(in_shape=(1, 4, 3, 5), num_inputs=3, axis=3)),
    "transpose": ("transpose", dict(in_shape=(3, 5, 7), perm=(1, 0, 2))),
    "resize": ("resize_nearest_neighbor", dict(half_pixel_centers=True, in_shape=(1, 5, 3, 7), size=(10, 6))),
    "reshape": ("reshape", {}),
}


@pytest.mark.parametrize("accelerator", ACCELERATORS)
@pytest.mark.parametrize("case", INT16)
def test_int16(case, accelerator):
    """The copies move 16-bit integers as they move 8-bit ones."""
    op, params = INT16[case]
    for seed in (0, 5):
        model = models.make(op, seed, dtype="int16", **params)
        assert_model_exact(model, accelerator, subgraphs=len(output_infos(model)))


REFUSED = {
    "concatenation-batch": ("concatenation", dict(in_shape=(2, 4, 4, 3), axis=0),
                            "input 0 has batch size 2; the IFM batch size must be 1"),
    "pack-batch": ("pack", dict(in_shape=(1, 3, 5), axis=0), "OFM has batch size 2; the IFM batch size must be 1"),
    "pack-long": ("pack", dict(in_shape=(1, 2, 2, 16400), axis=1),
                  "OFM has shape (1, 1, 2, 65600); tensor dimensions must be in the range [1, 65535]"),
    "add_n": ("add_n", dict(num_inputs=3), "no NPU pattern for ADD_N"),
    "reshape-to-batches": ("reshape", dict(in_shape=(24, 5), new_shape=(2, 3, 4, 5)),
                           "OFM has batch size 2; the IFM batch size must be 1"),
    "mirror-pad-batch": ("mirror_pad", dict(in_shape=(2, 4, 4, 3), paddings=((1, 0), (1, 1), (0, 0), (0, 0))),
                         "OFM has batch size 2; the IFM batch size must be 1"),
    "pad-batch": ("pad", dict(paddings=((1, 0), (0, 0), (2, 1), (0, 0))),
                  "OFM has batch size 2; the IFM batch size must be 1"),
    "strided-slice-channel-stride": ("strided_slice", dict(begin=(0, 1, 1, 0), end=(1, 7, 7, 4), strides=(1, 2, 1, 2)),
                                     "strides (1, 2, 1, 2); the NPU strides only height and width"),
    "strided-slice-backwards": ("strided_slice", dict(strides=(1, -1, 1, 1), begin=(0, 7, 0, 0), end=(1, 0, 8, 4)),
                                "strides (1, -1, 1, 1); the NPU strides forwards"),
    "strided-slice-stride-4": ("strided_slice", dict(in_shape=(1, 20, 4, 2), begin=(0, 0, 0, 0), end=(1, 20, 4, 2),
                                                     strides=(1, 4, 1, 1)),
                               "stride HxW is 4x1; stride values must be in the range [1, 3]"),
    "resize-align-corners": ("resize_nearest_neighbor", dict(align_corners=True),
                             "nearest neighbour resize from 8x8 to 16x16; the NPU resizes to (H-1)·k+1 x (W-1)·k+1"
                             " with corners aligned, k = 1, 2, 4 or 8,"
                             " or a 1x1 IFM to any size"),
    "resize-by-3": ("resize_nearest_neighbor", dict(size=(24, 16)),
                    "nearest neighbour resize from 8x8 to 24x16; the NPU resizes to kH x kW, k = 1, 2, 4 or 8,"
                    " or a 1x1 IFM to any size"),
    "resize-by-16": ("resize_nearest_neighbor", dict(in_shape=(1, 2, 2, 3), size=(32, 32)),
                     "nearest neighbour resize from 2x2 to 32x32; the NPU resizes to kH x kW, k = 1, 2, 4 or 8,"
                     " or a 1x1 IFM to any size"),
    "resize-one-pixel-to-a-row": ("resize_nearest_neighbor", dict(in_shape=(1, 1, 1, 4), size=(1, 9)),
                                  "nearest neighbour resize from 1x1 to 1x9; the NPU would upscale the pixel to 16x16,"
                                  " more than 4 times the OFM"),
    "resize-bilinear-half-pixel-by-3": ("resize_bilinear", dict(half_pixel_centers=True, size=(24, 16)),
                                        "bilinear resize from 8x8 to 24x16 with half-pixel centres; the NPU upscales"
                                        " to 2H x 2W"),
    "resize-bilinear-half-pixel-by-4": ("resize_bilinear", dict(half_pixel_centers=True, size=(32, 32)),
                                        "bilinear resize from 8x8 to 32x32 with half-pixel centres; the NPU upscales"
                                        " to 2H x 2W"),
    "resize-bilinear-by-3": ("resize_bilinear", dict(size=(24, 24)),
                             "bilinear resize from 8x8 to 24x24; the NPU resizes to kH x kW, k = 1, 2, 4 or 8,"
                             " or a 1x1 IFM to any size"),
    "resize-bilinear-unequal": ("resize_bilinear", dict(size=(16, 32)),
                                "bilinear resize from 8x8 to 16x32; the NPU resizes to kH x kW, k = 1, 2, 4 or 8,"
                                " or a 1x1 IFM to any size"),
    "resize-bilinear-aligned-by-2": ("resize_bilinear", dict(size=(16, 16), align_corners=True),
                                     "bilinear resize from 8x8 to 16x16; the NPU resizes to (H-1)·k+1 x (W-1)·k+1"
                                     " with corners aligned, k = 1, 2, 4 or 8,"
                                     " or a 1x1 IFM to any size"),
    "transpose-inner-axes": ("transpose", dict(in_shape=(1, 4, 8, 8), perm=(0, 1, 3, 2)),
                             "TRANSPOSE of (1, 4, 8, 8) by (0, 1, 3, 2); the NPU swaps two axes (unit axes aside, axes"
                             " that stay together merged) and keeps the innermost after them"),
    "transpose-deep": ("transpose", dict(in_shape=(2, 3, 256, 256), perm=(1, 0, 2, 3)),
                       "TRANSPOSE viewed as (2, 3, 65536); the depth kept innermost must be at most 65535"),
    "slice-batches": ("slice", dict(in_shape=(2, 8, 8, 4), begin=(0, 1, 2, 0), size=(2, 5, 4, -1)),
                      "OFM has batch size 2; the IFM batch size must be 1"),
}


@pytest.mark.parametrize("case", REFUSED)
def test_the_npu_refuses(case):
    op, params, reason = REFUSED[case]
    _, report = partition_for_ethosu(from_tflite(models.make(op, 0, **params)), "ethos-u55-128")
    assert [(e.target, e.reason) for e in report.ops] == [("host", reason)]
