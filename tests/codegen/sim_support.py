"""Helpers: compile a model's NPU subgraphs to artifacts and run them in the simulator."""
import numpy as np

import ethosu_tvm
from ethosu_tvm.codegen import NpuArtifact, compile_npu_graphs
from ethosu_tvm.frontend.importer import from_tflite
from ethosu_tvm.legalize import legalize
from ethosu_tvm.partition import partition_for_ethosu
from ethosu_tvm.sim import Simulator
from ethosu_tvm.target import EthosuTarget
from ethosu_tvm.testing.reference import input_infos, random_inputs, run_litert

ACCELERATORS = ("ethos-u55-32", "ethos-u55-64", "ethos-u55-128", "ethos-u55-256")


def compile_model(model: bytes, accelerator: str):
    """(offload report, artifacts) of every NPU subgraph of a model."""
    mod, report = partition_for_ethosu(from_tflite(model), accelerator)
    return report, compile_npu_graphs(legalize(mod), EthosuTarget(accelerator))


def run_artifact(artifact: NpuArtifact, inputs) -> list[np.ndarray]:
    """Run the artifact's command stream in the simulator with the regions its bindings describe."""
    regions = {0: bytearray(artifact.constants), 1: bytearray(max(artifact.scratch_size, 16))}
    for binding, value in zip(artifact.inputs, inputs):
        data = np.ascontiguousarray(np.asarray(value, dtype=binding.dtype)).tobytes()
        assert len(data) == binding.size
        regions[binding.region] = bytearray(binding.offset) + bytearray(data)
    for binding in artifact.outputs:
        regions.setdefault(binding.region, bytearray(binding.offset + binding.size))
    Simulator(artifact.accelerator).run(artifact.driver_payload, regions)
    return [
        np.frombuffer(bytes(regions[b.region][b.offset:b.offset + b.size]), dtype=b.dtype).reshape(b.shape)
        for b in artifact.outputs
    ]


def assert_model_exact(model: bytes, accelerator: str, seeds=(0, 1), subgraphs: int = 1, reference=run_litert):
    """Every operator on the NPU, in `subgraphs` subgraphs that read only model inputs (by name) and whose outputs,
    in order, equal the reference's (LiteRT's unless given) for each seed's random inputs."""
    report, artifacts = compile_model(model, accelerator)
    assert report.counts() == {"ethos-u": len(report.ops)}
    assert len(artifacts) == subgraphs
    names = [info.name for info in input_infos(model)]
    for seed in seeds:
        inputs = dict(zip(names, random_inputs(model, seed)))
        got = [out for a in artifacts for out in run_artifact(a, [inputs[b.name] for b in a.inputs])]
        expected = reference(model, list(inputs.values()))
        assert len(got) == len(expected)
        for out, ref in zip(got, expected):
            assert np.array_equal(out.reshape(ref.shape), ref), f"seed {seed}"


def exact_build(model: bytes, accelerator: str) -> tuple[int, int]:
    """(NPU cycles, workspace bytes) of the whole model built for `accelerator`, after checking its run on seed 0's
    inputs equals LiteRT's."""
    module = ethosu_tvm.build(ethosu_tvm.from_tflite(model), target=f"ethos-u -accelerator-config={accelerator},c")
    inputs = random_inputs(model, 0)
    expected = run_litert(model, inputs)
    assert all(np.array_equal(got.reshape(ref.shape), ref) for got, ref in zip(module.run(inputs).values(), expected))
    return module.npu_cycles, module.workspace.plan.total_size
