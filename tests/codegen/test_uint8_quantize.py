"""uint8 (and int16) model I/O on the NPU: QUANTIZE from uint8 or int16 into int8 and back (a scaled 1x1 average
pool, programmed as Vela programs it) equals LiteRT's Requantize on every U55 configuration, alone, as the first and
last operation of a launch, and swept."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ethosu_tvm
from ethosu_tvm.frontend.importer import from_tflite
from ethosu_tvm.host import UnsupportedHostOp
from ethosu_tvm.partition import partition_for_ethosu
from ethosu_tvm.sim import Simulator, vela_tflite
from ethosu_tvm.sim.regfile import RegisterFile
from ethosu_tvm.sim.registers import Kind
from ethosu_tvm.sim.vela_compile import compile_model as compile_vela
from ethosu_tvm.testing import models
from ethosu_tvm.testing.reference import run_litert

from sim_support import ACCELERATORS, assert_model_exact, compile_model, run_artifact

# (input dtype, output dtype, quantization): the converter's plain shift (one scale, zero points 128 apart), then
# effective scales below 1 (TFLite's right shift) and above it (its left shift of the centred input).
EVERY_VALUE = {
    "uint8_shift": ("uint8", "int8", {}),
    "int8_shift": ("int8", "uint8", {}),
    "uint8_down": ("uint8", "int8", dict(in_scale=0.02, in_zp=131, out_scale=0.07, out_zp=-9)),
    "int8_down": ("int8", "uint8", dict(in_scale=1 / 255, in_zp=-128, out_scale=0.3, out_zp=3)),
    "uint8_up": ("uint8", "int8", dict(in_scale=0.5, in_zp=0, out_scale=0.004, out_zp=100)),
    "int8_up": ("int8", "uint8", dict(in_scale=0.25, in_zp=40, out_scale=1e-4, out_zp=250)),
    "int16_down": ("int16", "int8", dict(in_scale=1 / 2048, in_zp=0, out_scale=0.02, out_zp=-3)),
    "int16_up": ("int16", "int8", dict(in_scale=0.01, in_zp=0, out_scale=0.003, out_zp=5)),
    "int8_to_int16_down": ("int8", "int16", dict(in_scale=0.001, in_zp=7, out_scale=0.01, out_zp=0)),
    "int8_to_int16_up": ("int8", "int16", dict(in_scale=0.02, in_zp=-3, out_scale=1 / 2048, out_zp=0)),
}


@pytest.mark.parametrize("accelerator", ACCELERATORS)
@pytest.mark.parametrize("case", EVERY_VALUE)
def test_quantize_every_value(case, accelerator):
    in_type, out_type, quant = EVERY_VALUE[case]
    info = np.iinfo(in_type)
    every = np.arange(info.min, info.max + 1).astype(in_type).reshape(1, -1, 16, 1)
    model = models.make("quantize", 0, dtype=in_type, out_dtype=out_type, in_shape=every.shape, **quant)
    report, (artifact,) = compile_model(model, accelerator)
    assert report.counts() == {"ethos-u": 1}
    got = run_artifact(artifact, [every])[0].reshape(every.shape)
    assert got.dtype == np.dtype(out_type)
    assert np.array_equal(got, run_litert(model, [every])[0])


ARITHMETIC = ("IFM_ZERO_POINT", "IFM_PRECISION", "OFM_ZERO_POINT", "OFM_PRECISION", "ACTIVATION", "ACTIVATION_MIN",
              "ACTIVATION_MAX", "OFM_SCALE")


def _arithmetic(accelerator: str, payload) -> list[tuple]:
    """Each operation of a stream with the registers that define its arithmetic (value, and the scale's shift)."""
    regs, found = RegisterFile(), []
    for command in Simulator(accelerator).commands(payload):
        if command.opcode.kind is not Kind.OPERATION:
            regs.set(command)
        elif command.opcode.name != "NPU_OP_STOP":
            found.append((command.opcode.name, command.param,
                          *((regs.raw(name), regs.param(name)) for name in ARITHMETIC)))
    return found


@pytest.mark.parametrize("case", EVERY_VALUE)
def test_the_average_pool_vela_programs(case, tmp_path):
    """Vela 5.2 runs each of these QUANTIZEs as one 1x1 average pool too, with the same zero points, precisions,
    clamp and scale."""
    in_type, out_type, quant = EVERY_VALUE[case]
    model = models.make("quantize", 0, dtype=in_type, out_dtype=out_type, in_shape=(1, 4, 4, 2), **quant)
    _, (artifact,) = compile_model(model, "ethos-u55-128")
    (tmp_path / "model.tflite").write_bytes(model)
    vela = vela_tflite.parse(compile_vela(tmp_path / "model.tflite", "ethos-u55-128", "Performance", tmp_path))
    ours = _arithmetic("ethos-u55-128", artifact.driver_payload)
    assert len(ours) == 1 and ours[0][0] == "NPU_OP_POOL"
    assert ours == _arithmetic("ethos-u55-128", vela.command_stream)


@settings(max_examples=30, deadline=None)
@given(types=st.sampled_from([("uint8", "int8"), ("int8", "uint8")]), in_scale=st.floats(1e-3, 2.0),
       ratio=st.floats(1e-4, 1e4), in_zp=st.integers(0, 255), out_zp=st.integers(0, 255),
       accelerator=st.sampled_from(ACCELERATORS), seed=st.integers(0, 1000))
def test_quantize_sweep(types, in_scale, ratio, in_zp, out_zp, accelerator, seed):
    """Zero points drawn as uint8 values (128 less for int8), effective scales from 1e-4 to 1e4."""
    in_type, out_type = types
    model = models.make("quantize", seed, dtype=in_type, out_dtype=out_type, in_shape=(1, 5, 7, 3),
                        in_scale=in_scale, in_zp=in_zp - 128 * (in_type == "int8"), out_scale=in_scale / ratio,
                        out_zp=out_zp - 128 * (out_type == "int8"))
    assert_model_exact(model, accelerator)


@settings(max_examples=20, deadline=None)
@given(types=st.sampled_from([("int16", "int8"), ("int8", "int16")]), in_scale=st.floats(1e-4, 1.0),
       ratio=st.floats(1e-4, 1e4), int8_zp=st.integers(-128, 127), accelerator=st.sampled_from(ACCELERATORS),
       seed=st.integers(0, 1000))
def test_int16_quantize_sweep(types, in_scale, ratio, int8_zp, accelerator, seed):
    """QUANTIZE between int16 (zero point 0) and int8, effective scales from 1e-4 to 1e4: on the NPU below 2^15,
    where TFLite's left shift of the centred int16 input stays in int32."""
    in_type, out_type = types
    model = models.make("quantize", seed, dtype=in_type, out_dtype=out_type, in_shape=(1, 5, 7, 3),
                        in_scale=in_scale, in_zp=int8_zp if in_type == "int8" else 0, out_scale=in_scale / ratio,
                        out_zp=int8_zp if out_type == "int8" else 0)
    assert_model_exact(model, accelerator)


@pytest.mark.parametrize("accelerator", ACCELERATORS)
def test_uint8_io_graph_in_one_launch(accelerator):
    """The uint8 image's QUANTIZE is the launch's first operation, the scores' QUANTIZE its last."""
    assert_model_exact(models.make_graph("uint8_io"), accelerator, seeds=(0, 1, 2))


def test_left_shift_beyond_tflite_int32_stays_on_the_host():
    """An effective scale of 2^24: TFLite shifts (x − zp) left by 25 bits in int32, which wraps for |x − zp| ≥ 64;
    the NPU's product would not. The host kernel wraps as LiteRT does, on every input."""
    every = np.arange(256).astype(np.uint8).reshape(1, 16, 16, 1)
    model = models.make("quantize", 0, dtype="uint8", in_shape=every.shape, in_scale=1.0, in_zp=0,
                        out_scale=2.0**-24, out_zp=0)
    module = ethosu_tvm.build(from_tflite(model), target="ethos-u -accelerator-config=ethos-u55-128,c")
    (entry,) = module.offload.ops
    assert (entry.target, entry.reason) == ("host", "effective output scale 1.68e+07 shifts values of magnitude up to "
                                            "255 left by 25 bits, beyond TFLite's int32 arithmetic (LiteRT's product "
                                            "wraps there; the NPU's does not)")
    assert np.array_equal(module.run({"input_0": every})["output_0"], run_litert(model, [every])[0])


def test_uint8_to_uint8_is_refused_in_one_line():
    """TFLite Micro has no uint8 to uint8 QUANTIZE (LiteRT fails at invocation): neither the NPU nor the host."""
    model = models.make("quantize", 0, dtype="uint8", out_dtype="uint8")
    _, report = partition_for_ethosu(from_tflite(model), "ethos-u55-128")
    assert [(e.target, e.reason) for e in report.ops] == [("host", "uint8 to uint8; uint8 is requantized from or to "
                                                                   "int8 only")]
    with pytest.raises(UnsupportedHostOp, match=r"^operator #0 QUANTIZE: uint8 to uint8 is not supported \(uint8 "
                                                r"pairs with int8 only, as in TFLite Micro\)$"):
        ethosu_tvm.build(from_tflite(model), target="c")
