"""The kernel registry: a library implementation registered for an op is preferred when it accepts the spec; the
portable kernel builds everything else."""
from __future__ import annotations

import dataclasses

import pytest

from ethosu_tvm.host import LIBRARY_OPS, PORTABLE, HostKernel, KernelRegistry, ScratchBuffer, host_target, spec

X = spec.QuantTensor((1, 10), "int8", scale=0.1, zero_point=3)
SOFTMAX = spec.Softmax(X, spec.QuantTensor((1, 10), "int8", scale=1 / 256, zero_point=-128), beta=1.0)
ADD = spec.Binary("add", X, X, X)
MUL = dataclasses.replace(ADD, kind="mul")
TARGET = host_target("cortex-m55")


class Library:
    """A fake library: accepts int8 specs on cortex-m55 only; its kernel is a named stub with one scratch buffer."""

    name = "fake"

    def __init__(self):
        self.built: list[str] = []

    def accepts(self, op, target) -> bool:
        return target.attrs.get("mcpu") == "cortex-m55"

    def build(self, op, name, target) -> HostKernel:
        self.built.append(name)
        return HostKernel(name, spec.op_name(op), f"void {name}(uint8_t* ctx) {{ (void)ctx; }}\n", (),
                          (ScratchBuffer("ctx", 100, 4),), target)


def test_registered_library_is_preferred_when_it_accepts():
    registry, library = KernelRegistry(PORTABLE), Library()
    registry.register(library, {"softmax", "add"})
    assert registry.select(SOFTMAX, TARGET) is library
    kernel = registry.build(ADD, "net_add_0", TARGET)
    assert library.built == ["net_add_0"] and kernel.scratch == (ScratchBuffer("ctx", 100, 4),)


def test_portable_builds_what_the_library_declines():
    registry, library = KernelRegistry(PORTABLE), Library()
    registry.register(library, {"softmax", "add"})
    assert registry.select(SOFTMAX, host_target("cortex-m4")) is PORTABLE  # not accepted on this target
    assert registry.select(MUL, TARGET) is PORTABLE  # not registered for mul
    kernel = registry.build(SOFTMAX, "net_softmax_0", host_target("cortex-m4"))
    assert library.built == [] and kernel.declaration == \
        "void net_softmax_0(const int8_t* input, int8_t* output, uint8_t* workspace);"
    assert [s.name for s in kernel.scratch] == ["scratch"]


def test_first_registered_wins_and_registration_can_be_undone():
    registry, first, second = KernelRegistry(PORTABLE), Library(), Library()
    with registry.registered(first, {"add"}):
        registry.register(second, {"add"})
        assert registry.select(ADD, TARGET) is first
    assert registry.select(ADD, TARGET) is second
    registry.unregister(second)
    assert registry.select(ADD, TARGET) is PORTABLE


def test_only_library_ops_can_be_registered():
    assert LIBRARY_OPS == {"conv2d", "depthwise_conv2d", "fully_connected", "avg_pool2d", "max_pool2d", "softmax",
                           "add", "mul"}
    with pytest.raises(ValueError, match=r"^fake: can be registered for add, avg_pool2d, conv2d, depthwise_conv2d, "
                                         r"fully_connected, max_pool2d, mul, softmax, got reshape, sub$"):
        KernelRegistry(PORTABLE).register(Library(), {"sub", "reshape"})


def test_a_kernel_without_the_requested_function_is_rejected():
    class Misnamed(Library):
        def build(self, op, name, target):
            return super().build(op, name + "_x", target)

    registry = KernelRegistry(PORTABLE)
    registry.register(Misnamed(), {"add"})
    with pytest.raises(ValueError, match=r"^fake: built no C function 'net_add_0' for add$"):
        registry.build(ADD, "net_add_0", TARGET)


def test_scratch_names_must_be_unique():
    with pytest.raises(ValueError, match=r"^k: scratch buffer names must be unique, got \['a', 'a'\]$"):
        HostKernel("k", "add", "", (), (ScratchBuffer("a", 4), ScratchBuffer("a", 8)), TARGET)


def test_portable_scratch_is_the_kernels_workspace():
    """The portable kernel's intermediates: one 16-byte aligned scratch buffer of exactly its workspace size."""
    rows = dataclasses.replace(SOFTMAX, input=spec.QuantTensor((3, 10), "int8", 0.1, 3),
                               output=spec.QuantTensor((3, 10), "int8", 1 / 256, -128))
    # 3 int32 row maxima and 30 int32 exps, each rounded up to 16 bytes
    assert PORTABLE.build(rows, "s", TARGET).scratch == (ScratchBuffer("scratch", 16 + 128, 16),)
    assert PORTABLE.build(ADD, "a", TARGET).scratch == ()
