"""The Ethos-U55 hardware, described once for the target parser, code generation, the cost model and the simulator.

Each variant (`Accelerator`, listed in `ACCELERATORS`) fixes the MAC count, the micro-block depths that order the
encoded weight stream, and the SHRAM size, whose last 2 KiB hold the activation lookup tables. `ALIGNMENT` is the
16-byte alignment the NPU needs of every address it is given; the memory plan, the constant blob and the host's
scratch use it too, so that one buffer layout suits every reader. The cost model shared by the simulator and code
generation (its block choice and the cascader's stripe costs) is `ethosu_tvm.arch.cycles`.

Importing this package imports neither TVM nor Vela (`import ethosu_tvm` and `tvmc --help` stay fast).
"""
from __future__ import annotations

from dataclasses import dataclass

ALIGNMENT = 16

# The largest height, width or depth of a feature map an NPU operation takes (Vela's limit).
MAX_EXTENT = 65535

# The activation lookup tables occupy the last 2 KiB of SHRAM, in eight 256-byte slots.
LUT_BYTES = 2048
LUT_SLOT_BYTES = 256
# DMA destination "region" meaning SHRAM (internal memory flag 0x100 + region 3), as the hardware defines it.
LUT_REGION = 0x100 | 3


def round_up(value: int, multiple: int = ALIGNMENT) -> int:
    """`value` rounded up to a multiple of `multiple` (by default the NPU's alignment)."""
    return -(-value // multiple) * multiple


@dataclass(frozen=True)
class Accelerator:
    """One Ethos-U55 variant, named as target strings, Vela and the simulator name it ("ethos-u55-128")."""

    name: str
    macs: int  # MAC units per cycle
    ofm_ublock_depth: int
    ifm_ublock_depth: int
    shram_bytes: int

    @property
    def lut_base(self) -> int:
        """SHRAM address of LUT slot 0."""
        return self.shram_bytes - LUT_BYTES

    @property
    def vela_accelerator(self):
        """Vela's API enum value (`ethosu.vela.api.NpuAccelerator`), imported lazily: Vela is only needed from
        code generation on."""
        from ethosu.vela.api import NpuAccelerator

        return NpuAccelerator[f"Ethos_U55_{self.macs}"]


ACCELERATORS: dict[str, Accelerator] = {
    acc.name: acc
    for acc in (
        Accelerator("ethos-u55-32", 32, ofm_ublock_depth=4, ifm_ublock_depth=8, shram_bytes=16 * 1024),
        Accelerator("ethos-u55-64", 64, ofm_ublock_depth=8, ifm_ublock_depth=8, shram_bytes=16 * 1024),
        Accelerator("ethos-u55-128", 128, ofm_ublock_depth=8, ifm_ublock_depth=8, shram_bytes=24 * 1024),
        Accelerator("ethos-u55-256", 256, ofm_ublock_depth=8, ifm_ublock_depth=8, shram_bytes=48 * 1024),
    )
}


def find_accelerator(name: str) -> Accelerator:
    """The variant called `name`, e.g. "ethos-u55-128"."""
    try:
        return ACCELERATORS[name]
    except KeyError:
        raise ValueError(f"unknown accelerator {name!r}; expected one of {', '.join(ACCELERATORS)}") from None


def from_vela(npu_accelerator) -> Accelerator:
    """The variant of a Vela API enum value: code generation and the cost model are handed those, because Vela's
    API calls take them."""
    for accelerator in ACCELERATORS.values():
        if accelerator.vela_accelerator == npu_accelerator:
            return accelerator
    raise ValueError(f"{npu_accelerator} is not an Ethos-U55 variant; expected one of {', '.join(ACCELERATORS)}")
