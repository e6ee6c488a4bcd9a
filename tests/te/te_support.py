"""Helpers for the bit-exactness tests: compile NPU subgraphs to llvm TE graphs, read LiteRT's tensors."""
import numpy as np

from ethosu_tvm.frontend.importer import from_tflite
from ethosu_tvm.legalize import legalize
from ethosu_tvm.partition import partition_for_ethosu
from ethosu_tvm.te import CompiledTeGraph, te_graph
from ethosu_tvm.testing.reference import random_inputs, run_litert

SEEDS = (0, 1, 2)


def compile_npu(model: bytes, accelerator: str = "ethos-u55-128"):
    """(report, NPU graphs, their llvm-built TE graphs) of a model."""
    mod, report = partition_for_ethosu(from_tflite(model), accelerator)
    graphs = legalize(mod)
    return report, graphs, [CompiledTeGraph(te_graph(g)) for g in graphs]


def assert_single_subgraph_exact(model: bytes, seeds=SEEDS):
    """The whole model is one NPU subgraph: its TE graph equals LiteRT exactly on seeded random inputs."""
    report, graphs, compiled = compile_npu(model)
    assert report.counts() == {"ethos-u": len(report.ops)}, str(report)
    (run,) = compiled
    for seed in seeds:
        inputs = random_inputs(model, seed)
        expected = run_litert(model, inputs)
        got = run(inputs)
        assert len(got) == len(expected)
        for out, ref in zip(got, expected):
            out = out.reshape(ref.shape)
            assert np.array_equal(out, ref), f"seed {seed}: max |diff| {np.abs(out.astype(int) - ref).max()}"
