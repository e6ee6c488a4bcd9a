#!/usr/bin/env python3
"""Benchmark: each layer of MLPerf Tiny KWS and ResNet-8 that TFLite Micro runs through CMSIS-NN (conv, depthwise
conv, FC, pools, ADD), on QEMU `-icount`: our build's kernel for it (a CMSIS-NN call, or ours where choice.py or
exactness keeps it) against the same arm_* function called straight as TFLite Micro calls it.

    ETHOSU_TVM_CMSIS_NN=<folder> .venv/bin/python benchmarks/cmsis_nn_layers.py [--models NAME ...] [--cpus CPU ...]

The straight calls are written here by hand from each layer's tensors and quantization: the structs TFLite Micro
fills, per-channel multipliers and shifts from the reference arithmetic, the context buffer sized at start-up by
the library's own *_get_buffer_size and, for an FC on MVE, kernel sums from arm_vector_sum_s8 (TFLite Micro's
Prepare; neither is counted). One firmware per model and CPU runs every layer both ways on the same input, counts
the instructions of each call alone (SysTick, as cmsis_nn_speed.py) and checks the two outputs are equal where
CMSIS-NN computes the layer exactly as TFLite does.
"""
from __future__ import annotations

import argparse
import os
import sys
import tarfile
import tempfile
from pathlib import Path

import numpy as np
import tvm

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from cmsis_nn_speed import COUNTER_C, CPUS, MODELS, NS_PER_TICK, library_lines  # noqa: E402
from qemu_harness import DUMP_HELPER_C, build_and_run, c_array, parse_dumps  # noqa: E402

import ethosu_tvm  # noqa: E402
from ethosu_tvm.aot.c_source import c_type  # noqa: E402
from ethosu_tvm.host import fuse_host_ops  # noqa: E402
from ethosu_tvm.host.cmsis_nn.exactness import refusal  # noqa: E402
from ethosu_tvm.host.spec import Binary, Conv2D, FullyConnected, Pool2D, op_name  # noqa: E402
from ethosu_tvm.host.spec_reader import host_spec  # noqa: E402
from ethosu_tvm.quantization import (ELEMENTWISE_INPUT_SHIFT, add_multipliers, conv_multipliers,  # noqa: E402
                                     fully_connected_multipliers, mul_multiplier, quantize_multiplier,
                                     quantize_multipliers)
from ethosu_tvm.run.kernel_libraries import CMSIS_NN_ENV  # noqa: E402
from ethosu_tvm.testing import shared_model  # noqa: E402

SCRATCH = 1 << 16  # bytes of the straight calls' shared context buffer


def _specs(model: bytes) -> dict[str, object]:
    """Each host layer's spec by our kernel's name (<op>_<n> in call order, as build_host_kernels names them)."""
    fused = fuse_host_ops(ethosu_tvm.from_tflite(model))
    specs, counts = {}, {}
    for block in fused["main"].body.blocks:
        for binding in block.bindings:
            callee = getattr(binding.value, "op", None)
            if isinstance(callee, tvm.ir.GlobalVar) and callee.name_hint != "main":
                op = host_spec(fused[callee])
                kind = op_name(op)
                counts[kind] = counts.get(kind, 0) + 1
                specs.setdefault(f"tvmgen_default_{kind}_{counts[kind] - 1}", op)
    return specs


def _dims(shape) -> str:
    return "{" + ", ".join(str(int(d)) for d in shape) + "}"


def _tile(pair) -> str:
    return f"{{{pair[1]}, {pair[0]}}}"  # cmsis_nn_tile is {w, h}


def _clamp(op) -> str:
    low, high = op.clamp or op.output.limits
    return f"{{{low}, {high}}}"


