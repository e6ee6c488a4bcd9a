"""Layer dumps (`CompiledModel.run(..., debug_layers=DIR)`, `tvmc run --debug-layers DIR`) checked tensor by tensor
against LiteRT's intermediates with `ethosu_tvm.testing.layer_compare`, and an injected error found at its operator;
debug builds with one NPU launch per operator (`split_launches`) dump every operator's output."""
from __future__ import annotations

import dataclasses
import io
import json
import tarfile

import numpy as np
import pytest
import tflite
from hypothesis import given, settings
from hypothesis import strategies as st

import ethosu_tvm
from ethosu_tvm.aot.c_source import generate
from ethosu_tvm.aot.program import MODULE, HostStep
from ethosu_tvm.cli import main as tvmc
from ethosu_tvm.build_config import BuildError
from ethosu_tvm.cli.run_command import _hidden_note
from ethosu_tvm.debug_layers import DEBUG_MAP_PATH, hidden_operators, layer_tensors, read_dump
from ethosu_tvm.frontend.attributes import OP_OUTPUTS_ATTR
from ethosu_tvm.legalize.rules import RULES
from ethosu_tvm.memory import PoolInfo
from ethosu_tvm.testing.layer_compare import compare_layers
from ethosu_tvm.testing.models import Net, make, make_graph
from ethosu_tvm.testing.reference import random_inputs

NPU = "ethos-u -accelerator-config=ethos-u55-128,c"
ACCELERATORS = ("ethos-u55-32", "ethos-u55-64", "ethos-u55-128", "ethos-u55-256")
DEBUG_MAP = f"./{DEBUG_MAP_PATH}"
# ds_cnn on the host: one kernel per TFLite operator, so every operator's output is dumped.
DS_CNN_HOST = ["CONV_2D", "DEPTHWISE_CONV_2D", "CONV_2D", "DEPTHWISE_CONV_2D", "CONV_2D", "AVERAGE_POOL_2D",
               "RESHAPE", "FULLY_CONNECTED", "SOFTMAX"]


def _build(graph: str, target: str):
    model = make_graph(graph, 0)
    return model, ethosu_tvm.build(ethosu_tvm.from_tflite(model), target=target)


@pytest.mark.parametrize("graph,target,dumped", [("ds_cnn", NPU, 1), ("mobilenet_v2", NPU, 1), ("unet", NPU, 1),
                                                 ("ds_cnn", "c", 9)])
def test_dump_equals_litert(graph, target, dumped, tmp_path):
    model, module = _build(graph, target)
    for seed in range(2):
        inputs = random_inputs(model, seed)
        outputs = module.run(inputs, debug_layers=tmp_path / str(seed))
        index, arrays = read_dump(tmp_path / str(seed))
        assert len(index) == dumped
        comparison = compare_layers(model, inputs, tmp_path / str(seed))
        assert comparison.first_difference is None, str(comparison.first_difference)
        assert comparison.compared == tuple(entry["name"] for entry in index)
        # the model output is the last tensor dumped, and the same as run() returns
        assert np.array_equal(arrays[index[-1]["name"]], next(iter(outputs.values())))
    if target == "c":
        assert [entry["kind"] for entry in index] == DS_CNN_HOST
        assert [entry["operator"] for entry in index] == list(range(9))


def test_dump_with_application_pools_and_workspace_io(tmp_path):
    """Pools the application passes (not the runner's static ones) and the I/O inside them: same tensors."""
    model = make_graph("ds_cnn", 0)
    pools = [PoolInfo("sram", 4000, ("ethos-u", "c")), PoolInfo("dram", None, ("ethos-u", "c"))]
    module = ethosu_tvm.build(ethosu_tvm.from_tflite(model), target="c", workspace_pools=pools, use_workspace_io=True)
    assert module.interface.user_pools and module.interface.io_in_workspace
    inputs = random_inputs(model, 1)
    module.run(inputs, debug_layers=tmp_path)
    comparison = compare_layers(model, inputs, tmp_path)
    assert len(comparison.compared) == 9 and comparison.first_difference is None


