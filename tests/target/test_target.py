"""Target strings: the ethos-u options, tvmc-style lists, and the exact errors for bad input."""
import pytest

from ethosu_tvm.target import (
    KIND_OPTIONS,
    EthosuTarget,
    TargetError,
    ethosu_target_from_options,
    parse_ethosu_target,
    parse_target_list,
)


@pytest.mark.parametrize("macs", [32, 64, 128, 256])
def test_accelerator_configs(macs):
    target = parse_ethosu_target(f"ethos-u -accelerator-config=ethos-u55-{macs}")
    assert target == EthosuTarget(accelerator=f"ethos-u55-{macs}")
    assert target.macs == macs
    assert target.npu_accelerator.name == f"Ethos_U55_{macs}"


@pytest.mark.parametrize(
    "text",
    [
        "ethos-u --accelerator-config=ethos-u55-128 -enable-cascader=1 -enable-striping -disable-copying-constants",
        "ethos-u -accelerator-config ethos-u55-128 --enable-cascader true -enable-striping=1 "
        "-disable-copying-constants=TRUE",
        '"ethos-u -accelerator-config=ethos-u55-128 -enable-cascader -enable-striping -disable-copying-constants"',
    ],
)
def test_option_spellings(text):
    assert parse_ethosu_target(text) == EthosuTarget("ethos-u55-128", True, True, True)


def test_tvm_underscore_spellings():
    """TVM's tests and tutorials write -accelerator_config: '_' and '-' name the same option."""
    target = parse_ethosu_target("ethos-u -accelerator_config=ethos-u55-64 --enable_cascader -enable-striping=1 "
                                 "-disable_copying_constants true -dev_log_plans=0 -dev_select_proposal 2")
    assert target == EthosuTarget("ethos-u55-64", True, True, True, False, 2)


@pytest.mark.parametrize("kind", KIND_OPTIONS)
def test_every_option_takes_both_spellings(kind):
    for option in KIND_OPTIONS[kind]:
        underscored = option.replace("-", "_")
        assert parse_target_list(f"{kind} -{underscored}=1") == [{"kind": kind, option: "1"}]
        assert parse_target_list(f"{kind} --{option} 1") == [{"kind": kind, option: "1"}]


@pytest.mark.parametrize("text", [
    "ethos-u -accelerator_config=ethos-u55-128, c -mcpu=cortex-m55",
    '"ethos-u -accelerator-config=ethos-u55-128" ,  c -mcpu=cortex-m55',
    "ethos-u -accelerator-config=ethos-u55-128 ,c  -mcpu cortex-m55 ",
])
def test_spaces_around_commas(text):
    assert parse_target_list(text) == [{"kind": "ethos-u", "accelerator-config": "ethos-u55-128"},
                                       {"kind": "c", "mcpu": "cortex-m55"}]


def test_developer_options():
    target = parse_ethosu_target("ethos-u -enable-cascader -dev-log-plans -dev-select-proposal=3")
    assert (target.enable_cascader, target.dev_log_plans, target.dev_select_proposal) == (True, True, 3)
    assert parse_ethosu_target("ethos-u").dev_select_proposal is None


def test_defaults_and_false_flags():
    assert parse_ethosu_target("ethos-u") == EthosuTarget("ethos-u55-256")
    assert parse_ethosu_target("ethos-u55-64") == EthosuTarget("ethos-u55-64")
    assert not parse_ethosu_target("ethos-u -enable-cascader=0").enable_cascader


def test_tvmc_style_list():
    targets = parse_target_list('"ethos-u -accelerator-config=ethos-u55-128 -enable-cascader=1",c -mcpu=cortex-m55')
    assert targets == [
        {"kind": "ethos-u", "accelerator-config": "ethos-u55-128", "enable-cascader": "1"},
        {"kind": "c", "mcpu": "cortex-m55"},
    ]
    assert ethosu_target_from_options(targets[0]) == EthosuTarget("ethos-u55-128", enable_cascader=True)
    assert parse_target_list("llvm -mtriple=thumbv8.1m.main-none-eabi -mcpu=cortex-m55") == [
        {"kind": "llvm", "mtriple": "thumbv8.1m.main-none-eabi", "mcpu": "cortex-m55"}
    ]