class _Layer:
    """The C of one layer: globals (its constants and structs), the start-up lines, the straight call."""

    def __init__(self, tag: str):
        self.tag = tag
        self.globals: list[str] = []
        self.setup: list[str] = []

    def array(self, name: str, values: np.ndarray) -> str:
        self.globals.append(c_array(f"{self.tag}_{name}", np.ascontiguousarray(values)))
        return f"{self.tag}_{name}"

    def struct(self, kind: str, name: str, value: str) -> str:
        self.globals.append(f"static const {kind} {self.tag}_{name} = {value};")
        return f"&{self.tag}_{name}"

    def context(self, size_call: str) -> str:
        self.globals.append(f"static cmsis_nn_context {self.tag}_ctx;")
        self.setup += [f"{self.tag}_ctx.size = {size_call};", f"if ({self.tag}_ctx.size > {SCRATCH}) return 3;",
                       f"{self.tag}_ctx.buf = {self.tag}_ctx.size ? scratch : 0;"]
        return f"&{self.tag}_ctx"


def _conv(layer: _Layer, op: Conv2D) -> str:
    channels, kernel = op.output.shape[3], op.weights.shape[1:3]
    multipliers, shifts = quantize_multipliers(conv_multipliers(
        op.input.scale, np.broadcast_to(op.weight_scales, channels), op.output.scale))
    quant = layer.struct("cmsis_nn_per_channel_quant_params", "quant",
                         f"{{(int32_t*){layer.array('multiplier', multipliers.astype(np.int32))}, "
                         f"(int32_t*){layer.array('shift', shifts.astype(np.int32))}}}")
    window = f"{_tile(op.stride)}, {_tile(op.padding[:2])}, {_tile(op.dilation)}, {_clamp(op)}"
    if op.depthwise:
        multiplier = channels // op.input.shape[3]
        params = layer.struct("cmsis_nn_dw_conv_params", "params",
                              f"{{{-op.input.zero_point}, {op.output.zero_point}, {multiplier}, {window}}}")
        filter_dims, function = (1, *kernel, channels), "arm_depthwise_conv_wrapper_s8"
    else:
        params = layer.struct("cmsis_nn_conv_params", "params",
                              f"{{{-op.input.zero_point}, {op.output.zero_point}, {window}}}")
        filter_dims, function = (channels, *kernel, op.input.shape[3]), "arm_convolve_wrapper_s8"
    dims = [layer.struct("cmsis_nn_dims", name, _dims(shape)) for name, shape in (
        ("input_dims", op.input.shape), ("filter_dims", filter_dims), ("bias_dims", (1, 1, 1, channels)),
        ("output_dims", op.output.shape))]
    bias = layer.array("bias", op.bias) if op.bias is not None else "0"
    ctx = layer.context(f"{function}_get_buffer_size({params}, {dims[0]}, {dims[1]}, {dims[3]})")
    return (f"{function}({ctx}, {params}, {quant}, {dims[0]}, input, {dims[1]}, {layer.array('weights', op.weights)}, "
            f"{dims[2]}, {bias}, {dims[3]}, straight)")


def _fully_connected(layer: _Layer, op: FullyConnected) -> str:
    units, depth = op.weights.shape
    rows = op.input.size // depth
    multiplier, shift = quantize_multipliers(fully_connected_multipliers(op.input.scale, op.weight_scales,
                                                                         op.output.scale))
    params = layer.struct("cmsis_nn_fc_params", "params",
                          f"{{{-op.input.zero_point}, 0, {op.output.zero_point}, {_clamp(op)}}}")
    quant = layer.struct("cmsis_nn_per_tensor_quant_params", "quant", f"{{{int(multiplier[0])}, {int(shift[0])}}}")
    dims = [layer.struct("cmsis_nn_dims", name, _dims(shape)) for name, shape in (
        ("input_dims", (rows, 1, 1, depth)), ("filter_dims", (depth, 1, 1, units)), ("bias_dims", (1, 1, 1, units)),
        ("output_dims", (rows, 1, 1, units)))]
    weights = layer.array("weights", op.weights)
    bias = layer.array("bias", op.bias) if op.bias is not None else "0"
    ctx = layer.context(f"arm_fully_connected_s8_get_buffer_size({dims[1]})")
    layer.setup.append(f"if ({layer.tag}_ctx.size) arm_vector_sum_s8((int32_t*)scratch, {depth}, {units}, {weights}, "
                       f"{-op.input.zero_point}, 0, {bias});")
    return (f"arm_fully_connected_s8({ctx}, {params}, {quant}, {dims[0]}, input, {dims[1]}, {weights}, {dims[2]}, "
            f"{bias}, {dims[3]}, straight)")


