"""The cascader end to end: `tvmc compile` with -enable-cascader at several SRAM limits, then the MLF's C run on
this PC (NPU launches in the simulator) against LiteRT. Limits are taken from the cascader's own frontier (its
smallest schedule, one in the middle) and from the build without the cascader; what is asserted is independent of
the cascader: bit-exact outputs, the NPU scratch in the memory plan within the limit and below the uncascaded one.
On ethos-u55-128, and for MLPerf Tiny's smallest schedules on the two-core ethos-u65-512 too."""
import json

import pytest

from ethosu_tvm.codegen.cascade import cascade_proposals
from ethosu_tvm.frontend.importer import from_tflite
from ethosu_tvm.host import fuse_host_ops
from ethosu_tvm.legalize import legalize
from ethosu_tvm.partition import partition_for_ethosu
from ethosu_tvm.target import EthosuTarget
from ethosu_tvm.testing import models, shared_model
from ethosu_tvm.testing.reference import reference_runner, run_litert
from ethosu_tvm.testing.models.net import Net

from aot_support import assert_bit_exact, compile_model, members, npu_target

ACCELERATOR = "ethos-u55-128"


def cascader_target(accelerator: str = ACCELERATOR) -> str:
    return f"ethos-u -accelerator-config={accelerator} -enable-cascader=1,c"


CASCADER = cascader_target()
MLPERF = {
    "kws": "mlperf_tiny_kws_dscnn_int8.tflite",
    "vww": "mlperf_tiny_vww_mobilenetv1_96_int8.tflite",
    "resnet8": "mlperf_tiny_ic_resnet8_int8.tflite",
    "ad": "mlperf_tiny_ad_fc_autoencoder_int8.tflite",
}


def npu_graphs(model: bytes, accelerator: str = ACCELERATOR):
    mod, _ = partition_for_ethosu(from_tflite(model), EthosuTarget(accelerator))
    return legalize(fuse_host_ops(mod))


def scratch_sizes(archive) -> dict[str, int]:
    """NPU scratch buffers of the memory plan in the MLF, by name."""
    plan = json.loads(members(archive)["./src/memory_plan.json"])
    return {b["name"]: b["size"] for b in plan["buffers"] if b["name"].endswith("_scratch")}


