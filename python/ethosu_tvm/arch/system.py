"""The system around the NPU, named as Vela names it: a system config (core clock and the memories on its two AXI
ports) and a memory mode (which memory holds the constants, the feature maps and the fast scratch).

The cost model (`arch.cycles`) reads each memory's bandwidth from here. The values are those of Vela 5.2's
`vela.ini`: an AXI port moves 8 bytes per core cycle on a U55 (16 on a U65: `System.for_accelerator`), scaled
by the memory's clock scale. AXI0 is SRAM; AXI1 is an off-chip flash
or, on the U65 systems but Ethos_U65_Embedded, a DRAM. Regions are numbered as Vela's ethos-u operator numbers its
tensors: 0 the constants (weights, scales, lookup tables), 1 the scratch arena, 2 the fast scratch, then the I/O.
Shared_Sram keeps the constants on AXI1, everything else in SRAM; Sram_Only everything in SRAM; Dedicated_Sram
(a writable AXI1 only) the constants and the feature maps (scratch and I/O) on AXI1, and only the fast scratch in
SRAM. SHRAM traffic counts as SRAM's.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, replace

from . import ACCELERATORS, U55, U65

CONSTANTS_REGION = 0
SCRATCH_REGION = 1
FAST_SCRATCH_REGION = 2
FAST_SCRATCH_POOL = "fast_scratch"  # the workspace pool of region 2, the only pool its buffers go to
SHRAM = "shram"  # the NPU's internal memory, as a key of the per-region traffic counters


@dataclass(frozen=True)
class Memory:
    """One memory as the NPU sees it: clock relative to the core's, burst length and latencies in core cycles."""

    name: str
    clock_scale: float
    burst_bytes: int
    read_latency: int
    write_latency: int


@dataclass(frozen=True)
class SystemConfig:
    """A board: the NPU's core clock (Hz), its SRAM (AXI0) and its off-chip flash or DRAM (AXI1)."""

    name: str
    core_clock: float
    sram: Memory
    axi1: Memory


def _flash(clock_scale: float) -> Memory:
    return Memory("OffChipFlash", clock_scale, burst_bytes=128, read_latency=64, write_latency=0)


def _dram(clock_scale: float) -> Memory:
    return Memory("Dram", clock_scale, burst_bytes=128, read_latency=500, write_latency=250)


_SRAM = Memory("Sram", 1.0, burst_bytes=32, read_latency=32, write_latency=32)
SYSTEM_CONFIGS: dict[str, SystemConfig] = {
    config.name: config
    for config in (
        SystemConfig("Ethos_U55_High_End_Embedded", 500e6, _SRAM, _flash(0.125)),
        SystemConfig("Ethos_U55_Deep_Embedded", 200e6, _SRAM, _flash(0.0625)),
        SystemConfig("Ethos_U65_Embedded", 500e6, _SRAM, _flash(0.0625)),
        SystemConfig("Ethos_U65_Mid_End", 500e6, _SRAM, _dram(0.46875)),
        SystemConfig("Ethos_U65_High_End", 1e9, _SRAM, _dram(0.234375)),
        SystemConfig("Ethos_U65_Client_Server", 1e9, _SRAM, _dram(0.75)),
    )
}
MEMORY_MODES = ("Shared_Sram", "Sram_Only", "Dedicated_Sram")
# The system configs of each product (Vela names each board after the NPU on it), the compiler's default first.
PRODUCT_SYSTEM_CONFIGS = {
    U55: ("Ethos_U55_High_End_Embedded", "Ethos_U55_Deep_Embedded"),
    U65: ("Ethos_U65_High_End", "Ethos_U65_Embedded", "Ethos_U65_Mid_End", "Ethos_U65_Client_Server"),
}
# The memory modes the compiler takes for each product (Dedicated_Sram needs the U65's writable AXI1).
COMPILER_MEMORY_MODES = {U55: ("Shared_Sram", "Sram_Only"), U65: MEMORY_MODES}
DEFAULT_SYSTEM_CONFIG = PRODUCT_SYSTEM_CONFIGS[U55][0]
DEFAULT_MEMORY_MODE = "Shared_Sram"


def default_system_config(accelerator: str) -> str:
    """The system config assumed for `accelerator` (a name in `arch.ACCELERATORS`) when none is given: its
    product's first, so that a U65 is not costed on a U55's board."""
    return PRODUCT_SYSTEM_CONFIGS[ACCELERATORS[accelerator].product][0]


@dataclass(frozen=True)
class System:
    """A system config with a memory mode (which memory each region's traffic goes to) and the bytes an AXI port
    of the NPU moves per core cycle (a U55's unless `for_accelerator` says otherwise)."""

    config: SystemConfig = SYSTEM_CONFIGS[DEFAULT_SYSTEM_CONFIG]
    memory_mode: str = DEFAULT_MEMORY_MODE
    axi_bytes_per_cycle: int = 8

    def __post_init__(self):
        if self.memory_mode not in MEMORY_MODES:
            raise ValueError(f"unknown memory mode {self.memory_mode!r}; expected one of {', '.join(MEMORY_MODES)}")
        if self.memory_mode == "Dedicated_Sram" and self.config.axi1.name != "Dram":
            raise ValueError(f"memory mode Dedicated_Sram keeps feature maps in DRAM; {self.config.name} has "
                             f"{self.config.axi1.name} on its second AXI port")

    def memory(self, region) -> Memory:
        """The memory behind a region number (or SHRAM, which the NPU reads at SRAM speed in this model)."""
        if self.memory_mode == "Sram_Only":
            return self.config.sram
        if region == CONSTANTS_REGION:
            return self.config.axi1
        if self.memory_mode == "Dedicated_Sram" and region not in (FAST_SCRATCH_REGION, SHRAM):
            return self.config.axi1
        return self.config.sram

    @property
    def cache_region(self) -> int:
        """The region of what the NPU keeps close at hand (weight buffers, cascaded stripes, a launch's feature
        maps): Dedicated_Sram's fast scratch, the SRAM beside the DRAM; otherwise the scratch, in SRAM already."""
        return FAST_SCRATCH_REGION if self.memory_mode == "Dedicated_Sram" else SCRATCH_REGION

    def bytes_per_cycle(self, region) -> float:
        """The bandwidth of the memory behind a region, in bytes per core cycle."""
        return self.axi_bytes_per_cycle * self.memory(region).clock_scale

    def port(self, region) -> tuple[str, float]:
        """(name, bytes per core cycle) of the memory behind a region, looked up once per region: the cost model
        asks for every region of every block config it ranks."""
        ports = self._ports
        if region not in ports:
            ports[region] = self.memory(region).name, self.bytes_per_cycle(region)
        return ports[region]

    @functools.cached_property
    def _ports(self) -> dict:
        return {}

    def for_accelerator(self, accelerator) -> System:
        """This system around `accelerator` (an `arch.Accelerator`), whose AXI ports may be wider."""
        return replace(self, axi_bytes_per_cycle=accelerator.axi_bytes_per_cycle)


def find_system(config: str = DEFAULT_SYSTEM_CONFIG, memory_mode: str = DEFAULT_MEMORY_MODE) -> System:
    """The system called `config` in `memory_mode`; ValueError naming the valid values otherwise."""
    try:
        system_config = SYSTEM_CONFIGS[config]
    except KeyError:
        raise ValueError(f"unknown system config {config!r}; expected one of {', '.join(SYSTEM_CONFIGS)}") from None
    return System(system_config, memory_mode)


DEFAULT_SYSTEM = System()
