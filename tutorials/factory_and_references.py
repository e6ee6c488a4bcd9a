"""Build test models without TensorFlow and get their exact expected outputs.

Run: `python tutorials/factory_and_references.py`.
It builds a small keyword-spotting network with the model factory, runs it with LiteRT's reference kernels and
with TFLite Micro, checks that both agree bit for bit, and reports the arena TFLite Micro needs.
"""
import numpy as np

from ethosu_tvm.frontend.tflite_file import input_infos, output_infos
from ethosu_tvm.testing import models
from ethosu_tvm.testing.reference import random_inputs, run_litert, run_tflm, tflm_arena_size


def main() -> None:
    model = models.make_graph("ds_cnn", seed=0)
    print(f"factory model 'ds_cnn': {len(model)} bytes")
    for info in input_infos(model) + output_infos(model):
        print(f"  {info.name}: {info.dtype} {info.shape} scale={info.scale:.6g} zero_point={info.zero_point}")
    inputs = random_inputs(model, seed=0)
    (litert,) = run_litert(model, inputs)
    (micro,) = run_tflm(model, inputs)
    print(f"LiteRT BUILTIN_REF output:   {litert.ravel().tolist()}")
    print(f"TFLite Micro output:         {micro.ravel().tolist()}")
    print(f"bit-exact agreement:         {np.array_equal(litert, micro)}")
    print(f"TFLite Micro minimal arena:  {tflm_arena_size(model)} bytes")
    print(f"op kinds the factory makes:  {len(models.OPS)} ({', '.join(models.OPS)})")


if __name__ == "__main__":
    main()
