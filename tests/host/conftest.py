"""Shared fixtures for the host kernel tests: one kernel compiler (and its cache) per test session."""
import pytest
from host_harness import KernelCompiler


@pytest.fixture(scope="session")
def compile_kernel(tmp_path_factory) -> KernelCompiler:
    return KernelCompiler(tmp_path_factory.mktemp("host_kernels"))
