"""Compile a model for Cortex-M55 + Ethos-U55-128, run the generated C, and check it against LiteRT.

Run: `python tutorials/compile_and_run.py [MODEL.tflite] [ACCELERATOR]` (this is what `make demo` runs). The default
model is MLPerf Tiny keyword spotting from the shared model folder ($ETHOSU_TVM_MODELS, else ../shared/models); on a
clone with nothing beside it, a KWS-shaped DS-CNN from the package's model factory stands in. The same as the
command line:

    tvmc compile --target="ethos-u -accelerator-config=ethos-u55-128",c kws.tflite --output-format mlf -o module.tar
    tvmc run module.tar --inputs in.npz --outputs out.npz --print-top 3
"""
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import ethosu_tvm
from ethosu_tvm.testing import models, shared_models_dir
from ethosu_tvm.testing.reference import random_inputs, run_litert

DEFAULT_MODEL = "mlperf_tiny_kws_dscnn_int8.tflite"


def default_model() -> tuple[bytes, str]:
    """MLPerf Tiny KWS when the shared model folder has it, else the factory's DS-CNN (same input and classes)."""
    path = shared_models_dir() / DEFAULT_MODEL
    if path.is_file():
        return path.read_bytes(), f"{DEFAULT_MODEL} (MLPerf Tiny keyword spotting, from {path.parent})"
    return models.make_graph("ds_cnn"), (f'ds_cnn, a KWS-shaped DS-CNN from ethosu_tvm.testing.models.make_graph'
                                         f'("ds_cnn") ({DEFAULT_MODEL} is not in {path.parent}; set '
                                         f'ETHOSU_TVM_MODELS to the folder that has it)')


def main(model: bytes, name: str, accelerator: str) -> None:
    print(f"model: {name}")
    start = time.perf_counter()
    module = ethosu_tvm.build(ethosu_tvm.from_tflite(model), target=f"ethos-u -accelerator-config={accelerator},c")
    print(f"compiled for {accelerator} + Cortex-M in {time.perf_counter() - start:.1f} s")
    print(module.summary())
    with tempfile.TemporaryDirectory() as tmp:
        tarball = module.export_model_library_format(Path(tmp) / "module.tar")
        print(f"Model Library Format tarball: {tarball.stat().st_size} bytes")
    exact = True
    for seed in range(5):
        inputs = random_inputs(model, seed)
        outputs = list(module.run(inputs).values())
        expected = run_litert(model, inputs)
        exact &= all(np.array_equal(o.reshape(e.shape), e) for o, e in zip(outputs, expected))
    # Less than the summary's figure, which adds up the operations one after another.
    print(f"NPU: estimated {module.npu_cycles} cycles elapsed per inference in the simulator (operations and DMAs "
          "overlapping as the stream's waits allow)")
    print(f"bit-exact with LiteRT on 5 inputs: {exact}")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        model, name = Path(sys.argv[1]).read_bytes(), sys.argv[1]
    else:
        model, name = default_model()
    main(model, name, sys.argv[2] if len(sys.argv) > 2 else "ethos-u55-128")
