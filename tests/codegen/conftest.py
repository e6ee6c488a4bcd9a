"""Fixtures of the code generation tests."""
import pytest

from ethosu_tvm.codegen import block_config


@pytest.fixture
def unremembered_block_configs():
    """choose_block_config and find_block_configs remember their answers for an equal operation: a test that
    patches Vela's search must not leave its answers to the tests after it (in the same process)."""
    yield
    block_config._choose_block_config.cache_clear()
    block_config._find_block_configs.cache_clear()
    block_config._SEARCHES.clear()
