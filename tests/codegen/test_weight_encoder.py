"""Vela's weight encoder on two cores (`codegen.weight_encoder`): the helper process's streams equal this process's
whoever encodes what, a helper that dies or never starts leaves its work to this process, and it ends with it."""
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from ethosu.vela import api as vapi
from hypothesis import given, settings
from hypothesis import strategies as st

from ethosu_tvm.arch import ACCELERATORS
from ethosu_tvm.codegen import weight_encoder

TRAVERSALS = (vapi.NpuBlockTraversal.DEPTH_FIRST, vapi.NpuBlockTraversal.PART_KERNEL_FIRST)


def _request(seed: int, channels: int = 64, kernel: tuple = (3, 3), depth_in: int = 64, block_depth: int = 16,
             depthwise: bool = False, traversal=TRAVERSALS[0], accelerator: str = "ethos-u55-128", bits: int = 8,
             dilation: tuple = (1, 1)) -> tuple:
    """The arguments of `npu_encode_weights` for random zero-point-centred weights."""
    weights = np.random.default_rng(seed).integers(-255, 256, (channels, *kernel, 1 if depthwise else depth_in))
    return (ACCELERATORS[accelerator].vela_accelerator, weights.astype(np.int16), dilation, bits, block_depth,
            depthwise, vapi.NpuBlockTraversal.DEPTH_FIRST if depthwise else traversal)


def _in_process(requests: list[tuple]) -> list[bytes]:
    return [bytes(vapi.npu_encode_weights(*request)) for request in requests]


def _waiting_for(condition):
    """`weight_encoder.encode` that first waits (at most 30 s) until `condition()` holds for the helper."""
    encode = weight_encoder.encode

    def patched(request):
        deadline = time.monotonic() + 30
        while not condition(weight_encoder._helper) and time.monotonic() < deadline:
            time.sleep(0.005)
        return encode(request)

    return patched


def _wait_until_ready(helper):
    weight_encoder.start()
    deadline = time.monotonic() + 30
    while not helper._ready and time.monotonic() < deadline:
        time.sleep(0.01)


@pytest.fixture
def helper(monkeypatch):
    """The helper, taking every batch of two streams or more, however busy the machine."""
    monkeypatch.setattr(weight_encoder, "MIN_WEIGHTS", 0)
    monkeypatch.setattr(weight_encoder, "_core_free", lambda: True)
    yield weight_encoder._helper
    weight_encoder._helper.close()


def test_helper_encodes_the_front_of_the_batch(helper, monkeypatch):
    requests = [_request(seed) for seed in range(4)]
    monkeypatch.setattr(weight_encoder, "encode", _waiting_for(lambda h: h._done))
    assert weight_encoder.encode_all(requests) == _in_process(requests)


def test_this_process_encodes_only_while_the_helper_has_a_request(helper, monkeypatch):
    """The encoder holds the GIL: a request this process encodes before the thread feeding the helper has sent
    one would leave the helper idle until it is done."""
    _wait_until_ready(helper)
    busy = []
    encode = weight_encoder.encode

    def watched(request):
        busy.append(helper._ready and helper._running is not None)
        return encode(request)

    monkeypatch.setattr(weight_encoder, "encode", watched)
    requests = [_request(seed, channels=128, depth_in=128) for seed in range(6)]
    assert weight_encoder.encode_all(requests) == _in_process(requests)
    assert busy and all(busy)


@settings(max_examples=30, deadline=None)
@given(streams=st.lists(st.tuples(st.integers(1, 40), st.sampled_from([(1, 1), (3, 3), (1, 3), (5, 2)]),
                                  st.integers(1, 40), st.sampled_from([8, 16, 32, 48, 64]), st.booleans(),
                                  st.sampled_from(TRAVERSALS), st.sampled_from([8, 16]),
                                  st.sampled_from([(1, 1), (2, 2), (1, 2)])), min_size=2, max_size=6),
       accelerator=st.sampled_from(tuple(ACCELERATORS)), seed=st.integers(0, 1000))
