"""The Ethos-U55 configurations: MAC count, micro-block depths and SHRAM size per variant."""
from __future__ import annotations

from dataclasses import dataclass

# The activation lookup tables occupy the last 2 KiB of SHRAM, in eight 256-byte slots.
LUT_BYTES = 2048
LUT_SLOT_BYTES = 256


@dataclass(frozen=True)
class Accelerator:
    """One Ethos-U55 variant; the micro-block depths fix the order of the encoded weight stream."""

    name: str
    macs: int
    ofm_ublock_depth: int
    ifm_ublock_depth: int
    shram_bytes: int

    @property
    def lut_base(self) -> int:
        """SHRAM address of LUT slot 0."""
        return self.shram_bytes - LUT_BYTES


ACCELERATORS: dict[str, Accelerator] = {
    acc.name: acc
    for acc in (
        Accelerator("ethos-u55-32", 32, ofm_ublock_depth=4, ifm_ublock_depth=8, shram_bytes=16 * 1024),
        Accelerator("ethos-u55-64", 64, ofm_ublock_depth=8, ifm_ublock_depth=8, shram_bytes=16 * 1024),
        Accelerator("ethos-u55-128", 128, ofm_ublock_depth=8, ifm_ublock_depth=8, shram_bytes=24 * 1024),
        Accelerator("ethos-u55-256", 256, ofm_ublock_depth=8, ifm_ublock_depth=8, shram_bytes=48 * 1024),
    )
}


def accelerator(name: str) -> Accelerator:
    """Look up a variant by its Vela name, e.g. "ethos-u55-128"."""
    try:
        return ACCELERATORS[name]
    except KeyError:
        raise ValueError(f"unknown accelerator {name!r}; expected one of {', '.join(ACCELERATORS)}") from None
