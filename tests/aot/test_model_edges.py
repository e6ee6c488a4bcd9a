"""What a TFLite model can carry at its edges (the factory's `EDGES`: uint8, int16 and float32 I/O through QUANTIZE
and DEQUANTIZE, inputs read by several operators, outputs that later operators read too, mixed input types), each
built for the NPU and for the host alone and run through `CompiledModel.run`, equal LiteRT; the form TFLite Micro
refuses is refused with its reason."""
import numpy as np
import pytest
import tflite

import ethosu_tvm
from ethosu_tvm.frontend.errors import FloatModelError
from ethosu_tvm.frontend.tflite_file import output_infos
from ethosu_tvm.host.spec import UnsupportedHostOp
from ethosu_tvm.testing import models
from ethosu_tvm.testing.reference import litert_tensors, random_inputs, run_litert, run_tflm

from aot_support import npu_target

TARGETS = (npu_target("ethos-u55-128"), "c")
RUNS = [name for name in models.EDGES if name != "float_to_uint8"]
NPU_OPERATORS = {"uint8_body": {"ethos-u": 3}, "float_body": {"host": 2, "ethos-u": 1},
                 "float_int16_body": {"host": 2, "ethos-u": 1}, "int16_io": {"ethos-u": 1},
                 "uint8_to_float": {"host": 2, "ethos-u": 3}, "input_fanout": {"ethos-u": 3},
                 "uint8_fanout": {"ethos-u": 5}, "float_fanout": {"host": 2, "ethos-u": 2},
                 "float_two_quantizes": {"host": 2, "ethos-u": 2},
                 "npu_intermediate_output": {"ethos-u": 2, "host": 1},
                 "host_intermediate_output": {"ethos-u": 2, "host": 1},
                 "uint8_intermediate_output": {"ethos-u": 4}, "int16_int8_edges": {"ethos-u": 3},
                 "input_is_output": {"ethos-u": 2},
                 "float_input_is_output": {"host": 2, "ethos-u": 1}, "mixed_inputs": {"ethos-u": 6, "host": 2}}


@pytest.mark.parametrize("target", TARGETS, ids=("npu", "host"))
@pytest.mark.parametrize("name", RUNS)
def test_edge_form_runs_exactly(name, target):
    model = models.make_edge(name)
    module = ethosu_tvm.build(ethosu_tvm.from_tflite(model), target=target)
    if target != "c":
        assert module.offload.counts() == NPU_OPERATORS[name]
    for seed in range(2):
        inputs = random_inputs(model, seed)
        expected = run_litert(model, inputs)
        got = module.run({f"input_{i}": x for i, x in enumerate(inputs)})
        names = [info.name for info in output_infos(model)]  # input_is_output repeats names: the outputs' tensors
        assert list(got) == list(dict.fromkeys(names))
        for name, want in zip(names, expected):
            assert got[name].dtype == want.dtype and np.array_equal(got[name], want)


@pytest.mark.parametrize("target", TARGETS, ids=("npu", "host"))
def test_float_to_uint8_quantize_is_refused_as_tflite_micro_does(target):
    model = models.make_edge("float_to_uint8")
    with pytest.raises(RuntimeError):
        run_tflm(model, random_inputs(model, 0))
    with pytest.raises(UnsupportedHostOp, match=r"^operator #0 QUANTIZE: float32 to uint8 is not supported \(TFLite "
                       r"Micro's QUANTIZE has no float32 to uint8\)$"):
        ethosu_tvm.build(ethosu_tvm.from_tflite(model), target=target)


def test_float_input_read_by_two_quantizes_stripped():
    """With --strip-float-io each QUANTIZE of the float input gives an integer input: fed with the values LiteRT's
    QUANTIZEs compute, the output equals LiteRT's."""
    model = models.make_edge("float_two_quantizes")
    module = ethosu_tvm.build(ethosu_tvm.from_tflite(model, strip_float_io=True), target=TARGETS[0])
    graph = tflite.Model.GetRootAsModel(model, 0).Subgraphs(0)
    index = {graph.Tensors(i).Name().decode(): i for i in range(graph.TensorsLength())}
    assert [field.name for field in module.interface.inputs] == ["input_0_int", "t_1"]
    for seed in range(2):
        tensors = litert_tensors(model, random_inputs(model, seed))
        got = module.run({name: tensors[index[name]] for name in ("input_0_int", "t_1")})["output_0"]
        assert np.array_equal(got, tensors[index["output_0"]])


def test_repeated_outputs_are_copies_of_their_own():
    """An output that repeats the model input or another output is copied into its own buffer by a host copy
    kernel, as TFLite passes it on: the interface lists five outputs, the generated C calls three copies."""
    module = ethosu_tvm.build(ethosu_tvm.from_tflite(models.make_edge("input_is_output")), target=TARGETS[0])
    assert [(field.c_name, field.dtype) for field in module.interface.outputs] == [
        ("input_0_1", "int8"), ("output_1", "int8"), ("output_1_1", "int8"), ("output_3", "uint8"),
        ("output_3_1", "uint8")]
    assert [step.label for step in module.program.steps if step.target == "c"] == [
        f"tvmgen_default_copy_{n}" for n in range(3)]


def test_float_input_given_back_is_not_stripped():
    """--strip-float-io has no integer tensor to give for a float input that is also an output: refused in one line."""
    model = models.make_edge("float_input_is_output")
    with pytest.raises(FloatModelError, match=r"^float input 'input_0' is also a model output: --strip-float-io "
                                              r"cannot strip it$"):
        ethosu_tvm.from_tflite(model, strip_float_io=True)