def test_dump_index_describes_each_tensor(tmp_path):
    model, module = _build("ds_cnn", "c")
    module.run(random_inputs(model, 0), debug_layers=tmp_path)
    first = json.loads((tmp_path / "index.json").read_text())[0]
    array = np.load(tmp_path / first["file"])
    assert (first["operator"], first["kind"], first["dtype"], tuple(first["shape"])) == \
        (0, "CONV_2D", "int8", array.shape)
    assert array.dtype == np.int8 and len(first["scales"]) == 1 and len(first["zero_points"]) == 1


def test_injected_host_error_is_named(tmp_path):
    """One constant of the third kernel (operator #2, CONV_2D) off by one: the helper names exactly that operator."""
    model, module = _build("ds_cnn", "c")
    step = module.program.steps[2]
    assert isinstance(step, HostStep)
    constant = next(p for p in step.kernel.params if p.role == "constant" and p.data.size > 1)
    constant.data.reshape(-1)[0] += 1 << 20 if constant.dtype == "int32" else 1
    module.sources = generate(module.program, module.workspace, module.config.user_pools, MODULE)
    inputs = random_inputs(model, 0)
    module.run(inputs, debug_layers=tmp_path)
    difference = compare_layers(model, inputs, tmp_path).first_difference
    assert difference is not None
    assert (difference.operator, difference.kind) == (2, "CONV_2D")
    assert difference.name == json.loads((tmp_path / "index.json").read_text())[2]["name"]
    assert difference.count > 0 and difference.max_abs > 0
    assert str(difference).startswith(f"operator #2 CONV_2D: output {difference.name!r} differs from LiteRT in ")


def _launches_around_a_host_op() -> bytes:
    """CONV_2D #0, #1, #2 in a first NPU launch, LOG_SOFTMAX #3 on the host, then ADD #4 of #3 and #0 and CONV_2D #5
    in a second launch: the first writes out #0 and #2."""
    net = Net(seed=0)
    first = net.conv2d(net.input((1, 8, 8, 4)), out_channels=8, activation="RELU")
    squashed = net.log_softmax(net.conv2d(net.conv2d(first, out_channels=8), out_channels=8))
    net.output(net.conv2d(net.add(squashed, first), out_channels=4))
    return net.build()


def test_injected_npu_weight_error_is_named(tmp_path):
    """A model compiled with the weights of operator #2 (CONV_2D, in the first NPU launch, whose output the launch
    writes out) negated, compared with the unchanged model: the helper names operator #2, not #0 before it in the
    same launch, nor the later operators that read its output."""
    model = _launches_around_a_host_op()
    corrupted = bytearray(model)
    root = tflite.Model.GetRootAsModel(corrupted, 0)
    graph = root.Subgraphs(0)
    weights = root.Buffers(graph.Tensors(int(graph.Operators(2).Inputs(1))).Buffer()).DataAsNumpy().view(np.int8)
    weights[:] = np.clip(-weights.astype(np.int16), -127, 127)  # a writable view into `corrupted`
    module = ethosu_tvm.build(ethosu_tvm.from_tflite(bytes(corrupted)), target=NPU)
    inputs = random_inputs(model, 0)
    module.run(inputs, debug_layers=tmp_path)
    comparison = compare_layers(model, inputs, tmp_path)
    index = json.loads((tmp_path / "index.json").read_text())
    assert [e["operator"] for e in index if e["step"] == 0] == [2, 0]  # the launch writes out #2 and #0
    assert (comparison.first_difference.operator, comparison.first_difference.kind) == (2, "CONV_2D")
    assert comparison.first_difference.name == next(e["name"] for e in index if e["operator"] == 2)


HIDDEN_NOTE = ("tvmc run: {} not in the dump (kept inside NPU launches); tvmc compile --debug-split-launches "
               "gives them all\n")


# one NPU launch: only its output reaches memory (tvmc run says how many are not); one launch per operator: every
# operator's output does
@pytest.mark.parametrize("flag,kinds,err", [
    ("--debug-info", ["SOFTMAX"], HIDDEN_NOTE.format("8 operators' outputs are")),
    ("--debug-split-launches", DS_CNN_HOST, "")])