@pytest.mark.parametrize(
    "text, message",
    [
        ("ethos-u -accelerator-config=ethos-u55-512",
         "unknown accelerator-config 'ethos-u55-512'; valid: ethos-u55-32, ethos-u55-64, ethos-u55-128, ethos-u55-256, "
         "ethos-u65-256, ethos-u65-512"),
        ("ethos-u -accelerator=ethos-u55-128",
         "unknown option 'accelerator' for target ethos-u; valid: accelerator-config, system-config, memory-mode, "
         "enable-cascader, enable-striping, disable-copying-constants, dev-log-plans, dev-select-proposal"),
        ("ethos-u -accelerator_confg=ethos-u55-128",
         "unknown option 'accelerator_confg' for target ethos-u; valid: accelerator-config, system-config, "
         "memory-mode, enable-cascader, enable-striping, disable-copying-constants, dev-log-plans, "
         "dev-select-proposal"),
        ("ethos-u -system-config=Ethos_U65_High_End",
         "system-config 'Ethos_U65_High_End' is not an Ethos-U55 system; valid: "
         "Ethos_U55_High_End_Embedded, Ethos_U55_Deep_Embedded"),
        ("ethos-u -accelerator-config=ethos-u65-256 -system-config=Ethos_U55_Deep_Embedded",
         "system-config 'Ethos_U55_Deep_Embedded' is not an Ethos-U65 system; valid: Ethos_U65_High_End, "
         "Ethos_U65_Embedded, Ethos_U65_Mid_End, Ethos_U65_Client_Server"),
        ("ethos-u -accelerator-config=ethos-u65-512 -system-config=Ethos_U65_Embedded -memory-mode=Dedicated_Sram",
         "memory mode Dedicated_Sram keeps feature maps in DRAM; Ethos_U65_Embedded has OffChipFlash on its second "
         "AXI port"),
        ("ethos-u -system-config=Ethos_U65_Huge",
         "unknown system-config 'Ethos_U65_Huge'; valid: Ethos_U55_High_End_Embedded, Ethos_U55_Deep_Embedded"),
        ("ethos-u -memory-mode=Dedicated_Sram",
         "memory-mode 'Dedicated_Sram' is not an Ethos-U55 memory mode; valid: Shared_Sram, Sram_Only"),
        ("ethos-u -memory-mode=Dedicated",
         "unknown memory-mode 'Dedicated'; valid: Shared_Sram, Sram_Only"),
        ("ethos-u -dev-select-proposal=-1",
         "option dev-select-proposal takes a non-negative integer, got '-1'"),
        ("ethos-u -enable-cascader=maybe",
         "option enable-cascader takes a boolean, got 'maybe'; valid: 1, 0, true, false"),
        ("ethos-n", "unknown target kind 'ethos-n'; valid: ethos-u, cmsis-nn, c, llvm"),
        ("", "empty target; valid kinds: ethos-u, cmsis-nn, c, llvm"),
        ("ethos-u ethos-u55-128", "unexpected 'ethos-u55-128' in the ethos-u target; options look like -key=value"),
    ],
)
def test_errors(text, message):
    with pytest.raises(TargetError) as info:
        parse_ethosu_target(text)
    assert str(info.value) == message
    assert isinstance(info.value, ValueError)


def test_list_errors():
    with pytest.raises(TargetError, match="^unknown option 'system-lib' for target c; valid: mcpu, march, "):
        parse_target_list("ethos-u,c -system-lib=1")
    with pytest.raises(TargetError, match="^cannot parse target '\"ethos-u,c': No closing quotation$"):
        parse_target_list('"ethos-u,c')
    with pytest.raises(TargetError, match="^expected an ethos-u target, got 'c'$"):
        ethosu_target_from_options({"kind": "c"})


@pytest.mark.parametrize("config, clock, flash", [("Ethos_U55_High_End_Embedded", 500e6, 1.0),
                                                  ("Ethos_U55_Deep_Embedded", 200e6, 0.5)])
@pytest.mark.parametrize("mode", ["Shared_Sram", "Sram_Only"])
def test_system_config_options(config, clock, flash, mode):
    target = parse_ethosu_target(f"ethos-u -accelerator-config=ethos-u55-128 -system-config={config} "
                                 f"-memory-mode={mode}")
    assert (target.system_config, target.memory_mode) == (config, mode)
    system = target.system
    assert system.config.core_clock == clock and system.bytes_per_cycle(1) == 8
    assert system.bytes_per_cycle(0) == (flash if mode == "Shared_Sram" else 8)


def test_default_system():
    target = parse_ethosu_target("ethos-u")
    assert (target.system_config, target.memory_mode) == ("Ethos_U55_High_End_Embedded", "Shared_Sram")


@pytest.mark.parametrize("config, clock, axi1", [("Ethos_U65_High_End", 1e9, 3.75), ("Ethos_U65_Embedded", 500e6, 1.0),
                                                 ("Ethos_U65_Mid_End", 500e6, 7.5),
                                                 ("Ethos_U65_Client_Server", 1e9, 12.0)])
@pytest.mark.parametrize("mode", ["Shared_Sram", "Sram_Only"])
def test_u65_system_configs(config, clock, axi1, mode):
    """A U65's AXI ports move 16 bytes per cycle, scaled by the memory's clock; by default its system is
    Ethos_U65_High_End."""
    target = parse_ethosu_target(f"ethos-u -accelerator-config=ethos-u65-256 -system-config={config} "
                                 f"-memory-mode={mode}")
    assert (target.system_config, target.memory_mode) == (config, mode)
    assert target.system.config.core_clock == clock and target.system.bytes_per_cycle(1) == 16
    assert target.system.bytes_per_cycle(0) == (axi1 if mode == "Shared_Sram" else 16)
    assert parse_ethosu_target("ethos-u65-256").system_config == "Ethos_U65_High_End"


@pytest.mark.parametrize("config, axi1", [("Ethos_U65_High_End", 3.75), ("Ethos_U65_Mid_End", 7.5),
                                          ("Ethos_U65_Client_Server", 12.0)])
def test_u65_dedicated_sram(config, axi1):
    """Dedicated_Sram on a U65 system with DRAM: the scratch (1) and the I/O on AXI1 with the constants, only the
    fast scratch (2), where weight buffers and rolling buffers go, in SRAM."""
    target = parse_ethosu_target(f"ethos-u -accelerator-config=ethos-u65-512 -system-config={config} "
                                 "-memory-mode=Dedicated_Sram")
    assert [target.system.bytes_per_cycle(region) for region in range(5)] == [axi1, axi1, 16, axi1, axi1]
    assert target.system.cache_region == 2 and parse_ethosu_target("ethos-u65-512").system.cache_region == 1
