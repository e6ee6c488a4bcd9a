"""Helpers of the cost model's tests: single-operator models and the Vela operations code generation builds."""
from ethosu.vela import api as vapi

from ethosu_tvm.codegen import compile_npu_graph
from ethosu_tvm.codegen.artifact import build_operations
from ethosu_tvm.codegen.tir_to_npu import translate
from ethosu_tvm.frontend.importer import from_tflite
from ethosu_tvm.legalize import legalize
from ethosu_tvm.partition import partition_for_ethosu
from ethosu_tvm.target import EthosuTarget

PART_KERNEL, DEPTH_FIRST = vapi.NpuBlockTraversal.PART_KERNEL_FIRST, vapi.NpuBlockTraversal.DEPTH_FIRST
U55_128 = vapi.NpuAccelerator.Ethos_U55_128
SINGLE_OPS = {
    "kws_first_conv": ("conv2d", dict(in_shape=(1, 49, 10, 1), out_channels=64, kernel=(10, 4), stride=(2, 2))),
    "conv3x3_depth32": ("conv2d", dict(in_shape=(1, 12, 12, 32), out_channels=24)),
    "depthwise": ("depthwise_conv2d", dict(in_shape=(1, 16, 16, 24), stride=(2, 2))),
    "fully_connected": ("fully_connected", dict(in_shape=(1, 1, 1, 64), units=40)),
    "avg_pool": ("avg_pool2d", dict(in_shape=(1, 25, 5, 64), pool=(25, 5), stride=(1, 1))),
    "max_pool": ("max_pool2d", dict(in_shape=(1, 16, 16, 8), pool=(3, 3), stride=(2, 2), padding="SAME")),
    "add_broadcast": ("add", dict(in_shape=(1, 8, 8, 16), in2_shape=(1, 1, 1, 16))),
    "mul": ("mul", dict(in_shape=(1, 8, 1, 8), in2_shape=(1, 8, 8, 8))),
    "lut": ("logistic", dict(in_shape=(1, 10, 10, 8))),
    "reshape": ("reshape", dict(in_shape=(1, 3, 5, 7), new_shape=(1, 105))),
}


def codegen_operations(model: bytes, accelerator: str):
    """(NPU graph, the Vela operations code generation builds for it unscheduled, its artifact)."""
    mod, _ = partition_for_ethosu(from_tflite(model), accelerator)
    (graph,) = legalize(mod)
    target = EthosuTarget(accelerator)
    _, per_stripe, *_ = build_operations(graph, translate(graph, None), target)
    return graph, [npu_op for npu_ops in per_stripe for npu_op in npu_ops], compile_npu_graph(graph, target)