def limits(model: bytes, accelerator: str = ACCELERATOR) -> dict[str, int]:
    """SRAM limits to try: the smallest proposal of the (single) NPU graph's frontier and a middle one."""
    (graph,) = npu_graphs(model, accelerator)
    proposals = cascade_proposals(graph, EthosuTarget(accelerator))
    return {"smallest": proposals[0].memory, "middle": proposals[len(proposals) // 2].memory}


def check(model: bytes, tmp_path, limit: int, seeds=range(2), reference=run_litert, accelerator: str = ACCELERATOR):
    """Compile with the cascader at `limit`, check the scratch and bit-exactness (against LiteRT unless
    `reference` is given); returns the scratch sizes."""
    archive = compile_model(model, tmp_path / "cascaded", cascader_target(accelerator), "--cascader-sram-limit",
                            str(limit))
    sizes = scratch_sizes(archive)
    assert sizes and all(size <= limit for size in sizes.values()), (sizes, limit)
    assert_bit_exact(model, archive, tmp_path / "cascaded", seeds, reference=reference)
    return sizes


def uncascaded_scratch(model: bytes, tmp_path, accelerator: str = ACCELERATOR) -> dict[str, int]:
    return scratch_sizes(compile_model(model, tmp_path / "plain", npu_target(accelerator)))


def check_frontier_limit(model: bytes, tmp_path, which: str) -> None:
    """Bit-exact at the frontier's `which` limit; at the smallest one with less scratch than without the cascader."""
    plain = uncascaded_scratch(model, tmp_path)
    sizes = check(model, tmp_path, limits(model)[which], seeds=range(3))
    if which == "smallest":
        assert sum(sizes.values()) < sum(plain.values())


@pytest.mark.parametrize("name", ["resnet_block", "ds_cnn", "inverted_residual", "padded_convolutions"])
@pytest.mark.parametrize("which", ["smallest", "middle"])
def test_factory_graphs_bit_exact_at_several_limits(name, which, tmp_path):
    model = models.make_graph(name, seed=2)
    check_frontier_limit(model, tmp_path, which)


@pytest.mark.parametrize("which", ["smallest", "middle"])
def test_ifm2_scalars_between_convolutions_at_several_limits(which, tmp_path):
    """Elementwise operations with an IFM2 scalar (one on the left: reversed operands) inside a cascade."""
    net = Net(3)
    x = net.input((1, 16, 16, 8))
    y = net.conv2d(x, out_channels=8)
    y = net.sub(net.constant((), "int8", 0.03, 5), y)
    y = net.mul(y, net.constant((1,), "int8", 0.02, -4))
    net.output(net.conv2d(y, out_channels=8))
    model = net.build()
    check_frontier_limit(model, tmp_path, which)


@pytest.mark.parametrize("which", ["smallest", "middle"])
def test_16x8_chain_at_several_limits(which, tmp_path):
    """16x8 convolutions (int16 feature maps, 40-bit accumulators) cascaded: conv → depthwise → conv."""
    net = Net(5)
    x = net.input((1, 16, 16, 8), "int16")
    y = net.conv2d(x, out_channels=16, activation="RELU")
    y = net.depthwise_conv2d(y, kernel=(5, 5))
    net.output(net.conv2d(y, out_channels=8))
    model = net.build()
    check_frontier_limit(model, tmp_path, which)


def _moved_model(mover: str) -> bytes:
    """Two convolutions that cascade, then `mover` between convolutions: a CONCATENATION of two branches (along
    channels or rows), a PAD before a VALID convolution, a SLICE of rows and channels or a STRIDED_SLICE of every
    other row, every third column."""
    net = Net(4)
    x = net.conv2d(net.input((1, 16, 16, 8)), out_channels=32)
    x = net.conv2d(x, out_channels=8)
    if mover in ("concatenation", "concatenation_rows"):
        a = net.conv2d(x, out_channels=8, out_scale=0.05, out_zp=2)
        b = net.conv2d(x, out_channels=4 if mover == "concatenation" else 8, kernel=(1, 1), out_scale=0.05, out_zp=2)
        y = net.concatenation([a, b], axis=3 if mover == "concatenation" else 1)
    elif mover == "pad":
        y = net.pad(x, paddings=((0, 0), (1, 1), (2, 0), (0, 0)))
    elif mover == "slice":
        y = net.slice(x, begin=(0, 3, 0, 2), size=(1, 11, -1, 5))
    else:
        y = net.strided_slice(x, begin=(0, 1, 0, 0), end=(1, 16, 16, 8), strides=(1, 2, 3, 1))
    net.output(net.conv2d(y, out_channels=8, padding="VALID"))
    return net.build()


@pytest.mark.parametrize("mover", ["concatenation", "concatenation_rows", "pad", "slice", "strided_slice"])
@pytest.mark.parametrize("which", ["smallest", "middle"])
def test_data_movement_between_convolutions_at_several_limits(mover, which, tmp_path):
    """Pads, slices (strided ones like a pool) and concatenations along other axes than rows are striped by rows
    like any copy, so cascades run through them; a concatenation along rows is computed whole and ends one."""
    model = _moved_model(mover)
    check_frontier_limit(model, tmp_path, which)


def _reduced_model(reduction: str) -> bytes:
    """Two convolutions that cascade, then a reduction on the NPU: a SUM or MEAN over depth, a REDUCE_MAX over
    height and width, a REDUCE_MIN over width, an ARG_MAX."""
    net = Net(3)
    x = net.conv2d(net.input((1, 24, 24, 8)), out_channels=16, activation="RELU")
    x = net.conv2d(x, out_channels=12)
    outputs = {"sum": lambda: net.sum(x, axis=(3,)), "mean": lambda: net.mean(x, axis=(3,), out_scale=0.05),
               "reduce_max": lambda: net.reduce_max(x), "reduce_min": lambda: net.reduce_min(x, axis=(2,)),
               "arg_max": lambda: net.arg_max(x)}
    net.output(outputs[reduction]())
    return net.build()


@pytest.mark.parametrize("reduction", ["sum", "mean", "reduce_max", "reduce_min", "arg_max"])
def test_reductions_after_convolutions_at_the_smallest_limit(reduction, tmp_path):
    """The reductions' copies into their views and their windows schedule like other NPU operations."""
    model = _reduced_model(reduction)
    check(model, tmp_path, limits(model)["smallest"], reference=reference_runner(reduction))


@pytest.mark.parametrize("mover,parts", [("concatenation", [(0, 1, 2, 3, 4, 5)]), ("concatenation_rows", None),
                                         ("pad", [(0, 1, 2, 3)]), ("slice", [(0, 1, 2)]),
                                         ("strided_slice", [(0, 1, 2)])])
def test_which_data_movement_joins_a_cascade(mover, parts):
    """The smallest schedule's cascades: through a concatenation of channels to the last convolution (ops 0-5),
    through a pad to the last convolution (0-3), through a slice (0-2); none spans a concatenation of rows (op 4).
    (A cascade lists its parts in execution order, which need not be the graph's.)"""
    (graph,) = npu_graphs(_moved_model(mover))
    cascades = [tuple(sorted(plan.parts)) for plan in cascade_proposals(graph, EthosuTarget(ACCELERATOR))[0].cascades]
    if parts is None:
        assert cascades and not any(4 in cascade and len(cascade) > 1 for cascade in cascades), cascades
    else:
        assert cascades == parts


def _transpose_conv_model(stride: tuple[int, int]) -> bytes:
    """Two convolutions that cascade, a TRANSPOSE_CONV (op 2), a convolution."""
    net = Net(5)
    x = net.conv2d(net.conv2d(net.input((1, 16, 16, 8)), out_channels=16), out_channels=8)
    net.output(net.conv2d(net.transpose_conv(x, out_channels=8, stride=stride), out_channels=4))
    return net.build()


@pytest.mark.parametrize("params", [{}, dict(in_shape=(1, 24, 16), in2_shape=(1, 16, 6), in_zp=9)], ids=str)
@pytest.mark.parametrize("which", ["smallest", "middle"])
def test_batch_matmul_of_run_time_operands_at_several_limits(params, which, tmp_path):
    """The per-column MULs into int32 and REDUCE_SUMs over the depth stripe over the left-hand rows."""
    model = models.make("batch_matmul", 0, **params)
    check(model, tmp_path, limits(model)[which], seeds=range(3))


@pytest.mark.parametrize("stride", [(1, 1), (2, 2)], ids=str)
@pytest.mark.parametrize("which", ["smallest", "middle"])
def test_transpose_conv_between_convolutions_at_several_limits(stride, which, tmp_path):
    """Stride 1 is a convolution, striped and cascaded like one; stride 2 convolves the upscaled IFM whole."""
    model = _transpose_conv_model(stride)
    check(model, tmp_path, limits(model)[which], seeds=range(3))
    (graph,) = npu_graphs(model)
    cascades = [plan.parts for plan in cascade_proposals(graph, EthosuTarget(ACCELERATOR))[0].cascades]
    assert any(2 in cascade and len(cascade) > 1 for cascade in cascades) == (stride == (1, 1)), cascades


def _depth_multiplied_model(channels: int) -> bytes:
    """A convolution, a depthwise convolution with depth multiplier 2 over `channels` channels (block-diagonal
    weights up to 8, the channels repeated beyond), a convolution."""
    net = Net(5)
    x = net.conv2d(net.input((1, 20, 16, 4)), out_channels=channels, activation="RELU")
    x = net.depthwise_conv2d(x, depth_multiplier=2, activation="RELU6")
    net.output(net.conv2d(x, out_channels=6))
    return net.build()


@pytest.mark.parametrize("channels", [6, 12])
@pytest.mark.parametrize("which", ["smallest", "middle"])
def test_depth_multiplier_between_convolutions_at_several_limits(channels, which, tmp_path):
    check_frontier_limit(_depth_multiplied_model(channels), tmp_path, which)


@pytest.mark.parametrize("accelerator", [ACCELERATOR, "ethos-u65-512"])
@pytest.mark.parametrize("name", list(MLPERF))
def test_mlperf_smallest_schedule_is_bit_exact_and_smaller(name, accelerator, tmp_path):
    model = shared_model(MLPERF[name])
    plain = uncascaded_scratch(model, tmp_path, accelerator)
    sizes = check(model, tmp_path, limits(model, accelerator)["smallest"], accelerator=accelerator)
    if name == "ad":  # fully connected layers on 1x1 feature maps: there are no rows to stripe
        assert sizes == plain
    else:
        assert sum(sizes.values()) < sum(plain.values())


@pytest.mark.parametrize("name", ["vww", "resnet8"])
def test_mlperf_middle_schedule_is_bit_exact(name, tmp_path):
    model = shared_model(MLPERF[name])
    check(model, tmp_path, limits(model)["middle"])


def test_smallest_kws_schedule_is_one_deep_cascade_of_rolling_rows(tmp_path):
    """KWS's nine convolutions at the smallest limit: one cascade in single-row stripes whose rings hold 3 rows
    (before a 3x3 depthwise) or 1 row (before a 1x1 convolution) of the 25-row feature maps. The pool, the
    reshape (a view: no operation) and the FC after them run once, as a cascade of one stripe."""
    model = shared_model(MLPERF["kws"])
    (graph,) = npu_graphs(model)
    smallest = cascade_proposals(graph, EthosuTarget(ACCELERATOR))[0]
    plan, tail = smallest.cascades
    assert tail.parts == (9, 10, 11) and tail.stripes == 1
    assert plan.parts == tuple(range(9)) and plan.rows == 1 and plan.buffer_mode.value == "rolling"
    assert [c.rows for c in plan.interior] == [3, 1] * 4
    assert [c.tensor.shape[1] for c in plan.interior] == [25] * 8


def test_rfc_example_two_convolutions_need_kilobytes_instead_of_megabytes(tmp_path):
    """Two chained 3x3 convolutions on a 1x321x212x6 input with a 16-channel intermediate (1,088,832 bytes):
    cascaded, the NPU scratch is a 3-row ring of it. Beside it, each stripe buffers its convolution's weights in SRAM
    (1,216 or 1,120 bytes; the OFM blocks would fetch them from flash many times), as the uncascaded build buffers
    both convolutions' (the second's DMA overlapping the first, which reads its copy). Each buffer lives during its
    stripe and the one before, whose operation its DMA overlaps: the memory planner places the alternating buffers
    in 3,456 bytes beside the ring."""
    net = models.Net(seed=5)
    x = net.input((1, 321, 212, 6))
    y = net.conv2d(x, out_channels=16, padding="SAME", activation="RELU")
    net.output(net.conv2d(y, out_channels=6, padding="SAME"))
    model = net.build()
    assert sum(uncascaded_scratch(model, tmp_path).values()) == 321 * 212 * 16 + 1216 + 1120
    sizes = check(model, tmp_path, 16 * 1024, seeds=range(1))
    assert sum(sizes.values()) == 3 * 212 * 16 + 3456


def test_limit_below_the_smallest_schedule_is_one_line(tmp_path, capsys):
    from ethosu_tvm.cli import main as tvmc

    model = models.make_graph("resnet_block", seed=2)
    (tmp_path / "m.tflite").write_bytes(model)
    smallest = limits(model)["smallest"]
    status = tvmc(["compile", str(tmp_path / "m.tflite"), f"--target={CASCADER}", "--cascader-sram-limit",
                   str(smallest // 4), "-o", str(tmp_path / "out.tar")])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert status == 2 and not (tmp_path / "out.tar").exists()
    assert err == (f"tvmc: error: ethos_u_0: no schedule fits the cascader's SRAM limit of {smallest // 4} bytes; "
                   f"the smallest one found needs {smallest} bytes of NPU scratch")


def test_pool_size_hint_is_the_default_limit_and_summary_names_the_choice(tmp_path, capsys):
    model = models.make_graph("resnet_block", seed=2)
    smallest = limits(model)["smallest"]
    archive = compile_model(model, tmp_path, CASCADER, "--workspace-pools=sram",
                            f"--workspace-pools-size-hint-bytes=sram:{smallest + 1024}")
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if line.startswith("Cascader: ethos_u_0: proposal"))
    assert f"(limit {smallest + 1024} bytes)" in line and "stripes of" in line
    assert all(size <= smallest + 1024 for size in scratch_sizes(archive).values())


def test_developer_options_force_and_log_proposals(tmp_path, capsys):
    model = models.make_graph("resnet_block", seed=2)
    (graph,) = npu_graphs(model)
    count = len(cascade_proposals(graph, EthosuTarget(ACCELERATOR)))
    target = f"ethos-u -accelerator-config={ACCELERATOR} -enable-cascader=1 -dev-log-plans=1 -dev-select-proposal=1,c"
    compile_model(model, tmp_path, target)
    captured = capsys.readouterr()
    logged = [line for line in captured.err.splitlines() if line.startswith("cascader: ethos_u_0 proposal ")]
    assert len(logged) == count
    assert f"Cascader: ethos_u_0: proposal 1 of {count} (no limit)" in captured.out


def test_forcing_a_proposal_that_does_not_exist_is_one_line(tmp_path, capsys):
    from ethosu_tvm.cli import main as tvmc

    model = models.make_graph("resnet_block", seed=2)
    (graph,) = npu_graphs(model)
    count = len(cascade_proposals(graph, EthosuTarget(ACCELERATOR)))
    (tmp_path / "m.tflite").write_bytes(model)
    status = tvmc(["compile", str(tmp_path / "m.tflite"), f"--target={CASCADER}",
                   f"--target-ethos-u-dev_select_proposal={count}", "-o", str(tmp_path / "out.tar")])
    assert status == 2 and not (tmp_path / "out.tar").exists()
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"tvmc: error: ethos_u_0: proposal {count} does not exist; the cascader found {count} (0 to {count - 1})")


def test_striping_alone_splits_operators_but_never_cascades_them(tmp_path, capsys):
    """-enable-striping=1 without the cascader: KWS's operators in row stripes where that is estimated no slower,
    each operator on its own, bit-exact, in the scratch of the plain build without its weight buffers (the
    smallest schedule, as the cascader takes without a limit). On ethos-u55-256 its 1x1 convolutions go in two
    stripes; on -128 none does, since every stripe fetches the weights again."""
    model = shared_model(MLPERF["kws"])
    target = "ethos-u -accelerator-config=ethos-u55-256 -enable-striping=1,c"
    archive = compile_model(model, tmp_path / "striped", target)
    line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("Cascader:"))
    plans = line.split(" cycles: ")[1].split("; ")
    assert plans and all(plan.startswith("ops ") and plan.split()[1].split("-")[0] == plan.split()[1].split("-")[1]
                         for plan in plans), line
    plain = uncascaded_scratch(model, tmp_path, "ethos-u55-256")
    assert scratch_sizes(archive) == {"ethos_u_0_scratch": 2 * 25 * 5 * 64} != plain  # two 25x5x64 maps
    assert_bit_exact(model, archive, tmp_path / "striped", range(2))


def test_negative_limit_from_python_is_refused():
    import ethosu_tvm
    from ethosu_tvm.build_module import BuildError

    mod = ethosu_tvm.from_tflite(models.make_graph("resnet_block", seed=2))
    with pytest.raises(BuildError, match=r"^the cascader's SRAM limit must not be negative, got -1$"):
        ethosu_tvm.build(mod, target=CASCADER, cascader_sram_limit=-1)



def test_cascader_frontiers_are_what_build_chooses_from():
    """The public frontier is the one build's cascader picks from: same count, the chosen proposal at its index."""
    import ethosu_tvm
    from ethosu_tvm.aot.program import NpuStep

    model = models.make_graph("ds_cnn", seed=1)
    frontiers = ethosu_tvm.cascader_frontiers(ethosu_tvm.from_tflite(model), CASCADER)
    ((name, proposals),) = frontiers.items()
    limit = proposals[len(proposals) // 2].memory
    module = ethosu_tvm.build(ethosu_tvm.from_tflite(model), target=CASCADER, cascader_sram_limit=limit)
    (step,) = [s for s in module.program.steps if isinstance(s, NpuStep)]
    report = step.artifact.cascade
    assert step.artifact.name == name and report.proposals == len(proposals) > 1
    assert report.proposal.key() == proposals[report.index].key() and proposals[report.index].memory <= limit


def test_cascader_frontiers_without_the_cascader_is_a_build_error():
    import ethosu_tvm
    from ethosu_tvm.build_module import BuildError

    mod = ethosu_tvm.from_tflite(models.make_graph("ds_cnn", seed=1))
    with pytest.raises(BuildError, match=r"^the cascader's frontiers need the cascader: add -enable-cascader=1"):
        ethosu_tvm.cascader_frontiers(mod, npu_target(ACCELERATOR))

def test_cascaded_builds_are_deterministic(tmp_path):
    model = models.make_graph("ds_cnn", seed=2)
    first = compile_model(model, tmp_path / "a", CASCADER, "--cascader-sram-limit", "3000").read_bytes()
    assert first == compile_model(model, tmp_path / "b", CASCADER, "--cascader-sram-limit", "3000").read_bytes()


@pytest.mark.parametrize("args, message", [
    (["--cascader-sram-limit", "4096"], "a cascader SRAM limit needs the cascader: add -enable-cascader=1 to the "
                                        "ethos-u target"),
    (["--target-ethos-u-dev_select_proposal=x"], "option dev-select-proposal takes a non-negative integer, "
                                                 "got 'x'"),
])
def test_bad_cascader_options_are_one_line(args, message, tmp_path, capsys):
    from ethosu_tvm.cli import main as tvmc

    model = models.make_graph("resnet_block", seed=2)
    (tmp_path / "m.tflite").write_bytes(model)
    status = tvmc(["compile", str(tmp_path / "m.tflite"), f"--target={npu_target(ACCELERATOR)}", *args,
                   "-o", str(tmp_path / "out.tar")])
    assert status == 2 and not (tmp_path / "out.tar").exists()
    assert capsys.readouterr().err.strip().splitlines()[-1] == f"tvmc: error: {message}"
