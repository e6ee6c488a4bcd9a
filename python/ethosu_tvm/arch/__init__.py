"""The Ethos-U55 and Ethos-U65 hardware, described once for the target parser, code generation, the cost model and
the simulator.

Each variant (`Accelerator`, listed in `ACCELERATORS`) fixes the MAC count and number of cores, the micro-block
depths that order the encoded weight stream, the SHRAM banks, whose last 2 KiB hold the activation lookup tables,
and what its AXI ports move per cycle, how many DMAs it keeps in flight and how wide its addresses are (Vela 5.2's
architecture features). The compiler and the simulator take all of them. `ALIGNMENT` is the 16-byte alignment the
NPU needs of every address it is given; the memory plan, the constant blob and the host's scratch use it too, so
that one buffer layout suits every reader. The cost model shared by the simulator and code
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


SHRAM_BANK_BYTES = 1024
U55, U65 = "Ethos-U55", "Ethos-U65"
_PRODUCTS = {U55: 0, U65: 1}  # the product number a driver payload's config word carries


@dataclass(frozen=True)
class Accelerator:
    """One Ethos-U variant, named as target strings, Vela and the simulator name it ("ethos-u55-128")."""

    name: str
    product: str  # U55 or U65
    macs: int  # MAC units per cycle of one core
    ofm_ublock_depth: int
    ifm_ublock_depth: int
    shram_banks: int  # per core
    cores: int = 1
    axi_bytes_per_cycle: int = 8  # per AXI port and core cycle
    outstanding_dmas: int = 1
    address_bits: int = 32

    @property
    def shram_bytes(self) -> int:
        return self.shram_banks * SHRAM_BANK_BYTES

    @property
    def product_number(self) -> int:
        """The product field of a driver payload's config word."""
        return _PRODUCTS[self.product]

    @property
    def total_macs(self) -> int:
        """MACs per cycle of all cores together, as a driver payload's config word states them."""
        return self.macs * self.cores

    @property
    def lut_base(self) -> int:
        """SHRAM address of LUT slot 0."""
        return self.shram_bytes - LUT_BYTES

    @property
    def vela_accelerator(self):
        """Vela's API enum value (`ethosu.vela.api.NpuAccelerator`), imported lazily: Vela is only needed from
        code generation on."""
        from ethosu.vela.api import NpuAccelerator

        return NpuAccelerator[self.name.replace("ethos-u", "Ethos_U").replace("-", "_")]


_U65 = dict(product=U65, axi_bytes_per_cycle=16, outstanding_dmas=2, address_bits=40)
ACCELERATORS: dict[str, Accelerator] = {
    acc.name: acc
    for acc in (
        Accelerator("ethos-u55-32", U55, 32, ofm_ublock_depth=4, ifm_ublock_depth=8, shram_banks=16),
        Accelerator("ethos-u55-64", U55, 64, ofm_ublock_depth=8, ifm_ublock_depth=8, shram_banks=16),
        Accelerator("ethos-u55-128", U55, 128, ofm_ublock_depth=8, ifm_ublock_depth=8, shram_banks=24),
        Accelerator("ethos-u55-256", U55, 256, ofm_ublock_depth=8, ifm_ublock_depth=8, shram_banks=48),
        Accelerator("ethos-u65-256", macs=256, ofm_ublock_depth=8, ifm_ublock_depth=8, shram_banks=48, **_U65),
        Accelerator("ethos-u65-512", macs=256, ofm_ublock_depth=8, ifm_ublock_depth=8, shram_banks=48, cores=2,
                    **_U65),
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
    raise ValueError(f"{npu_accelerator} is not an Ethos-U variant; expected one of {', '.join(ACCELERATORS)}")
