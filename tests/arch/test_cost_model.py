"""The cost model on hand-computed cases: the weight and scale streams are fetched again for every OFM block in
height x width, the IFM window for every OFM block (and depth slice, and sub-kernel), and each memory moves its
bytes at the bandwidth of the system config and memory mode."""
import numpy as np
import pytest
from ethosu.vela import api as vapi
from hypothesis import given, settings
from hypothesis import strategies as st

from ethosu_tvm.arch import ACCELERATORS, find_accelerator
from ethosu_tvm.arch.cycles import (CostedFeatureMap, Traffic, _compute_cycles, block_cost, block_traffic,
                                    compute_cycles, constants_cycles, dma_cycles, least_compute_cycles, memory_cycles)
from ethosu_tvm.arch.operation import CONV, DEPTHWISE, ELEMENTWISE, POOL, Kernel
from ethosu_tvm.arch.system import SYSTEM_CONFIGS, System, find_system
from ethosu_tvm.codegen.block_config import choose_block_config, find_block_configs
from ethosu_tvm.codegen.operation_cost import estimate_cycles

HIGH_END, DEEP = (System(SYSTEM_CONFIGS[name]) for name in ("Ethos_U55_High_End_Embedded", "Ethos_U55_Deep_Embedded"))
SRAM_ONLY = System(SYSTEM_CONFIGS["Ethos_U55_High_End_Embedded"], "Sram_Only")
K3 = Kernel(3, 3, 1, 1, 1, 1, False)
U55_128 = vapi.NpuAccelerator.Ethos_U55_128


def fm(shape, region=1, bits=8, brick=False):
    return CostedFeatureMap(tuple(shape), bits, region, brick)


# ResNet-8's 32x32x16 3x3 convolution (SAME padding): 2,720 encoded weight bytes, 160 bytes of scales in flash.
RESNET_CONV = dict(kind=CONV, ifm=fm((32, 32, 16)), ifm2=None, ofm=fm((32, 32, 16)), kernel=K3,
                   streams=((0, 2720), (0, 160)))


@pytest.mark.parametrize("block, blocks_hw, ifm_rows, ifm_columns", [
    ((4, 4, 16), 64, 8 * 6, 8 * 6),  # 8 blocks down and across, each reading a 6 x 6 window
    ((8, 8, 16), 16, 4 * 10, 4 * 10),
    ((16, 32, 16), 2, 2 * 18, 32),  # one 34-column window, cut to the IFM's 32 columns
    ((32, 32, 16), 1, 32, 32),
])
def test_convolution_fetches_weights_per_block(block, blocks_hw, ifm_rows, ifm_columns):
    traffic = block_traffic(block=block, **RESNET_CONV)
    ifm_bytes = ifm_rows * ifm_columns * 16
    assert traffic.read == {0: 2880 * blocks_hw, 1: ifm_bytes}
    assert traffic.written == {1: 32 * 32 * 16}
    # Flash (1 byte/cycle) and SRAM (8 bytes/cycle) are on separate AXI ports: the busier one counts.
    sram = (ifm_bytes + 32 * 32 * 16) / 8
    assert memory_cycles(HIGH_END, traffic) == max(2880 * blocks_hw, sram)
    assert memory_cycles(DEEP, traffic) == max(2 * 2880 * blocks_hw, sram)  # 0.5 byte/cycle
    assert memory_cycles(SRAM_ONLY, traffic) == sram + 2880 * blocks_hw / 8  # one port carries everything


def test_depth_slices_sub_kernels_and_depthwise():
    # 48 output channels in blocks of 16: each depth slice reads the whole IFM window again; the weight stream
    # (all slices) is still read once per block in height x width.
    conv = block_traffic(CONV, fm((8, 8, 32)), None, fm((8, 8, 48)), Kernel(1, 1, 1, 1, 1, 1, False), (4, 8, 16),
                         ((0, 1536), (0, 480)))
    assert conv.read == {0: 2016 * 2, 1: 8 * 8 * 32 * 3}
    # KWS's first convolution: a 10x4 kernel is two sub-kernels (at most 8x8 taps), each reading the IFM again.
    kws = block_traffic(CONV, fm((49, 10, 1)), None, fm((25, 5, 64)), Kernel(10, 4, 2, 2, 1, 1, True), (25, 5, 64),
                        ((0, 2600), (0, 640)))
    assert kws.read == {0: 3240, 1: 49 * 10 * 1 * 2}
    # Depthwise: no depth slices (each block reads its own channels), weights once per block in height x width.
    depthwise = block_traffic(DEPTHWISE, fm((16, 16, 32)), None, fm((16, 16, 32)), K3, (8, 16, 16),
                              ((0, 512), (0, 320)))
    assert depthwise.read == {0: 832 * 2, 1: (10 + 10) * 16 * 32}
    # NHCWB16 feature maps are stored in whole bricks of 16 channels.
    brick = block_traffic(DEPTHWISE, fm((4, 4, 20), brick=True), None, fm((4, 4, 20), brick=True),
                          Kernel(1, 1, 1, 1, 1, 1, False), (4, 4, 32), ((0, 64), (0, 200)))
    assert brick.read == {0: 264, 1: 4 * 4 * 32} and brick.written == {1: 4 * 4 * 32}