def _pool(layer: _Layer, op: Pool2D) -> str:
    params = layer.struct("cmsis_nn_pool_params", "params",
                          f"{{{_tile(op.stride)}, {_tile(op.padding[:2])}, {_clamp(op)}}}")
    dims = [layer.struct("cmsis_nn_dims", name, _dims(shape)) for name, shape in (
        ("input_dims", op.input.shape), ("filter_dims", (1, *op.pool, 1)), ("output_dims", op.output.shape))]
    if op.kind == "avg":
        ctx = layer.context(f"arm_avgpool_s8_get_buffer_size({op.output.shape[2]}, {op.input.shape[3]})")
        function = "arm_avgpool_s8"
    else:
        ctx, function = layer.struct("cmsis_nn_context", "ctx", "{0, 0}"), "arm_max_pool_s8"
    return f"{function}({ctx}, {params}, {dims[0]}, input, {dims[1]}, {dims[2]}, straight)"


def _elementwise(layer: _Layer, op: Binary) -> str:
    """ADD or MUL of the layer's input with itself (one feature map feeds both operands here)."""
    low, high = op.clamp or op.output.limits
    output = f"straight, {op.output.zero_point}, "
    if op.kind == "mul":
        multiplier, shift = quantize_multiplier(mul_multiplier(op.lhs.scale, op.rhs.scale, op.output.scale))
        return (f"arm_elementwise_mul_s8(input, input, {-op.lhs.zero_point}, {-op.rhs.zero_point}, {output}"
                f"{multiplier}, {shift}, {low}, {high}, {op.output.size})")
    left_shift = ELEMENTWISE_INPUT_SHIFT["int8"]
    (m1, s1), (m2, s2), (m, s) = (quantize_multiplier(real) for real in add_multipliers(
        op.lhs.scale, op.rhs.scale, op.output.scale, left_shift))
    return (f"arm_elementwise_add_s8(input, input, {-op.lhs.zero_point}, {m1}, {s1}, {-op.rhs.zero_point}, {m2}, "
            f"{s2}, {left_shift}, {output}{m}, {s}, {low}, {high}, {op.output.size})")


_STRAIGHT = {Conv2D: _conv, FullyConnected: _fully_connected, Pool2D: _pool, Binary: _elementwise}


def _input_size(op) -> int:
    return op.lhs.size if isinstance(op, Binary) else op.input.size


def _ours(kernel, tag: str) -> tuple[list[str], str]:
    """Globals and the call of our build's kernel function (its constants as the runner passes them)."""
    types = [f"{'' if p.role == 'output' else 'const '}{c_type(p.dtype)}*" for p in kernel.params]
    declaration = f"void {kernel.name}({', '.join(types + ['uint8_t*'] * len(kernel.scratch))});"
    globals_, arguments = [declaration], []
    for i, param in enumerate(kernel.params):
        if param.role == "constant":
            globals_.append(c_array(f"{tag}_ours_{i}", np.ascontiguousarray(param.data)))
            arguments.append(f"{tag}_ours_{i}")
        else:
            arguments.append("input" if param.role == "input" else "ours")
    arguments += ["scratch"] * len(kernel.scratch)
    assert all(s.nbytes <= SCRATCH for s in kernel.scratch)
    return globals_, f"{kernel.name}({', '.join(arguments)})"


