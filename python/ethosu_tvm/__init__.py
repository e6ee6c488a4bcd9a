"""ethosu-tvm: compile quantized TFLite models for Cortex-M hosts with an Arm Ethos-U55 NPU.

    import ethosu_tvm
    mod = ethosu_tvm.from_tflite("model.tflite")
    module = ethosu_tvm.build(mod, target="ethos-u -accelerator-config=ethos-u55-128,c")
    module.export_model_library_format("module.tar")
"""

__version__ = "0.1.0"

# Exported lazily: `import ethosu_tvm` (and `tvmc --help`) must not pull in TVM.
_EXPORTS = {
    "build": ("build_module", "build"),
    "cascader_frontiers": ("build_module", "cascader_frontiers"),
    "from_tflite": ("frontend.importer", "from_tflite"),
    "partition_for_ethosu": ("partition", "partition_for_ethosu"),
}


def __getattr__(name: str):
    if name in _EXPORTS:
        import importlib

        module, attribute = _EXPORTS[name]
        return getattr(importlib.import_module(f"{__name__}.{module}"), attribute)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
