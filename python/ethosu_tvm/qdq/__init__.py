"""Reading the QDQ Relax form of TVM's TFLite frontend: pattern builders, matches by role, constants and
quantization parameters. Partitioning, NPU legalization and the host side all read the graph through this."""
