"""benchmarks/vela_layers.py: our cost model on Vela's own streams, layer by layer against Vela's per-layer CSV."""
from __future__ import annotations

import importlib.util
import statistics
import sys
from pathlib import Path

from ethosu_tvm.testing import shared_models_dir

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "vela_layers.py"
DEFAULTS = ("Ethos_U55_High_End_Embedded", "Shared_Sram")


def load():
    spec = importlib.util.spec_from_file_location("benchmarks_vela_layers", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up by name
    spec.loader.exec_module(module)
    return module


def test_kws_layers_within_ten_percent_of_vela():
    vela_layers = load()
    layers, ours, vela = vela_layers.measure(shared_models_dir() / "mlperf_tiny_kws_dscnn_int8.tflite",
                                             "ethos-u55-128", *DEFAULTS)
    assert len(layers) == 39  # Vela's layers with cycles: the fused ReLUs and the LUT are not among them
    # Vela streams the first convolution in two OFM depth slices (16 + 48 channels): one layer, two operations.
    assert [op.ofm_shape for op in layers[0].ops] == [(25, 5, 16), (25, 5, 48)]
    assert layers[0].macs == sum(op.macs for op in layers[0].ops) == 320000
    assert 0.9 <= statistics.median(layer.ratio for layer in layers) <= 1.1
    assert sum(layer.cycles for layer in layers) <= ours and 0.9 <= ours / vela <= 1.1


def test_ad_layers_equal_vela():
    """The autoencoder's fully connected layers stream their weights from flash: both models count the same bytes
    at 1 byte/cycle."""
    vela_layers = load()
    layers, ours, vela = vela_layers.measure(shared_models_dir() / "mlperf_tiny_ad_fc_autoencoder_int8.tflite",
                                             "ethos-u55-128", *DEFAULTS)
    assert [layer.cycles for layer in layers] == [layer.vela_cycles for layer in layers]
    assert ours == vela == 201184


def test_mobilenet_v2_224_layers_line_up():
    """Vela's MobileNetV2-224 stream moves data and slices depthwise convolutions: its NCHW input's transpose is two
    layers of no MACs, one pooling operation and then one per row (224), and one 576-channel depthwise convolution
    runs as two slices (112 + 464 channels) on IFM slices as deep. Every operation finds its layer, and the
    residual ADDs and the fully connected layer (flash-bound) cost what Vela's own model says."""
    vela_layers = load()
    layers, ours, vela = vela_layers.measure(shared_models_dir() / "tflm_xtensa_mobilenet_v2_224_nchw_int8.tflite",
                                             "ethos-u55-128", *DEFAULTS)
    assert len(layers) == 67
    assert [(layer.operator, len(layer.ops)) for layer in layers[:3]] == [("Transpose", 1), ("Transpose", 224),
                                                                          ("Conv2D", 1)]
    split = [layer for layer in layers if layer.operator == "DepthwiseConv2D" and len(layer.ops) > 1]
    assert [[op.ofm_shape for op in layer.ops] for layer in split] == [[(14, 14, 112), (14, 14, 464)]]
    exact = [layer for layer in layers if layer.operator in ("Add", "FullyConnected")]
    assert len(exact) == 11 and all(layer.cycles == layer.vela_cycles for layer in exact)
    assert 0.95 <= statistics.median(layer.ratio for layer in layers) <= 1.1 and 1.0 <= ours / vela <= 1.1
