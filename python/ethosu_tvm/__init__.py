"""ethosu-tvm: compile quantized TFLite models for Cortex-M hosts with an Arm Ethos-U55 NPU."""

__version__ = "0.1.0"


def __getattr__(name: str):
    """Export partition_for_ethosu lazily: importing the package must not pull in TVM."""
    if name == "partition_for_ethosu":
        from .partition import partition_for_ethosu

        return partition_for_ethosu
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
