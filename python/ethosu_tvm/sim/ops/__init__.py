"""Execution of the NPU operations: convolutions, pooling, elementwise and DMA."""