def test_helper_streams_equal_in_process_ones(streams, accelerator, seed):
    requests = [_request(seed + i, *stream[:6], accelerator, *stream[6:]) for i, stream in enumerate(streams)]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(weight_encoder, "MIN_WEIGHTS", 0)
        patch.setattr(weight_encoder, "_core_free", lambda: True)
        assert weight_encoder.encode_all(requests) == _in_process(requests)


def test_helper_killed_mid_batch_leaves_its_stream_to_this_process(helper, monkeypatch):
    requests = [_request(seed, channels=256, depth_in=256) for seed in range(3)]
    weight_encoder.start()
    process = helper._process

    def killed(helper):
        if process.poll() is None and helper._running is not None:
            process.kill()
            process.wait()
        return process.poll() is not None

    monkeypatch.setattr(weight_encoder, "encode", _waiting_for(killed))
    assert weight_encoder.encode_all(requests) == _in_process(requests)
    assert process.poll() is not None and helper._process is not process
    monkeypatch.undo()
    monkeypatch.setattr(weight_encoder, "MIN_WEIGHTS", 0)
    monkeypatch.setattr(weight_encoder, "_core_free", lambda: True)
    again = [_request(seed) for seed in range(3, 6)]
    assert weight_encoder.encode_all(again) == _in_process(again)  # with a fresh helper
    assert helper._process is not None and helper._process is not process


def test_helper_that_cannot_start_leaves_the_batch_to_this_process(helper, monkeypatch):
    monkeypatch.setattr(weight_encoder, "_CHILD", "import sys; sys.exit(3)")
    requests = [_request(seed) for seed in range(3)]
    assert weight_encoder.encode_all(requests) == _in_process(requests)


def test_forked_child_encodes_without_its_parents_helper(helper):
    """A forked child (the test utilities probe runtimes so) has no thread feeding its parent's helper."""
    requests = [_request(seed) for seed in range(3)]
    _wait_until_ready(helper)
    pid = os.fork()
    if pid == 0:
        signal.alarm(60)  # a child waiting for its parent's thread is killed instead of hanging the test
        os._exit(0 if weight_encoder.encode_all(requests) == _in_process(requests) else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert weight_encoder.encode_all(requests) == _in_process(requests)  # the parent's helper still serves


def test_small_batches_stay_in_process():
    weight_encoder._helper.close()
    requests = [_request(seed, channels=8, depth_in=8) for seed in range(2)]
    assert weight_encoder.encode_all(requests) == _in_process(requests)
    assert weight_encoder._helper._process is None


def test_busy_machine_keeps_the_batch_in_process(monkeypatch):
    weight_encoder._helper.close()
    monkeypatch.setattr(weight_encoder, "MIN_WEIGHTS", 0)
    monkeypatch.setattr(os, "getloadavg", lambda: (len(os.sched_getaffinity(0)) - 0.5, 0.0, 0.0))
    requests = [_request(seed) for seed in range(2)]
    assert weight_encoder.encode_all(requests) == _in_process(requests)
    assert weight_encoder._helper._process is None


def test_helper_ends_with_a_process_that_exits_by_os_exit():
    # the module alone, under its own name (its package's imports skipped): no TVM to import
    script = ("import importlib.util, os, sys; "
              "spec = importlib.util.spec_from_file_location('ethosu_tvm.codegen.weight_encoder', sys.argv[1]); "
              "w = importlib.util.module_from_spec(spec); spec.loader.exec_module(w); w._helper.start(); "
              "print(w._helper._process.pid, flush=True); os._exit(0)")
    pid = int(subprocess.run([sys.executable, "-c", script, weight_encoder.__file__], capture_output=True, text=True,
                             check=True).stdout)
    deadline = time.monotonic() + 30
    while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not os.path.exists(f"/proc/{pid}")
