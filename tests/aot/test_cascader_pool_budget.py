"""The cascader within a workspace pool's size: what the pool holds beside the NPU scratch is budgeted, a pool at
the smallest size the error names compiles and runs bit-exactly, one byte less is refused naming that size.

The models, with their I/O in the workspace, hold tensors in the pool outside the scratch: the factory's
`input_fanout` edge an input read by two NPU launches, beside the first launch's output that the second reads;
`multi_io` also two launches whose scratch the pool holds in turn (the second launch's counted while the first
chooses); `mixed_inputs` a launch whose scratch, holding two model inputs, lives from before the first step, while a
host QUANTIZE reads a third input into a tensor the launch reads."""
import re

import numpy as np
import pytest

import ethosu_tvm
from ethosu_tvm.aot.program import NpuStep
from ethosu_tvm.build_module import cascader_frontiers
from ethosu_tvm.codegen import CascaderError
from ethosu_tvm.codegen.cascade import PoolBudget, cascade_proposals, compile_cascaded
from ethosu_tvm.host import fuse_host_ops
from ethosu_tvm.legalize import legalize
from ethosu_tvm.memory import PoolInfo
from ethosu_tvm.partition import partition_for_ethosu
from ethosu_tvm.target import EthosuTarget
from ethosu_tvm.testing import models
from ethosu_tvm.testing.reference import input_infos, random_inputs, run_litert

from aot_support import tvmc

TARGET = "ethos-u -accelerator-config=ethos-u55-128 -enable-cascader=1,c"
MODELS = {"input_fanout": models.make_edge("input_fanout", 2), "multi_io": models.make_graph("multi_io", 2),
          "mixed_inputs": models.make_edge("mixed_inputs", 2)}
MODEL = MODELS["input_fanout"]
SMALLEST = re.compile(r"ethos_u_0: no schedule fits the NPU's workspace pool of (\d+) bytes; "
                      r"the smallest pool one fits is (\d+) bytes")


def build(pool: int, model: bytes = MODEL):
    return ethosu_tvm.build(ethosu_tvm.from_tflite(model), TARGET, workspace_pools=[PoolInfo("sram", pool)],
                            use_workspace_io=True)


def assert_runs_exactly(module, model: bytes = MODEL) -> None:
    names = [info.name for info in input_infos(model)]
    for seed in range(2):
        inputs = random_inputs(model, seed)
        got = module.run(dict(zip(names, inputs)))
        for out, want in zip(got.values(), run_litert(model, inputs)):
            np.testing.assert_array_equal(out.reshape(want.shape), want, err_msg=f"seed {seed}")


def launches(module) -> list:
    return [step.artifact for step in module.program.steps if isinstance(step, NpuStep)]


def smallest_pool(model: bytes) -> int:
    """The pool size the error names for a pool far too small."""
    with pytest.raises(CascaderError) as refusal:
        build(32, model)
    match = SMALLEST.fullmatch(str(refusal.value))
    assert match and match.group(1) == "32", str(refusal.value)
    return int(match.group(2))


@pytest.fixture(scope="module")
def smallest() -> int:
    return smallest_pool(MODEL)


@pytest.mark.parametrize("name", MODELS)
def test_a_pool_of_the_smallest_size_compiles_and_runs_exactly(name):
    model = MODELS[name]
    size = smallest_pool(model)
    module = build(size, model)
    assert module.workspace.plan.pool_sizes == {"sram": size}
    assert_runs_exactly(module, model)
    with pytest.raises(CascaderError, match=f"the smallest pool one fits is {size} bytes$"):
        build(size - 1, model)


def test_one_byte_less_is_one_line_naming_the_smallest_size(smallest, tmp_path, capsys):
    message = (f"ethos_u_0: no schedule fits the NPU's workspace pool of {smallest - 1} bytes; the smallest pool "
               f"one fits is {smallest} bytes")
    with pytest.raises(CascaderError) as refusal:
        build(smallest - 1)
    assert str(refusal.value) == message
    source = tmp_path / "model.tflite"
    source.write_bytes(MODEL)
    status = tvmc(["compile", str(source), f"--target={TARGET}", "--workspace-pools=sram",
                   f"--workspace-pools-size-hint-bytes=sram:{smallest - 1}", "--use-workspace-io",
                   "-o", str(tmp_path / "module.tar")])
    assert status == 2
    assert capsys.readouterr().err.splitlines()[-1] == f"tvmc: error: {message}"


def test_the_fastest_proposal_whose_scratch_alone_fits_gives_way_to_one_the_pool_holds(smallest):
    """At the smallest pool, the fastest proposal whose estimated scratch alone is within the pool (what the
    cascader chose before the pool's other buffers were counted, and the plan then refused) is not taken: a
    slower one is, and it runs bit-exactly."""
    proposals = cascader_frontiers(ethosu_tvm.from_tflite(MODEL), TARGET, use_workspace_io=True)["ethos_u_0"]
    scratch_alone = min((p for p in proposals if p.memory <= smallest), key=lambda p: p.cycles)
    module = build(smallest)
    chosen = launches(module)[0].cascade.proposal
    assert chosen.memory < scratch_alone.memory and chosen.cycles > scratch_alone.cycles
    assert module.workspace.plan.pool_sizes["sram"] <= smallest
    assert_runs_exactly(module)


@pytest.mark.parametrize("name", MODELS)
def test_the_first_proposal_compiled_is_one_the_pool_holds(name):
    """The estimate (a proposal's scratch plus what the pool holds beside it while it lives) is exact on these
    models: at the smallest pool and above, the first proposal compiled is kept."""
    model = MODELS[name]
    size = smallest_pool(model)
    for pool in range(size, size + 256, 64):
        stages = []
        ethosu_tvm.build(ethosu_tvm.from_tflite(model), TARGET, workspace_pools=[PoolInfo("sram", pool)],
                         use_workspace_io=True, progress=stages.append)
        assert not [stage for stage in stages if "(attempt 2 " in stage], pool


def test_a_proposal_whose_plan_does_not_fit_gives_way_to_the_next_fastest():
    """When the workspace plan with the first proposal compiled does not fit the pool (the planner's alignment or
    gaps), the next fastest proposal within the estimate is compiled and kept."""
    target = EthosuTarget("ethos-u55-128")
    partitioned, _ = partition_for_ethosu(ethosu_tvm.from_tflite(models.make_graph("resnet_block", 2)), target)
    (graph,) = legalize(fuse_host_ops(partitioned))
    proposals = cascade_proposals(graph, target)
    limit = max(p.memory for p in proposals)
    measured = []

    def need(artifact) -> int:
        measured.append(artifact.scratch_size)
        return limit + 1 if len(measured) == 1 else artifact.scratch_size

    artifact = compile_cascaded(graph, target, proposals, limit, pool=PoolBudget(0, need))
    by_speed = sorted(proposals, key=lambda p: (p.cycles, p.memory))
    assert len(measured) == 2 and artifact.cascade.proposal == by_speed[1]
    assert artifact.scratch_size <= limit
