"""The cmsis-nn target kind: TVM's spellings, the CPU table and -mattr, the build's view of it, and the errors."""
import pytest

from ethosu_tvm.build_config import configure
from ethosu_tvm.target import (
    CmsisNnTarget,
    TargetError,
    cmsis_nn_target_from_options,
    format_target,
    format_target_list,
    parse_target_list,
)

LEVELS = {"cortex-m0": "scalar", "cortex-m0plus": "scalar", "cortex-m3": "scalar", "cortex-m23": "scalar",
          "cortex-m4": "dsp", "cortex-m7": "dsp", "cortex-m33": "dsp", "cortex-m35p": "dsp",
          "cortex-m55": "mve", "cortex-m85": "mve"}


@pytest.mark.parametrize("mcpu", LEVELS)
def test_every_cpu_has_its_extension_level(mcpu):
    assert cmsis_nn_target_from_options({"kind": "cmsis-nn", "mcpu": mcpu}) == CmsisNnTarget(mcpu, LEVELS[mcpu])


@pytest.mark.parametrize("mcpu, mattr, level", [
    ("cortex-m55", "+nomve", "dsp"), ("cortex-m55", "+nodsp", "scalar"), ("cortex-m85", "+nomve,+nodsp", "scalar"),
    ("cortex-m7", "+nomve", "dsp"), ("cortex-m4", "+nodsp", "scalar"), ("cortex-m0", "+nodsp", "scalar"),
    ("cortex-m55", "", "mve"),
])
def test_mattr_removes_extensions(mcpu, mattr, level):
    options = {"kind": "cmsis-nn", "mcpu": mcpu, "mattr": mattr}
    assert cmsis_nn_target_from_options(options).extension == level


@pytest.mark.parametrize("text", [
    "ethos-u -accelerator-config=ethos-u55-256,cmsis-nn -mcpu=cortex-m55,c -mcpu=cortex-m55",
    '"ethos-u -accelerator-config=ethos-u55-256","cmsis-nn -mcpu=cortex-m55 -mattr=+nomve",c -mcpu=cortex-m55',
    "cmsis-nn --mcpu cortex-m55, c",
])
def test_tvm_spellings_reach_the_build(text):
    config = configure(text)
    assert config.cmsis_nn.mcpu == "cortex-m55"
    assert config.cmsis_nn.extension == ("dsp" if "+nomve" in text else "mve")
    assert (config.npu is None) == text.startswith("cmsis-nn")


def test_mcpu_defaults_to_the_c_targets():
    assert configure("cmsis-nn,c -mcpu=cortex-m7").cmsis_nn == CmsisNnTarget("cortex-m7", "dsp")
    assert configure("cmsis-nn -mcpu=cortex-m4,c -mcpu=cortex-m7").cmsis_nn == CmsisNnTarget("cortex-m4", "dsp")
    assert configure("ethos-u,c -mcpu=cortex-m55").cmsis_nn is None


def test_an_mattr_list_stays_one_entry_when_formatted():
    targets = [{"kind": "cmsis-nn", "mcpu": "cortex-m55", "mattr": "+nodsp,+nomve"}, {"kind": "c"}]
    text = format_target_list(targets)
    assert text == '"cmsis-nn -mcpu=cortex-m55 -mattr=+nodsp,+nomve",c'
    assert parse_target_list(text) == targets
    assert format_target(targets[0]) == "cmsis-nn -mcpu=cortex-m55 -mattr=+nodsp,+nomve"


@pytest.mark.parametrize("text, message", [
    ("cmsis-nn -mcpu=cortex-m99,c", "unknown -mcpu 'cortex-m99' for target cmsis-nn; valid: cortex-m0, cortex-m0plus, "
     "cortex-m3, cortex-m23, cortex-m4, cortex-m7, cortex-m33, cortex-m35p, cortex-m55, cortex-m85"),
    ("cmsis-nn,c", "no -mcpu (on cmsis-nn or c) for target cmsis-nn; valid: cortex-m0, cortex-m0plus, cortex-m3, "
     "cortex-m23, cortex-m4, cortex-m7, cortex-m33, cortex-m35p, cortex-m55, cortex-m85"),
    ('"cmsis-nn -mcpu=cortex-m55 -mattr=+nomve,+fp16",c', "unknown -mattr '+fp16' for target cmsis-nn; valid: +nodsp, "
     "+nomve"),
    ("cmsis-nn -mcpu=cortex-m55 -mfloat-abi=hard,c", "unknown option 'mfloat-abi' for target cmsis-nn; valid: mcpu, "
     "mattr"),
    ("cmsis-nn -mcpu=cortex-m55", "the target list needs the host target 'c' (e.g. \"ethos-u -accelerator-config="
     "ethos-u55-128\",c): operators and the runner run on the Cortex-M"),
])
def test_errors(text, message):
    with pytest.raises(TargetError) as info:
        configure(text)
    assert str(info.value) == message
