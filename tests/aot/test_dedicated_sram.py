"""Memory mode Dedicated_Sram on the U65s: feature maps in DRAM, the NPU's fast scratch (region 2) a workspace pool
of its own in SRAM. MLPerf Tiny through `tvmc run` and a sweep of factory ops through CompiledModel.run, bit-exact
with the reference, with and without the cascader."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest
from aot_support import assert_bit_exact, compile_model, members, tvmc
from hypothesis import given, settings
from hypothesis import strategies as st

import ethosu_tvm
from ethosu_tvm.aot.program import NpuStep
from ethosu_tvm.build_config import BuildError
from ethosu_tvm.build_module import cascader_frontiers
from ethosu_tvm.memory import PoolInfo
from ethosu_tvm.testing import models, shared_model
from ethosu_tvm.testing.reference import random_inputs, reference_runner, run_litert

U65 = ("ethos-u65-256", "ethos-u65-512")


def dedicated(accelerator: str, cascader: bool = False) -> str:
    return (f"ethos-u -accelerator-config={accelerator} -memory-mode=Dedicated_Sram"
            f"{' -enable-cascader=1' if cascader else ''},c")


# Each model on both sizes, with the cascader on one of them.
MLPERF = [("mlperf_tiny_kws_dscnn_int8.tflite", "ethos-u65-256", False),
          ("mlperf_tiny_kws_dscnn_int8.tflite", "ethos-u65-512", True),
          ("mlperf_tiny_vww_mobilenetv1_96_int8.tflite", "ethos-u65-256", True),
          ("mlperf_tiny_vww_mobilenetv1_96_int8.tflite", "ethos-u65-512", False),
          ("mlperf_tiny_ic_resnet8_int8.tflite", "ethos-u65-256", False),
          ("mlperf_tiny_ic_resnet8_int8.tflite", "ethos-u65-512", True),
          ("mlperf_tiny_ad_fc_autoencoder_int8.tflite", "ethos-u65-256", True),
          ("mlperf_tiny_ad_fc_autoencoder_int8.tflite", "ethos-u65-512", False)]


@pytest.mark.parametrize("name, accelerator, cascader", MLPERF)
def test_mlperf_model(name, accelerator, cascader, tmp_path):
    """Bit-exact through `tvmc run`; the fast scratch, which holds each launch's intermediates (unbounded), is a pool
    of its own in metadata.json and the memory plan, holding only the launches' fast scratch, and the runner hands
    it to the driver as region 2."""
    model = shared_model(name)
    archive = compile_model(model, tmp_path, dedicated(accelerator, cascader))
    assert_bit_exact(model, archive, tmp_path, seeds=(0, 1))
    files = members(archive)
    plan = json.loads(files["./src/memory_plan.json"])
    sizes = {pool["name"]: pool["size_bytes"] for pool in plan["pools"]}
    assert list(sizes) == ["workspace", "fast_scratch"]
    fast = [buffer for buffer in plan["buffers"] if buffer["pool"] == "fast_scratch"]
    assert all(buffer["name"].endswith("_fast_scratch") for buffer in fast)
    assert fast and max(buffer["offset"] + buffer["size"] for buffer in fast) == sizes["fast_scratch"]
    metadata = json.loads(files["./metadata.json"])
    listed = [pool for module in metadata["modules"].values() for pool in module["memory"]["workspace_pools"]]
    assert {pool["name"]: pool["size_bytes"] for pool in listed} == sizes
    runner = files["./codegen/host/src/default_lib0.c"].decode()
    tables = re.findall(r"uint64_t base_addrs\[\d+\] = \{([^}]*)\}", runner)
    assert tables and all(entries.split(", ")[2].endswith("(pool_fast_scratch + 0)") for entries in tables
                          if "pool_fast_scratch" in entries)


def test_fast_scratch_size_hint_bounds_the_weight_buffers():
    """Naming the fast scratch pool with a size hint bounds it: below what KWS's feature maps need, it holds only
    weight buffers, within the hint, still bit-exact."""
    model = shared_model("mlperf_tiny_kws_dscnn_int8.tflite")
    mod = ethosu_tvm.from_tflite(model)
    free = ethosu_tvm.build(mod, dedicated("ethos-u65-256")).workspace.plan.pool_sizes["fast_scratch"]
    pools = [PoolInfo("workspace"), PoolInfo("fast_scratch", size_hint_bytes=free // 2)]
    bounded = ethosu_tvm.build(mod, dedicated("ethos-u65-256"), workspace_pools=pools)
    assert 0 < bounded.workspace.plan.pool_sizes["fast_scratch"] <= free // 2
    inputs = random_inputs(model, 0)
    (got,), (want,) = bounded.run(inputs).values(), run_litert(model, inputs)
    np.testing.assert_array_equal(got.reshape(want.shape), want)


KWS_ROW = 5 * 64  # bytes of a row of KWS's 25x5x64 int8 feature maps


def fast_scratch_hint(hint: int) -> list[PoolInfo]:
    return [PoolInfo("workspace"), PoolInfo("fast_scratch", size_hint_bytes=hint)]


def test_cascader_limit_is_the_fast_scratch_hint(tmp_path, capsys):
    """The cascader keeps each launch's intermediates, rolling and weight buffers within the fast_scratch pool's
    hint. KWS's smallest: its first nine layers cascaded in rows, through eight rings of 3, 1, 3, 1, ... rows,
    beside the ninth's 25x5x64 output, which the average pool reads whole; that size compiles and runs exactly, one
    byte less is refused in one line naming it. A hint of two 25x5x64 feature maps (a layer's input and output)
    runs the layers whole, in fewer cycles."""
    model = shared_model("mlperf_tiny_kws_dscnn_int8.tflite")
    mod = ethosu_tvm.from_tflite(model)
    smallest = 4 * (3 + 1) * KWS_ROW + 25 * KWS_ROW
    source = tmp_path / "kws.tflite"
    source.write_bytes(model)
    status = tvmc(["compile", str(source), f"--target={dedicated('ethos-u65-256', True)}",
                   "--workspace-pools=workspace,fast_scratch",
                   f"--workspace-pools-size-hint-bytes=fast_scratch:{smallest - 1}", "-o", str(tmp_path / "m.tar")])
    assert status == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"tvmc: error: ethos_u_0: no schedule fits the cascader's SRAM limit of {smallest - 1} bytes; the smallest "
        f"one found needs {smallest} bytes of fast_scratch")
    cycles = []
    for hint, rings in ((smallest, True), (2 * 25 * KWS_ROW, False)):
        module = ethosu_tvm.build(mod, dedicated("ethos-u65-256", True), workspace_pools=fast_scratch_hint(hint))
        assert module.workspace.plan.pool_sizes == {"workspace": 0, "fast_scratch": hint}
        (launch,) = [step.artifact for step in module.program.steps if isinstance(step, NpuStep)]
        assert any(plan.parts == tuple(range(9)) for plan in launch.cascade.proposal.cascades) == rings
        inputs = random_inputs(model, 0)
        (got,), (want,) = module.run(inputs).values(), run_litert(model, inputs)
        np.testing.assert_array_equal(got.reshape(want.shape), want)
        cycles.append(module.npu_cycles)
    assert cycles[1] < cycles[0]


def test_io_in_the_workspace_is_not_counted_in_the_fast_scratch():
    """With I/O in the workspace, a launch's model input and output are in its scratch: the cascader counts them
    under Shared_Sram; under Dedicated_Sram that scratch is DRAM, and its estimates of the fast scratch leave them
    out."""
    mod = ethosu_tvm.from_tflite(models.make_graph("resnet_block", 2))

    def memory(mode: str, io: bool) -> list[int]:
        target = f"ethos-u -accelerator-config=ethos-u65-256 -memory-mode={mode} -enable-cascader=1,c"
        return [proposal.memory for proposal in cascader_frontiers(mod, target, use_workspace_io=io)["ethos_u_0"]]

    assert memory("Shared_Sram", True) != memory("Shared_Sram", False)
    assert memory("Dedicated_Sram", True) == memory("Dedicated_Sram", False)


def test_fast_scratch_pool_outside_dedicated_sram_is_refused():
    mod = ethosu_tvm.from_tflite(models.make("conv2d", 0))
    with pytest.raises(BuildError, match="^workspace pool 'fast_scratch' is the fast scratch of memory "
                       r"mode Dedicated_Sram \(-memory-mode=Dedicated_Sram in the ethos-u target\); name the pool "
                       "otherwise$"):
        ethosu_tvm.build(mod, "ethos-u -accelerator-config=ethos-u65-256,c", workspace_pools=[PoolInfo("fast_scratch")])


@settings(max_examples=16, deadline=None)
@given(op=st.sampled_from(models.OPS), accelerator=st.sampled_from(U65), cascader=st.booleans(),
       seed=st.integers(0, 1000))
def test_factory_op_sweep(op, accelerator, cascader, seed):
    model = models.make(op, seed)
    module = ethosu_tvm.build(ethosu_tvm.from_tflite(model), dedicated(accelerator, cascader))
    inputs = random_inputs(model, seed)
    for got, want in zip(module.run(inputs).values(), reference_runner(op)(model, inputs)):
        np.testing.assert_array_equal(got.reshape(want.shape), want)


@settings(max_examples=12, deadline=None)
@given(graph=st.sampled_from(models.GRAPHS), accelerator=st.sampled_from(U65), cascader=st.booleans(),
       seed=st.integers(0, 1000))
def test_factory_graph_sweep(graph, accelerator, cascader, seed):
    """The factory graphs: their intermediates, weight buffers and (cascaded) rolling buffers in the fast
    scratch."""
    model = models.make_graph(graph)
    module = ethosu_tvm.build(ethosu_tvm.from_tflite(model), dedicated(accelerator, cascader))
    inputs = random_inputs(model, seed)
    for got, want in zip(module.run(inputs).values(), run_litert(model, inputs)):
        np.testing.assert_array_equal(got.reshape(want.shape), want)
