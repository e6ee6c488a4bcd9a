"""The accelerator descriptions against Vela 5.2's own architecture features, variant by variant."""
import pytest

from ethosu_tvm.arch import ACCELERATORS, find_accelerator, from_vela
from ethosu_tvm.arch.cycles import vela_arch


@pytest.mark.parametrize("name", ACCELERATORS)
def test_described_as_vela_describes_them(name):
    accelerator, arch = find_accelerator(name), vela_arch(find_accelerator(name))
    assert (accelerator.macs, accelerator.cores) == (arch.config.macs, arch.ncores)
    assert (accelerator.ofm_ublock_depth, accelerator.ifm_ublock_depth) == (arch.ofm_ublock.depth,
                                                                            arch.ifm_ublock.depth)
    assert (accelerator.shram_banks, accelerator.shram_bytes) == (arch.config.shram_banks, arch.shram_size_bytes)
    assert accelerator.lut_base == arch.shram_lut_address
    assert accelerator.outstanding_dmas == arch.max_outstanding_dma
    assert 1 << accelerator.address_bits == arch.max_address_offset
    assert accelerator.axi_bytes_per_cycle == (16 if arch.is_ethos_u65_system else 8)
    assert accelerator.product == ("Ethos-U65" if arch.is_ethos_u65_system else "Ethos-U55")
    assert from_vela(accelerator.vela_accelerator) is accelerator


def test_u65_variants():
    u65_256, u65_512 = find_accelerator("ethos-u65-256"), find_accelerator("ethos-u65-512")
    assert (u65_256.total_macs, u65_512.total_macs) == (256, 512) and u65_512.cores == 2
    assert u65_256.shram_bytes == u65_512.shram_bytes == 48 * 1024  # per core
