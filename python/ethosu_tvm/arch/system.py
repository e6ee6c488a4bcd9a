"""The system around the NPU, named as Vela names it: a system config (core clock and the memories on its two AXI
ports) and a memory mode (which memory holds the constants).

The cost model (`arch.cycles`) reads each memory's bandwidth from here. The values are those of the U55 systems in
Vela 5.2's `vela.ini`: a U55 AXI port moves 8 bytes per core cycle, scaled by the memory's clock scale. Feature
maps, scratch and SHRAM traffic are always SRAM's; constants (region 0: weights, scales, lookup tables) are in the
off-chip flash under Shared_Sram and in SRAM under Sram_Only.
"""
from __future__ import annotations

from dataclasses import dataclass

CONSTANTS_REGION = 0
_AXI_BYTES_PER_CYCLE = 8


@dataclass(frozen=True)
class Memory:
    """One memory as the NPU sees it: bytes per core cycle, burst length and latencies in core cycles."""

    name: str
    clock_scale: float
    burst_bytes: int
    read_latency: int
    write_latency: int

    @property
    def bytes_per_cycle(self) -> float:
        return _AXI_BYTES_PER_CYCLE * self.clock_scale


@dataclass(frozen=True)
class SystemConfig:
    """A board: the NPU's core clock (Hz), its SRAM and its off-chip flash."""

    name: str
    core_clock: float
    sram: Memory
    flash: Memory


_SRAM = Memory("Sram", 1.0, burst_bytes=32, read_latency=32, write_latency=32)
SYSTEM_CONFIGS: dict[str, SystemConfig] = {
    config.name: config
    for config in (
        SystemConfig("Ethos_U55_High_End_Embedded", 500e6, _SRAM,
                     Memory("OffChipFlash", 0.125, burst_bytes=128, read_latency=64, write_latency=0)),
        SystemConfig("Ethos_U55_Deep_Embedded", 200e6, _SRAM,
                     Memory("OffChipFlash", 0.0625, burst_bytes=128, read_latency=64, write_latency=0)),
    )
}
MEMORY_MODES = ("Shared_Sram", "Sram_Only")
DEFAULT_SYSTEM_CONFIG = "Ethos_U55_High_End_Embedded"
DEFAULT_MEMORY_MODE = "Shared_Sram"


@dataclass(frozen=True)
class System:
    """A system config with a memory mode: which memory each region's traffic goes to."""

    config: SystemConfig = SYSTEM_CONFIGS[DEFAULT_SYSTEM_CONFIG]
    memory_mode: str = DEFAULT_MEMORY_MODE

    def __post_init__(self):
        if self.memory_mode not in MEMORY_MODES:
            raise ValueError(f"unknown memory mode {self.memory_mode!r}; expected one of {', '.join(MEMORY_MODES)}")

    def memory(self, region) -> Memory:
        """The memory behind a region number (or SHRAM, which the NPU reads at SRAM speed in this model)."""
        if region == CONSTANTS_REGION and self.memory_mode == "Shared_Sram":
            return self.config.flash
        return self.config.sram


def find_system(config: str = DEFAULT_SYSTEM_CONFIG, memory_mode: str = DEFAULT_MEMORY_MODE) -> System:
    """The system called `config` in `memory_mode`; ValueError naming the valid values otherwise."""
    try:
        system_config = SYSTEM_CONFIGS[config]
    except KeyError:
        raise ValueError(f"unknown system config {config!r}; expected one of {', '.join(SYSTEM_CONFIGS)}") from None
    return System(system_config, memory_mode)


DEFAULT_SYSTEM = System()