def firmware(model: bytes, module) -> tuple[str, list[tuple[str, object, object]]]:
    """main.c timing each layer both ways, and the (name, spec, kernel) of each layer."""
    specs = _specs(model)
    kernels = {step.kernel.name: step.kernel for step in module.program.steps}
    layers = [(name, op, kernels[name]) for name, op in specs.items() if type(op) in _STRAIGHT]
    size = max(max(_input_size(op), op.output.size) for _, op, _ in layers)
    lines = ["#include <stdint.h>", "#include <stdio.h>", '#include "arm_nnfunctions.h"', DUMP_HELPER_C, COUNTER_C,
             f"static int8_t input[{size}] __attribute__((aligned(16)));",
             f"static int8_t ours[{size}] __attribute__((aligned(16)));",
             f"static int8_t straight[{size}] __attribute__((aligned(16)));",
             f"static uint8_t scratch[{SCRATCH}] __attribute__((aligned(16)));"]
    body = ["int main(void) {", "  counter_start();"]
    for i, (name, op, kernel) in enumerate(layers):
        layer = _Layer(f"l{i}")
        call = _STRAIGHT[type(op)](layer, op)
        ours_globals, ours_call = _ours(kernel, layer.tag)
        lines += layer.globals + ours_globals
        body += [f"  /* {name} */",  # an input over the whole int8 range, the same for both calls
                 f"  for (int i = 0; i < {_input_size(op)}; ++i) input[i] = (int8_t)((i * 37 + 11) ^ (i >> 3));",
                 "  { uint64_t t = counter_ticks();", f"    {ours_call};",
                 f'    printf("@@ours {name} %lu\\n", (unsigned long)(counter_ticks() - t)); }}',
                 *(f"  {line}" for line in layer.setup),
                 "  { uint64_t t = counter_ticks();", f"    if ({call} != ARM_CMSIS_NN_SUCCESS) return 4;",
                 f'    printf("@@straight {name} %lu\\n", (unsigned long)(counter_ticks() - t)); }}',
                 f'  ethosu_tvm_dump("{name}_ours", ours, {op.output.size});',
                 f'  ethosu_tvm_dump("{name}_straight", straight, {op.output.size});']
    return "\n".join(lines + body + ["  return 0;", "}", ""]), layers


def measure(name: str, cpu: str, workdir: Path):
    """(layer, op, library of ours, ours, straight, outputs equal) for each layer of `name` on `cpu`."""
    model = shared_model(f"{name}.tflite")
    module = ethosu_tvm.build(ethosu_tvm.from_tflite(model), target=f"cmsis-nn,c -mcpu={cpu}")
    module.export_model_library_format(workdir / "model.tar")
    with tarfile.open(workdir / "model.tar") as tar:
        tar.extractall(workdir / "mlf", filter="data")
    main_c, layers = firmware(model, module)
    result = build_and_run(main_c, workdir, workdir / "mlf", libraries=library_lines(cpu), cpu=cpu,
                           qemu_options=("-icount", "shift=0"))
    assert result.exit_code == 0, (result.exit_code, result.stderr)
    counts = {tuple(line.split()[:2]): int(line.split()[2]) for line in result.stdout.splitlines()
              if line.startswith(("@@ours ", "@@straight "))}
    dumps = parse_dumps(result.stdout)
    for layer, op, kernel in layers:
        equal = dumps[f"{layer}_ours"] == dumps[f"{layer}_straight"]
        exact = not refusal(op)
        assert equal or not exact, f"{name} {layer} on {cpu}: ours and the straight call differ"
        yield (layer, kernel.library or "ours", round(counts["@@ours", layer] * NS_PER_TICK[cpu]),
               round(counts["@@straight", layer] * NS_PER_TICK[cpu]), exact)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    parser.add_argument("--cpus", nargs="+", choices=CPUS, default=["cortex-m55", "cortex-m7"])
    args = parser.parse_args(argv)
    if not os.environ.get(CMSIS_NN_ENV):
        parser.error(f"set {CMSIS_NN_ENV} to a CMSIS-NN build folder (docs/firmware.md)")
    print("| model | CPU | layer | ours runs it with | ours | straight CMSIS-NN | ratio | exact |")
    print("|---|---|---|---|---:|---:|---:|---|")
    for name in args.models:
        for cpu in args.cpus:
            totals = [0, 0]
            with tempfile.TemporaryDirectory() as work:
                for layer, library, ours, straight, exact in measure(name, cpu, Path(work)):
                    if exact:  # the layers both run alike; an inexact FC is ours, TFLite Micro's differs
                        totals[0], totals[1] = totals[0] + ours, totals[1] + straight
                    print(f"| {name} | {cpu} | {layer} | {library} | {ours:,} | {straight:,} | "
                          f"{ours / straight:.3f} | {'yes' if exact else 'no'} |", flush=True)
            ratio = totals[0] / totals[1]
            print(f"| {name} | {cpu} | **exact layers** | | {totals[0]:,} | {totals[1]:,} | {ratio:.3f} | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