def test_cli_writes_the_dump(flag, kinds, err, tmp_path, capsys):
    model = make_graph("ds_cnn", 0)
    (tmp_path / "m.tflite").write_bytes(model)
    archive = tmp_path / "m.tar"
    assert tvmc(["compile", str(tmp_path / "m.tflite"), "--target", NPU, flag, "-q", "-o", str(archive)]) == 0
    assert tvmc(["run", str(archive), "--debug-layers", str(tmp_path / "dump")]) == 0
    captured = capsys.readouterr()
    assert f"Wrote {len(kinds)} intermediate tensors to" in captured.out and captured.err == err
    index, _ = read_dump(tmp_path / "dump")
    assert [entry["kind"] for entry in index] == kinds
    rng = np.random.default_rng(0)  # tvmc run's seeded random inputs
    inputs = [rng.integers(-128, 128, size=(1, 49, 10, 1), dtype=np.int8)]
    assert compare_layers(model, inputs, tmp_path / "dump").first_difference is None


def test_cli_bad_dump_directory(tmp_path, capsys):
    (tmp_path / "m.tflite").write_bytes(make_graph("ds_cnn", 0))
    for extra in ([], ["--debug-info"]):
        archive = tmp_path / f"m{len(extra)}.tar"
        assert tvmc(["compile", str(tmp_path / "m.tflite"), "--target", "c", "-q", "-o", str(archive), *extra]) == 0
    (tmp_path / "file").write_text("")
    assert tvmc(["run", str(tmp_path / "m1.tar"), "--debug-layers", str(tmp_path / "file")]) == 2
    assert capsys.readouterr().err == f"tvmc: error: --debug-layers {tmp_path / 'file'}: not a directory\n"
    assert tvmc(["run", str(tmp_path / "m0.tar"), "--debug-layers", str(tmp_path / "dump")]) == 2
    assert capsys.readouterr().err == (f"tvmc: error: {tmp_path / 'm0.tar'} has no layer-dump map "
                                       "(src/debug_layers.json); compile it with tvmc compile --debug-info\n")


def test_float_io_model_and_counts_of_an_edited_dump(tmp_path):
    """A float32-I/O ds_cnn (QUANTIZE and DEQUANTIZE host kernels): its float32 output is dumped and equal too.
    Then single elements of the dump edited: the counts and the largest difference are exactly the edits'."""
    model = make_graph("ds_cnn", 0, float_io=True)
    module = ethosu_tvm.build(ethosu_tvm.from_tflite(model), target="c")
    inputs = random_inputs(model, 0)
    module.run(inputs, debug_layers=tmp_path)
    index = json.loads((tmp_path / "index.json").read_text())
    assert (index[0]["kind"], index[-1]["kind"], index[-1]["dtype"]) == ("QUANTIZE", "DEQUANTIZE", "float32")
    assert compare_layers(model, inputs, tmp_path).first_difference is None
    last = np.load(tmp_path / index[-1]["file"])
    last.reshape(-1)[3] += np.float32(0.5)
    np.save(tmp_path / index[-1]["file"], last)
    difference = compare_layers(model, inputs, tmp_path).first_difference
    assert (difference.operator, difference.kind, difference.count, difference.max_abs) == \
        (index[-1]["operator"], "DEQUANTIZE", 1, 0.5)
    pool = next(entry for entry in index if entry["kind"] == "AVERAGE_POOL_2D")
    values = np.load(tmp_path / pool["file"])
    values.reshape(-1)[:2] = np.where(values.reshape(-1)[:2] > 0, values.reshape(-1)[:2] - 3,
                                      values.reshape(-1)[:2] + 3)
    np.save(tmp_path / pool["file"], values)
    difference = compare_layers(model, inputs, tmp_path).first_difference
    assert (difference.operator, difference.kind, difference.name, difference.count, difference.max_abs) == \
        (pool["operator"], "AVERAGE_POOL_2D", pool["name"], 2, 3)


def test_module_without_tflite_names_is_refused(tmp_path):
    model = make_graph("ds_cnn", 0)
    module = ethosu_tvm.build(ethosu_tvm.from_tflite(model).without_attr(OP_OUTPUTS_ATTR), target="c")
    with pytest.raises(ValueError, match="^layer dumps name TFLite tensors: build a module imported with "
                                         r"ethosu_tvm.from_tflite$"):
        module.run(random_inputs(model, 0), debug_layers=tmp_path)
    assert not (tmp_path / "index.json").exists()


