"""ethosu-tvm: compile quantized TFLite models for Cortex-M hosts with an Arm Ethos-U55 NPU."""

__version__ = "0.1.0"