def test_elementwise_reads_each_operand_per_output_element():
    unit = Kernel(1, 1, 1, 1, 1, 1, False)
    broadcast = block_traffic(ELEMENTWISE, fm((8, 8, 16)), fm((1, 1, 16), region=0), fm((8, 8, 16), bits=16), unit,
                              (8, 8, 16))
    assert broadcast.read == {1: 1024, 0: 1024} and broadcast.written == {1: 2048}
    scalar = block_traffic(ELEMENTWISE, fm((8, 8, 16)), None, fm((8, 8, 16)), unit, (8, 8, 16), lut_bytes=256)
    assert scalar.read == {1: 1024, "shram": 256}


def test_dma_cycles():
    assert dma_cycles(HIGH_END, 0, 1, 1000) == 1000 + 64  # flash at 1 byte/cycle plus its read latency
    assert dma_cycles(DEEP, 0, 1, 1000) == 2000 + 64
    assert dma_cycles(SRAM_ONLY, 0, 1, 1000) == 125 + 32
    assert dma_cycles(HIGH_END, 1, "shram", 256) == 32 + 32


def test_block_cost_is_compute_or_memory():
    accelerator = find_accelerator("ethos-u55-128")
    args = dict(accelerator=accelerator, kind=CONV, mode="", fused=None, ifm=RESNET_CONV["ifm"], ifm2=None,
                ifm2_scalar=False, ofm=RESNET_CONV["ofm"], kernel=K3, acc_bits=32, streams=RESNET_CONV["streams"])
    small = block_cost(HIGH_END, block=(4, 4, 16), **args)
    assert small.memory_cycles == 2880 * 64 > small.compute_cycles
    assert small.cycles == 2880 * 64
    in_sram = block_cost(SRAM_ONLY, block=(4, 4, 16), **args)
    assert in_sram.compute_cycles == small.compute_cycles and in_sram.memory_cycles == (2880 * 64 + 36864 + 16384) / 8
    assert in_sram.cycles == max(in_sram.compute_cycles, int(np.ceil(in_sram.memory_cycles)))


def test_least_compute_cycles_counts_the_dpu_work_per_block():
    """ResNet-8's 3x3 convolution in 8x8x16 blocks on ethos-u55-128 (micro blocks of 2 x 1 x 8): each of the 16
    blocks takes 9 kernel steps over 32 micro blocks (4 cycles each) and 2 micro-block depths, 16 x 9 x 128 x 2 =
    36,864 cycles; Vela's 37,748 add what the output takes past the DPU work. One-row OFMs and pooling get no
    bound."""
    accelerator = find_accelerator("ethos-u55-128")
    ifm, ofm = RESNET_CONV["ifm"], RESNET_CONV["ofm"]
    assert least_compute_cycles(accelerator, CONV, None, ifm, ofm, K3, (8, 8, 16), 32) == 16 * 9 * 128 * 2 == 36864
    assert compute_cycles(accelerator, CONV, "", None, ifm, None, ofm, K3, (8, 8, 16), 32, 0) == 37748
    # A 1x1 depthwise convolution's output outlasts its DPU work: 0.5 cycles per element (0.75 accumulating in
    # 40 bits) for the 1,024 elements of each block.
    k1 = Kernel(1, 1, 1, 1, 1, 1, False)
    assert least_compute_cycles(accelerator, DEPTHWISE, None, ofm, ofm, k1, (8, 8, 16), 32) == 16 * 512
    assert least_compute_cycles(accelerator, DEPTHWISE, None, ofm, ofm, k1, (8, 8, 16), 40) == 16 * 768
    assert least_compute_cycles(accelerator, CONV, None, ifm, fm((1, 32, 16)), K3, (8, 8, 16), 32) == 0
    assert least_compute_cycles(accelerator, POOL, None, ifm, ofm, K3, (8, 8, 16), 32) == 0


