"""Host (Cortex-M) kernels: integer TIR reproducing TFLite reference kernels, emitted as plain C."""
