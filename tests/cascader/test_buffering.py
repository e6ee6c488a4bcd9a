"""The joint choice of which operations buffer their weights, against hand-computed sequences."""
from ethosu_tvm.cascader import WeightBuffer
from ethosu_tvm.cascader.buffering import Budget, Choice, choose_buffering
from ethosu_tvm.sim.cycles import Timeline

# A depthwise-separable pair as KWS's on ethos-u55-256: the depthwise convolution computes as long reading its
# weights from flash or from a copy, but streaming keeps the flash busy for all but 54 of its cycles; the 1x1
# convolution streams for 9,504 cycles, or reads a copy in 3,782 after a 4,816-cycle DMA.
DEPTHWISE = Choice(4038, 54, WeightBuffer(1328, 1392, 4038))
POINTWISE = Choice(9504, 0, WeightBuffer(4752, 4816, 3782))


def greedy(choices, previous=0):
    """Each operation the cheaper way given the one before it (the choice code generation made before)."""
    total = 0
    for choice in choices:
        buffered = choice.buffer.cycles + max(choice.buffer.transfer - previous, 0)
        if buffered < choice.streamed:
            total, previous = total + buffered, choice.buffer.cycles
        else:
            total, previous = total + choice.streamed, choice.overlap
    return total


def test_buffering_one_operation_makes_the_next_one_pay():
    """Alone, buffering the depthwise convolution costs its 1,392-cycle DMA for nothing; it pays because the 1x1
    convolution's DMA then overlaps 4,038 cycles instead of 54. All four buffer: 5,430 + 4,560 + 4,038 + 4,560."""
    choices = [DEPTHWISE, POINTWISE, DEPTHWISE, POINTWISE]
    decision = choose_buffering(choices)
    assert decision.buffered == (True, True, True, True)
    assert decision.stalls == (1392, 4816 - 4038, 0, 4816 - 4038)
    assert decision.cycles == (4038 + 1392, 3782 + 778, 4038, 3782 + 778)
    assert decision.overlaps == (4038, 3782, 4038, 3782)
    assert decision.total == 18588
    assert greedy(choices) == 4038 + (3782 + 4816 - 54) + 4038 + (3782 + 4816 - 54) == 25164


def test_ties_and_operations_without_a_buffer_stream():
    same = Choice(1000, 0, WeightBuffer(64, 100, 900))  # buffered: 900 + 100 after an operation without overlap
    assert choose_buffering([same]).buffered == (False,)
    assert choose_buffering([Choice(500, 500), same]).buffered == (False, True)  # the DMA hides behind 500
    assert choose_buffering([same], previous=100).buffered == (True,)
    assert choose_buffering([Choice(7, 3)]).buffered == (False,)
    assert choose_buffering([]).buffered == ()


def test_a_budget_keeps_the_fastest_buffers_that_fit():
    """Two 8,000-byte feature maps live at every step (KWS's), 20,752 bytes at most: a 1x1 buffer fits (16,000 +
    4,752) but not beside the depthwise buffer before it, which is live at the same step (16,000 + 1,328 + 4,752 =
    22,080). Buffering the 1x1 convolutions alone is the fastest choice that fits: each DMA overlaps only 54 cycles
    of the streaming depthwise one, 3,782 + 4,762 = 8,544 cycles instead of 9,504."""
    choices = [DEPTHWISE, POINTWISE, DEPTHWISE, POINTWISE]
    budget = Budget(20752, (16000,) * 4, (0, 1, 2, 3))
    decision = choose_buffering(choices, budget=budget)
    assert decision.buffered == (False, True, False, True)
    assert decision.total == 2 * (4038 + 3782 + 4816 - 54) == 25164
    assert choose_buffering(choices).total == 18588  # without the budget all four buffer
    # One byte less and no 1x1 buffer fits; a depthwise buffer would, but it only ever pays for a 1x1 one's DMA.
    assert choose_buffering(choices, budget=Budget(20751, (16000,) * 4, (0, 1, 2, 3))).buffered == (False,) * 4


def test_a_buffer_is_live_at_the_step_before_its_operation():
    """The 1x1 convolution runs at step 2; its buffer is filled during step 1, where 19,000 bytes are live, so it
    does not fit in 20,752 although step 2 has room. With room at step 1 too both buffer, as without a budget:
    the two buffers are never live at the same step."""
    choices = [DEPTHWISE, POINTWISE]
    assert choose_buffering(choices, budget=Budget(20752, (16000, 19000, 16000), (0, 2))).buffered == (False, False)
    assert choose_buffering(choices, budget=Budget(20752, (16000, 16000, 16000), (0, 2))).buffered == (True, True)


def test_everything_streams_when_nothing_fits():
    """More than the limit is live without any buffer: no choice fits, so none is made (everything streams)."""
    decision = choose_buffering([DEPTHWISE, POINTWISE], budget=Budget(20000, (16000, 21000), (0, 1)))
    assert decision.buffered == (False, False) and decision.total == 4038 + 9504


def test_contention_on_the_flash_port_flips_the_choice():
    """Operation B streams its weights in 5,000 cycles, or reads a copy in 3,500 after a DMA of 2,000 bytes (2,064
    cycles at 1 byte/cycle with flash's latency) issued under operation A, which computes for 4,000 cycles. The DMA
    shares the flash port with A's own reads: if A reads 3,000 weight bytes from flash it is done at (2,000 + 3,000)
    / 1 + 64 = 5,064, B waits 1,064 and buffering pays (4,564 < 5,000); if A reads 3,600, B would wait 1,664 and it
    streams. A's overlap is what code generation's cost gives it (`OperationCost.overlap`: its cycles less those
    reading flash), and the simulator's timeline gives the same cycles each way."""
    stream = Choice(5000, 0, WeightBuffer(2000, 2064, 3500))
    for flash_bytes, buffered, total in ((0, True, 4000 + 3500), (3000, True, 4000 + 3500 + 1064),
                                         (3600, False, 4000 + 5000)):
        decision = choose_buffering([Choice(4000, 4000 - flash_bytes), stream])
        assert (decision.buffered, decision.total) == ((False, buffered), total)
        timeline = Timeline()
        timeline.kernel(4000, constants=flash_bytes)
        if buffered:
            timeline.dma(2064, from_constants=True)
            timeline.dma_wait(0)
            timeline.kernel(3500)
        else:
            timeline.kernel(5000, constants=5000)
        assert timeline.elapsed == total


def test_streaming_frugally_lets_the_next_transfer_run():
    """KWS's first convolution on ethos-u55-256 has no operation before it for a DMA to overlap, so it streams: with
    the block config of its fewest cycles in 13,344, all of them reading flash, or frugally (fewer OFM blocks, fewer
    weight fetches) in 14,041, of which 8,896 read flash. Frugally, the depthwise convolution's 1,392-cycle DMA runs
    under it: 695 cycles fewer in all. Before an operation that streams too, frugality buys nothing."""
    first = Choice(13344, 0, None, (14041, 14041 - 8896))
    decision = choose_buffering([first, DEPTHWISE, POINTWISE, DEPTHWISE, POINTWISE])
    assert decision.frugal == (True, False, False, False, False)
    assert decision.buffered == (False, True, True, True, True)
    assert decision.stalls == (0, 0, 778, 0, 778)
    assert decision.total == 14041 + 18588 - 1392 == 13344 + 18588 - 695
    assert choose_buffering([first, Choice(100, 100)]).frugal == (False, False)
