"""The stream timeline's one flash port, against hand-worked numbers (Ethos_U55_High_End_Embedded, Shared_Sram:
the flash at 1 byte/cycle with a read latency of 64 cycles, SRAM at 8 bytes/cycle with 32); and when one timeline
ends no sooner than another whatever follows (`Timeline.no_sooner_than`)."""
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ethosu_tvm.arch.system import DEFAULT_SYSTEM
from ethosu_tvm.sim.cycles import Timeline

FLASH, SRAM = 0, 1  # the constants' region and the scratch


def transfer(nbytes: int, source: int = FLASH) -> int:
    """A DMA's cycles into SRAM, as the simulator's cycle model computes them."""
    from ethosu_tvm.arch.cycles import dma_cycles

    return math.ceil(dma_cycles(DEFAULT_SYSTEM, source, SRAM, nbytes))


def test_the_system_the_numbers_assume():
    assert DEFAULT_SYSTEM.bytes_per_cycle(FLASH) == 1
    assert transfer(1000) == 1000 + 64 and transfer(8000, SRAM) == 1000 + 32


def test_a_dma_under_an_operation_reading_flash_waits_for_its_reads():
    """The operation computes for 10,000 cycles and reads M = 3,000 weight bytes from flash; the DMA of N = 1,000
    bytes issued after it shares the port: the span they overlap in ends at (N + M) / B + latency = 4,064 cycles.
    The operation itself is not slowed."""
    timeline = Timeline()
    assert timeline.kernel(10000, constants=3000) == 10000
    assert timeline.dma(transfer(1000), from_constants=True) == 3000 + 1000 + 64
    assert timeline.elapsed == 10000


def test_an_operation_reading_flash_under_a_dma_waits_for_the_transfer():
    """A DMA of N = 5,000 bytes from flash is running when an operation that reads M = 3,000 bytes from flash
    starts: its reads get the port after the transfer, so it ends at (N + M) / B + latency = 8,064 cycles rather
    than after its own 4,000. Without flash reads, or beside a transfer from SRAM, it keeps its 4,000."""
    timeline = Timeline()
    assert timeline.dma(transfer(5000), from_constants=True) == 5064
    assert timeline.kernel(4000, constants=3000) == 5000 + 3000 + 64
    assert timeline.elapsed == 8064

    timeline = Timeline()
    timeline.dma(transfer(5000), from_constants=True)
    assert timeline.kernel(4000) == 4000

    timeline = Timeline()
    assert timeline.dma(transfer(40000, SRAM), from_constants=False) == 5032
    assert timeline.kernel(4000, constants=3000) == 4000


def test_the_port_serves_its_transfers_in_the_order_they_begin():
    """Operation A (2,000 cycles, all of them reading flash) runs; the DMA for operation B's weights (1,000 bytes)
    is issued after A and gets the port when A's reads end; B waits for it (DMA_WAIT) and reads SRAM for 1,500
    cycles; operation C starts under the next transfer (3,000 bytes, issued after B) and reads 500 bytes of flash
    after it: 2,000 + 1,064, then B's 1,500, then C's reads behind a transfer that began with B."""
    timeline = Timeline()
    assert timeline.kernel(2000, constants=2000) == 2000
    assert timeline.dma(transfer(1000), from_constants=True) == 3064
    timeline.dma_wait(0)
    assert timeline.kernel(1500) == 4564
    assert timeline.dma(transfer(3000), from_constants=True) == 3064 + 3064
    assert timeline.kernel(600, constants=500) == 6128 + 500
    assert timeline.elapsed == 6628


_command = st.one_of(st.tuples(st.just("dma"), st.integers(0, 5_000), st.booleans()),
                     st.tuples(st.just("kernel"), st.integers(0, 5_000), st.integers(0, 5_000)),
                     st.tuples(st.just("dma_wait"), st.integers(0, 2)), st.tuples(st.just("kernel_wait"),
                                                                                  st.integers(0, 2)))


def _played(commands, timeline=None) -> Timeline:
    timeline = timeline or Timeline()
    for name, *args in commands:
        getattr(timeline, name)(*args)
    return timeline


@st.composite
def _two_histories(draw):
    """Commands, and the same with the cycles of one of them changed (so that some times are later, others not)."""
    first = draw(st.lists(_command, min_size=1, max_size=10))
    index = draw(st.integers(0, len(first) - 1))
    name, value, *more = first[index]
    changed = (name, draw(st.integers(0, 5_000)), *more) if name in ("dma", "kernel") else first[index]
    return first, first[:index] + [changed] + first[index + 1:]


@given(_two_histories(), st.lists(_command, max_size=8))
@settings(max_examples=500)
def test_a_timeline_no_sooner_than_another_ends_no_sooner_after_the_same_commands(histories, rest):
    """`no_sooner_than(other, outstanding)` (the prefetch search gives up on trial walks by it) holds only where
    whatever follows, waiting with at most `outstanding` commands running, ends no sooner than after `other`."""
    outstanding = max([args[0] for name, *args in rest if name.endswith("_wait")], default=0)
    one, other = (_played(commands) for commands in histories)
    if one.no_sooner_than(other, outstanding):
        assert _played(rest, one.copy()).elapsed >= _played(rest, other.copy()).elapsed
    assert one.no_sooner_than(one.copy(), outstanding)


@pytest.mark.parametrize("one, other, rest, outstanding", [
    # a DMA starts after the operation before the last one: 100 against 150
    ([("kernel", 100, 0), ("kernel", 100, 0)], [("kernel", 150, 0), ("kernel", 50, 0)], [("dma", 1000, False)], 0),
    # a transfer from flash waits for the port, which the operations' weight reads hold until 10 against 50
    ([("kernel", 100, 10)], [("kernel", 100, 50)], [("dma", 200, True)], 0),
    # a wait with one DMA still running waits for the one before the last: 100 against 200
    ([("dma", 100, False), ("dma", 200, False)], [("dma", 200, False), ("dma", 100, False)],
     [("dma_wait", 1), ("kernel", 500, 0)], 1),
])
def test_a_timeline_earlier_where_the_commands_after_look_is_not_no_sooner(one, other, rest, outstanding):
    """Each time `no_sooner_than` compares matters: two timelines that end at the same time but differ in one of
    them end apart after the same commands."""
    one, other = _played(one), _played(other)
    assert one.elapsed == other.elapsed
    assert _played(rest, one.copy()).elapsed < _played(rest, other.copy()).elapsed
    assert not one.no_sooner_than(other, outstanding) and other.no_sooner_than(one, outstanding)