def resnet_conv_operation() -> vapi.NpuConv2DOperation:
    """ResNet-8's 32x32x16 3x3 convolution as a Vela API operation, weights uncompressed (not yet encoded)."""
    op = vapi.NpuConv2DOperation()
    for name in ("ifm", "ofm"):
        feature_map = vapi.NpuFeatureMap()
        feature_map.data_type, feature_map.region = vapi.NpuDataType.INT8, 1
        feature_map.shape = vapi.NpuShape3D(32, 32, 16)
        feature_map.quantization = vapi.NpuQuantization(scale_f32=0.1, zero_point=0)
        feature_map.layout = vapi.NpuLayout.NHWC
        setattr(op, name, feature_map)
    op.kernel = vapi.NpuKernel(3, 3)
    op.padding = vapi.NpuPadding(top=1, left=1, bottom=1, right=1)
    op.block_traversal = vapi.NpuBlockTraversal.DEPTH_FIRST
    op.weights = [vapi.NpuAddressRange(0, 0, 0)]
    op.biases = [vapi.NpuAddressRange(0, 0, 0)]
    return op


def test_estimate_counts_weight_bytes_per_block_and_block_choice_follows():
    op = resnet_conv_operation()
    configs = find_block_configs(op, U55_128)
    weights = 3 * 3 * 16 * 16 + 160  # uncompressed weights and 10 bytes of scale/bias per channel
    for block in configs:
        cost = estimate_cycles(op, U55_128, block)
        blocks_hw = -(-32 // block.height) * -(-32 // block.width)
        assert cost.weight_bytes == weights and cost.weight_bytes_fetched == weights * blocks_hw
        assert cost.memory_cycles >= weights * blocks_hw  # flash: 1 byte/cycle
    # In flash, weight re-reads dominate: the chosen block is one of the fewest blocks in height x width that
    # SHRAM allows. With constants in SRAM the re-reads are cheap and compute decides.
    fewest = min(-(-32 // b.height) * -(-32 // b.width) for b in configs)
    chosen = choose_block_config(op, U55_128)
    assert -(-32 // chosen.height) * -(-32 // chosen.width) == fewest
    in_sram = choose_block_config(op, U55_128, system=SRAM_ONLY)
    assert estimate_cycles(op, U55_128, in_sram, SRAM_ONLY).cycles < estimate_cycles(op, U55_128, chosen,
                                                                                      SRAM_ONLY).cycles
    assert all(estimate_cycles(op, U55_128, in_sram, SRAM_ONLY).cycles <= estimate_cycles(op, U55_128, b,
                                                                                         SRAM_ONLY).cycles
               for b in configs)


def test_system_configs():
    assert find_system() == HIGH_END and HIGH_END.config.core_clock == 500e6
    assert HIGH_END.bytes_per_cycle(0) == 1 and HIGH_END.bytes_per_cycle(1) == 8
    assert DEEP.config.core_clock == 200e6 and DEEP.bytes_per_cycle(0) == 0.5
    assert SRAM_ONLY.memory(0) == SRAM_ONLY.memory(1) == SRAM_ONLY.memory("shram") == HIGH_END.memory(1)
    with pytest.raises(ValueError, match="^unknown system config 'X'; expected one of Ethos_U55_High_End_Embedded, "
                                         "Ethos_U55_Deep_Embedded, Ethos_U65_Embedded, Ethos_U65_Mid_End, "
                                         "Ethos_U65_High_End, Ethos_U65_Client_Server$"):
        find_system("X")
    with pytest.raises(ValueError, match="^unknown memory mode 'Dedicated'; expected one of Shared_Sram, "
                                         "Sram_Only, Dedicated_Sram$"):
        find_system(memory_mode="Dedicated")
    with pytest.raises(ValueError, match="^memory mode Dedicated_Sram keeps feature maps in DRAM; "
                                         "Ethos_U65_Embedded has OffChipFlash on its second AXI port$"):
        find_system("Ethos_U65_Embedded", "Dedicated_Sram")


@pytest.mark.parametrize("config, clock, dram", [("Ethos_U65_Mid_End", 500e6, 0.46875),
                                                 ("Ethos_U65_High_End", 1e9, 0.234375),
                                                 ("Ethos_U65_Client_Server", 1e9, 0.75)])
def test_u65_systems(config, clock, dram):
    """Vela.ini's U65 systems have a DRAM on AXI1; Dedicated_Sram moves the feature maps there and keeps only the
    fast scratch (region 2) and SHRAM in SRAM."""
    shared, dedicated = find_system(config, "Shared_Sram"), find_system(config, "Dedicated_Sram")
    assert shared.config.core_clock == clock and shared.config.axi1.clock_scale == dram
    assert shared.config.axi1.read_latency == 500 and shared.config.axi1.write_latency == 250
    assert [shared.memory(r).name for r in (0, 1, 2, 3, "shram")] == ["Dram", "Sram", "Sram", "Sram", "Sram"]
    assert [dedicated.memory(r).name for r in (0, 1, 2, 3, "shram")] == ["Dram", "Dram", "Sram", "Dram", "Sram"]


@pytest.mark.parametrize("mode, cycles", [("Dedicated_Sram", 200 + 200), ("Shared_Sram", 200), ("Sram_Only", 47)])
def test_the_constants_port_carries_feature_maps_in_its_dram(mode, cycles):
    """A weight DMA from region 0 shares that memory's one port with what an operation reads there: its weights, and
    under Dedicated_Sram its feature maps in the same DRAM (3.75 bytes/cycle on Ethos_U65_High_End, ethos-u65-256);
    the fast scratch (region 2) is SRAM, on the other port. Under Sram_Only region 0 is the SRAM (16 bytes/cycle) and
    only the constants count, as before."""
    system = find_system("Ethos_U65_High_End", mode).for_accelerator(find_accelerator("ethos-u65-256"))
    traffic = Traffic({0: 750, 1: 375, 2: 1600}, {1: 375, 2: 160})
    assert constants_cycles(system, traffic) == cycles


@settings(max_examples=300, deadline=None)
@given(accelerator=st.sampled_from(sorted(ACCELERATORS)), kind=st.sampled_from([
    (CONV, ""), (DEPTHWISE, ""), (POOL, "MAX"), (POOL, "AVERAGE"), (POOL, "REDUCE_SUM")]),
       ofm_h=st.integers(1, 70), ofm_w=st.integers(1, 40), depth=st.integers(1, 80), ifm_cut=st.integers(0, 4),
       kernel=st.tuples(st.integers(1, 9), st.integers(1, 3), st.integers(1, 2), st.integers(1, 2),
                        st.integers(1, 2), st.booleans()),
       block=st.tuples(st.integers(1, 16), st.integers(1, 16), st.integers(1, 8)), bits=st.sampled_from([8, 16]),
       brick=st.booleans(), acc_bits=st.sampled_from([32, 40]), weights_region=st.sampled_from([None, 0, 1]),
       fused=st.sampled_from([None, "LUT", "TANH"]))
def test_compute_cycles_memoised_by_what_vela_reads(accelerator, kind, ofm_h, ofm_w, depth, ifm_cut, kernel, block,
                                                   bits, brick, acc_bits, weights_region, fused):
    """The estimate memoised by the clamped heights (`compute_cycles`) is Vela's estimate of the operation as it
    is, for OFMs of every height against blocks of every height (stripes of one primitive); the cheap bound that
    block-config ranking prunes by (`least_compute_cycles`) is never above it."""
    height, width, stride_y, stride_x, dilation, part_kernel = kernel
    kernel = Kernel(height, width, stride_y, stride_x, dilation, 1, part_kernel and kind[0] == CONV)
    accelerator = find_accelerator(accelerator)
    block = (2 * block[0], 2 * block[1], accelerator.ofm_ublock_depth * block[2])
    ifm_h = max((ofm_h - 1) * stride_y + kernel.extent_h - ifm_cut, 1)
    ifm_w = (ofm_w - 1) * stride_x + kernel.extent_w
    ifm, ofm = fm((ifm_h, ifm_w, depth), bits=bits, brick=brick), fm((ofm_h, ofm_w, depth), brick=brick)
    args = (accelerator, *kind, fused, ifm, None, ofm, kernel, block, acc_bits, weights_region)
    assert compute_cycles(*args) == _compute_cycles.__wrapped__(*args)
    assert least_compute_cycles(accelerator, kind[0], fused, ifm, ofm, kernel, block, acc_bits) <= compute_cycles(*args)
