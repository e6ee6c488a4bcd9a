"""The host-kernel seam end to end: a stand-in kernel library registered for conv, depthwise, FC, pooling, softmax,
add and mul replaces the portable kernels of whole models; its declared scratch is planned (one step live, shared
between calls, counted in the workspace size, passed to the call) and the models stay bit-exact with LiteRT. A
kernel that two steps call has scratch at each."""
from __future__ import annotations

import json
import re

import pytest
from aot_support import assert_bit_exact, assert_plan_valid, compile_model, members

from ethosu_tvm.aot.c_source import c_type
from ethosu_tvm.aot import HostStep, ModelIO, Program, TensorRef, generate, plan_workspace
from ethosu_tvm.host import LIBRARY_OPS, REGISTRY, HostKernel, ScratchBuffer, build_kernel, spec
from ethosu_tvm.memory import PoolInfo
from ethosu_tvm.testing import models



class Staging:
    """A stand-in library kernel: copies every input into its scratch buffer "staging" (32-byte aligned), runs the
    portable kernel on the copies, then overwrites the staging bytes. A planned offset that overlapped any tensor still
    live would corrupt the model's results."""

    name = "staging"

    def accepts(self, op, target) -> bool:
        return True

    def build(self, op, name, target) -> HostKernel:
        portable = build_kernel(op, name=f"{name}_portable", target=target)
        inputs = [p for p in portable.params if p.role == "input"]
        offsets = [sum(-(-p.nbytes // 16) * 16 for p in inputs[:i]) for i in range(len(inputs))]
        staging = ScratchBuffer("staging", offsets[-1] + inputs[-1].nbytes, alignment=32)
        params = [f"{'' if p.role == 'output' else 'const '}{c_type(p.dtype)}* {p.name}" for p in portable.params]
        params += [f"uint8_t* {s.name}" for s in (staging, *portable.scratch)]
        copied = {p.name: offset for p, offset in zip(inputs, offsets)}
        arguments = [f"(const {c_type(p.dtype)}*)(staging + {copied[p.name]})" if p.name in copied else p.name
                     for p in portable.params] + [s.name for s in portable.scratch]
        body = [f"  memcpy(staging + {offset}, {p.name}, {p.nbytes});" for p, offset in zip(inputs, offsets)]
        body += [f"  {portable.name}({', '.join(arguments)});", f"  memset(staging, 0x5a, {staging.nbytes});"]
        wrapper = "\n".join(["#include <string.h>", f"void {name}({', '.join(params)}) {{", *body, "}", ""])
        return HostKernel(name, portable.op, portable.c_source + wrapper, portable.params,
                          (staging, *portable.scratch), target)


def _compile(graph: str, directory):
    model = models.make_graph(graph)
    with REGISTRY.registered(Staging(), LIBRARY_OPS):
        archive = compile_model(model, directory, "c")
    return model, archive, json.loads(members(archive)["./src/memory_plan.json"])


@pytest.fixture(scope="module")
def ds_cnn_plan(tmp_path_factory):
    return _compile("ds_cnn", tmp_path_factory.mktemp("ds_cnn"))[2]


@pytest.mark.parametrize("graph,ops", [
    ("ds_cnn", {"conv2d", "depthwise_conv2d", "avg_pool2d", "fully_connected", "softmax"}),
    ("multi_io", {"conv2d", "add", "mul", "max_pool2d"}),
    ("resnet_block", {"conv2d", "add"}),
])
def test_library_kernels_with_planned_scratch_are_bit_exact(graph, ops, tmp_path):
    model, archive, plan = _compile(graph, tmp_path)
    files = members(archive)
    kernels = files["./codegen/host/src/default_lib1.c"].decode()
    runner = files["./codegen/host/src/default_lib0.c"].decode()
    staged = re.findall(r"^void tvmgen_default_(\w+)_(\d+)\(.*uint8_t\* staging", kernels, re.MULTILINE)
    assert {op for op, _ in staged} == ops  # every op of the model is a library one: all went through Staging
    buffers = {b["name"]: b for b in plan["buffers"]}
    calls = {kernel: (int(step), arguments.split(", ")) for step, kernel, arguments in
             re.findall(r"/\* step (\d+): \w+ on the host \*/\n  (tvmgen_default_\w+)\((.*)\);", runner)}
    for op, n in staged:
        kernel = f"tvmgen_default_{op}_{n}"
        step, arguments = calls[kernel]
        scratch = buffers[f"{kernel}_staging"]
        assert scratch["first_use"] == scratch["last_use"] == step and scratch["producer"] == kernel, scratch
        assert scratch["alignment"] == 32 and scratch["offset"] % 32 == 0
        # passed after the params (the portable softmax's own scratch follows it)
        assert arguments[-2 if op == "softmax" else -1] == f"(void*)(pool_workspace + {scratch['offset']})"
    sizes = {p["name"]: p["size_bytes"] for p in plan["pools"]}
    header = files["./codegen/host/include/tvmgen_default.h"].decode()
    assert f"#define TVMGEN_DEFAULT_WORKSPACE_SIZE {sum(sizes.values())}\n" in header
    assert_plan_valid(plan)
    assert_bit_exact(model, archive, tmp_path)


def test_scratch_of_two_calls_shares_memory(ds_cnn_plan):
    staging = [b for b in ds_cnn_plan["buffers"] if b["name"].endswith("_staging")]
    shared = [(a["name"], b["name"]) for i, a in enumerate(staging) for b in staging[i + 1:]
              if a["pool"] == b["pool"] and a["offset"] < b["offset"] + b["size"]
              and b["offset"] < a["offset"] + a["size"]]
    assert len(staging) == 8 and shared, staging  # every op but the RESHAPE


def test_the_softmax_has_both_scratch_buffers(ds_cnn_plan):
    """The library kernel's own scratch and the portable softmax's intermediates are two planned buffers."""
    softmax = {b["name"]: b["size"] for b in ds_cnn_plan["buffers"] if b["producer"] == "tvmgen_default_softmax_0"}
    assert softmax == {"tvmgen_default_softmax_0_staging": 12,  # the int8 [1, 12] logits
                       "tvmgen_default_softmax_0_scratch": 16 + 48}  # row maximum, 12 int32 exps


def test_a_kernel_called_at_two_steps_gets_scratch_at_each(tmp_path):
    """Identical composites share one kernel; each call still gets its own planned scratch buffer."""
    x = spec.QuantTensor((1, 10), "int8", scale=0.1, zero_point=3)
    y = spec.QuantTensor((1, 10), "int8", scale=1 / 256, zero_point=-128)
    kernel = build_kernel(spec.Softmax(x, y), name="tvmgen_default_softmax_0")
    tensors = {name: TensorRef(name, (1, 10), "int8") for name in ("a", "b", "c")}
    program = Program(tensors, (ModelIO("a", "a", tensors["a"]),), (ModelIO("c", "c", tensors["c"]),),
                      (HostStep(kernel, ("a",), "b"), HostStep(kernel, ("b",), "c")))
    workspace = plan_workspace(program, [PoolInfo("workspace")])
    assert workspace.scratch == (("tvmgen_default_softmax_0_scratch",), ("tvmgen_default_softmax_0_scratch_1",))
    assert [(b.name, b.first_use, b.last_use) for b in workspace.buffers] == [
        ("b", 0, 1), ("tvmgen_default_softmax_0_scratch", 0, 0), ("tvmgen_default_softmax_0_scratch_1", 1, 1)]
    runner = generate(program, workspace, False, "m").runner
    for step, name in enumerate(("tvmgen_default_softmax_0_scratch", "tvmgen_default_softmax_0_scratch_1")):
        call = re.search(rf"step {step}: softmax on the host \*/\n  tvmgen_default_softmax_0\((.*)\);", runner)
        assert call.group(1).endswith(f"(void*)(pool_workspace + {workspace.plan.allocation(name).offset})")