@settings(max_examples=6, deadline=None)
@given(graph=st.sampled_from(["inverted_residual", "multi_io", "efficientnet_lite", "unet"]),
       accelerator=st.sampled_from(ACCELERATORS), cascader=st.booleans(), seed=st.integers(0, 1000))
def test_split_launches_dump_every_operator(graph, accelerator, cascader, seed, tmp_path_factory):
    """A debug build with one NPU launch per operator: every operator's output is dumped, in model order, each equal
    to LiteRT's, and the model's outputs are the default build's."""
    model = make_graph(graph, seed)
    target = f"ethos-u -accelerator-config={accelerator}{' -enable-cascader=1' if cascader else ''},c"
    default = ethosu_tvm.build(ethosu_tvm.from_tflite(model), target=target)
    debug = ethosu_tvm.build(ethosu_tvm.from_tflite(model), target=target, split_launches=True)
    operators = len(debug.offload.ops)
    assert debug.offload == default.offload and debug.offload.counts() == {"ethos-u": operators}
    assert len(debug.program.steps) == operators > len(default.program.steps)
    inputs = random_inputs(model, seed)
    directory = tmp_path_factory.mktemp("dump")
    outputs = debug.run(inputs, debug_layers=directory)
    assert [entry["operator"] for entry in read_dump(directory)[0]] == list(range(operators))
    comparison = compare_layers(model, inputs, directory)
    assert comparison.first_difference is None, str(comparison.first_difference)
    expected = default.run(inputs)
    assert outputs.keys() == expected.keys() and all(np.array_equal(outputs[k], expected[k]) for k in expected)


def test_injected_error_inside_one_launch_is_named(monkeypatch, tmp_path):
    """inverted_residual runs as one NPU launch; its depthwise convolution (operator #1, in the middle of the launch)
    is legalized with a wrong bias. The default build's dump shows only the output (operator #3 differs); the debug
    build gives the same wrong outputs, and its dump names operator #1, not #0 before it nor #2 and #3 after it."""
    legalize_depthwise = RULES["depthwise_conv2d"]

    def wrong_bias(match, *args):
        op = legalize_depthwise(match, *args)
        return dataclasses.replace(op, bias=op.bias + 3000)

    monkeypatch.setitem(RULES, "depthwise_conv2d", wrong_bias)
    model = make_graph("inverted_residual", 0)
    default = ethosu_tvm.build(ethosu_tvm.from_tflite(model), target=NPU)
    debug = ethosu_tvm.build(ethosu_tvm.from_tflite(model), target=NPU, split_launches=True)
    assert (len(default.program.steps), len(debug.program.steps)) == (1, 4)
    inputs = random_inputs(model, 0)
    wrong = default.run(inputs, debug_layers=tmp_path / "default")
    assert compare_layers(model, inputs, tmp_path / "default").first_difference.operator == 3
    outputs = debug.run(inputs, debug_layers=tmp_path / "debug")
    assert np.array_equal(outputs["output_0"], wrong["output_0"])
    difference = compare_layers(model, inputs, tmp_path / "debug").first_difference
    assert (difference.operator, difference.kind) == (1, "DEPTHWISE_CONV_2D")
    assert difference.name == read_dump(tmp_path / "debug")[0][1]["name"] and difference.count > 0


@pytest.mark.parametrize("op,launches", [("depth_to_space", 4), ("gather", 6)])
def test_operator_of_several_launches_is_dumped_once(op, launches, tmp_path):
    """An operator the NPU computes in several steps gets a launch for each in a debug build: the dump holds its
    output once (the last launch's), equal to LiteRT's."""
    model = make(op, 0)
    module = ethosu_tvm.build(ethosu_tvm.from_tflite(model), target=NPU, split_launches=True)
    assert len(module.program.steps) == launches
    inputs = random_inputs(model, 0)
    module.run(inputs, debug_layers=tmp_path)
    assert [(entry["operator"], entry["kind"], entry["step"]) for entry in read_dump(tmp_path)[0]] == \
        [(0, op.upper(), launches - 1)]
    comparison = compare_layers(model, inputs, tmp_path)
    assert len(comparison.compared) == 1 and comparison.first_difference is None


def _members(archive) -> dict[str, bytes]:
    with tarfile.open(archive) as tar:
        return {member.name: tar.extractfile(member).read() for member in tar.getmembers() if member.isfile()}


def test_only_split_launches_change_the_build(tmp_path):
    """--debug-info adds the map and leaves every other file of the tarball byte for byte as the default build's;
    --debug-split-launches adds it too, and its firmware C is another (four launches instead of one)."""
    (tmp_path / "m.tflite").write_bytes(make_graph("inverted_residual", 0))
    builds = {}
    for flags in ((), ("--debug-info",), ("--debug-split-launches",)):
        archive = tmp_path / f"m{len(builds)}.tar"
        assert tvmc(["compile", str(tmp_path / "m.tflite"), "--target", NPU, "-q", "-o", str(archive), *flags]) == 0
        builds[flags] = _members(archive)
    default, info, split = builds.values()
    runner = "./codegen/host/src/default_lib0.c"
    assert DEBUG_MAP not in default and info.pop(DEBUG_MAP) and info == default
    assert DEBUG_MAP in split and split[runner] != default[runner]
    assert split[runner].count(b"ethosu_tvm_npu_invoke(") == 4 * default[runner].count(b"ethosu_tvm_npu_invoke(")


@pytest.mark.parametrize("model", [make_graph("inverted_residual", 0), make_graph("multi_io", 0),
                                   make_graph("unet", 0), make("space_to_batch_nd", 0), make("split", 0)])
def test_hidden_operators_are_those_split_launches_dump(model):
    """The operators the map says NPU launches keep inside are exactly those the debug build adds to the dump."""
    default = ethosu_tvm.build(ethosu_tvm.from_tflite(model), target=NPU)
    split = ethosu_tvm.build(ethosu_tvm.from_tflite(model), target=NPU, split_launches=True)
    dumped = {name: {tensor.operator for tensor in layer_tensors(module)} for name, module in
              (("default", default), ("split", split))}
    hidden = hidden_operators(default, layer_tensors(default))
    assert set(hidden) == dumped["split"] - dumped["default"] and len(hidden) == len(set(hidden))
    assert hidden_operators(split, layer_tensors(split)) == ()


def test_hidden_note_of_one_operator(capsys):
    _hidden_note((3,))
    assert capsys.readouterr().err == HIDDEN_NOTE.format("1 operator's output is")


def test_map_of_another_version_is_refused(tmp_path, capsys):
    """A map this version cannot read (e.g. the bare list of tensors older versions wrote): a one-line error."""
    (tmp_path / "m.tflite").write_bytes(make_graph("ds_cnn", 0))
    archive = tmp_path / "m.tar"
    assert tvmc(["compile", str(tmp_path / "m.tflite"), "--target", NPU, "--debug-info", "-q", "-o", str(archive)]) == 0
    members = _members(archive)
    members[DEBUG_MAP] = json.dumps(json.loads(members[DEBUG_MAP])["tensors"]).encode()
    with tarfile.open(tmp_path / "old.tar", "w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    assert tvmc(["run", str(tmp_path / "old.tar"), "--debug-layers", str(tmp_path / "dump")]) == 2
    assert capsys.readouterr().err == (f"tvmc: error: {tmp_path / 'old.tar'}: its src/debug_layers.json is not one "
                                       "this version reads; compile it again with tvmc compile --debug-info\n")
    assert not (tmp_path / "dump").exists()


def test_split_launches_need_an_npu_target(tmp_path, capsys):
    """A host-only build is a kernel per operator already: --debug-split-launches is refused, nothing written."""
    message = ("one NPU launch per operator needs an ethos-u target: a host-only build has no NPU launch, each "
               "operator is a host kernel of its own already")
    with pytest.raises(BuildError, match=f"^{message}$"):
        ethosu_tvm.build(ethosu_tvm.from_tflite(make_graph("ds_cnn", 0)), target="c", split_launches=True)
    (tmp_path / "m.tflite").write_bytes(make_graph("ds_cnn", 0))
    assert tvmc(["compile", str(tmp_path / "m.tflite"), "--target=c", "--debug-split-launches", "-q", "-o",
                 str(tmp_path / "m.tar")]) == 2
    assert capsys.readouterr().err == f"tvmc: error: {message}\n"
    assert not (tmp_path / "m.tar").exists()
