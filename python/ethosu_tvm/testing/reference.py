"""Reference runtimes that define correct results: LiteRT's reference kernels and TFLite Micro.

Both are optional test dependencies (the `[test]` extra); they are imported only when used.
"""
from __future__ import annotations

import contextlib
import faulthandler
import os

import numpy as np

from ..frontend.tflite_file import input_infos, output_infos


def _check_inputs(model: bytes, inputs: list[np.ndarray]) -> list[np.ndarray]:
    infos = input_infos(model)
    if len(inputs) != len(infos):
        raise ValueError(f"the model has {len(infos)} inputs, {len(inputs)} were given")
    checked = []
    for info, value in zip(infos, inputs):
        value = np.asarray(value)
        if value.dtype != info.dtype or value.shape != info.shape:
            raise ValueError(
                f"input {info.name!r} needs {info.dtype} {info.shape}, got {value.dtype} {value.shape}"
            )
        checked.append(value.copy(order="C"))  # ascontiguousarray would make a scalar 1-D
    return checked


# Ops whose LiteRT 2.3 BUILTIN_REF kernel is wrong. Its SUM (int8, int16) reads the input as uint8; TFLite Micro
# runs the same integer arithmetic (QuantizedMeanOrSum: requantize the centred int32 sum) on the right values, so
# for these ops TFLite Micro is the reference. LiteRT's optimised SUM rounds in float32 instead and differs from
# both on ties (see docs/references.md, the known differences).
REF_KERNEL_WRONG = {
    "sum": "LiteRT 2.3 BUILTIN_REF int8/int16 SUM reads its input as uint8",
}
# Ops LiteRT 2.3's BUILTIN_REF resolver has no kernel for; TFLite Micro, which LiteRT's optimised kernel agrees
# with, is the reference.
REF_KERNEL_MISSING = {
    "elu": "LiteRT 2.3's BUILTIN_REF resolver registers no ELU kernel",
}
# Ops whose LiteRT kernel refuses int8 at run time while TFLite Micro's runs it: TFLite Micro is the reference.
LITERT_LACKS_INT8 = {
    "add_n": "AddN only supports FLOAT32|INT32",
}


def _litert_invoke(model: bytes, inputs: list[np.ndarray], preserve_all_tensors: bool = False):
    """An interpreter with LiteRT's BUILTIN_REF kernels (no XNNPACK, no optimised kernels) that has run `inputs`."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    inputs = _check_inputs(model, inputs)
    interp = Interpreter(model_content=bytes(model), experimental_op_resolver_type=OpResolverType.BUILTIN_REF,
                         experimental_preserve_all_tensors=preserve_all_tensors)
    interp.allocate_tensors()
    for detail, value in zip(interp.get_input_details(), inputs):
        interp.set_tensor(detail["index"], value)
    interp.invoke()
    return interp


def run_litert(model: bytes, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Run the model with LiteRT's reference kernels; the outputs in subgraph order."""
    interp = _litert_invoke(model, inputs)
    return [interp.get_tensor(detail["index"]).copy() for detail in interp.get_output_details()]


def run_model_reference(model: bytes, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """A whole model's reference outputs: LiteRT's reference kernels, or TFLite Micro's where LiteRT refuses the
    model when loading it (quantization metadata TFLite Micro accepts, as person_detect's bias scales)."""
    try:
        return run_litert(model, inputs)
    except ValueError:
        return run_tflm(model, inputs, arena_size=64 << 20)


def litert_tensors(model: bytes, inputs: list[np.ndarray]) -> dict[int, np.ndarray]:
    """Every tensor LiteRT's reference kernels computed, intermediates included, by TFLite tensor index."""
    interp = _litert_invoke(model, inputs, preserve_all_tensors=True)
    return {d["index"]: interp.get_tensor(d["index"]).copy() for d in interp.get_tensor_details()}


def _tflm_interpreter(model: bytes, arena_size: int):
    from tflite_micro.python.tflite_micro import runtime as tflm

    return tflm.Interpreter.from_bytes(bytes(model), arena_size=arena_size)


@contextlib.contextmanager
def _quiet_stderr():
    """TFLite Micro reports allocation failures on C stderr; silence it while probing arena sizes."""
    saved = os.dup(2)
    with open(os.devnull, "wb") as null:
        os.dup2(null.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def _tflm_invoke(interp, inputs: list[np.ndarray], n_outputs: int) -> list[np.ndarray]:
    for i, value in enumerate(inputs):
        interp.set_input(value, i)
    interp.invoke()
    return [np.array(interp.get_output(i)) for i in range(n_outputs)]


def reference_runner(op: str):
    """The runner whose outputs define correct for a factory op kind: TFLite Micro where LiteRT's reference
    kernel is wrong or missing or refuses int8, LiteRT's reference kernels otherwise."""
    return run_tflm if op in REF_KERNEL_WRONG or op in REF_KERNEL_MISSING or op in LITERT_LACKS_INT8 else run_litert


def run_tflm(model: bytes, inputs: list[np.ndarray], arena_size: int = 4 << 20) -> list[np.ndarray]:
    """Run the model with TFLite Micro's Python interpreter (its reference kernels)."""
    return run_tflm_sequence(model, [inputs], arena_size)[0]


def run_tflm_sequence(model: bytes, sequence: list[list[np.ndarray]],
                      arena_size: int = 4 << 20) -> list[list[np.ndarray]]:
    """The outputs of one TFLite Micro interpreter invoked on each inputs of `sequence` in turn: a model with
    variable tensors (an LSTM's states) carries them from one invocation to the next."""
    interp = _tflm_interpreter(model, arena_size)
    count = len(output_infos(model))
    return [_tflm_invoke(interp, _check_inputs(model, inputs), count) for inputs in sequence]


def _tflm_runs(model: bytes, arena_size: int, inputs: list[np.ndarray], n_outputs: int) -> bool:
    """Whether TFLite Micro runs the model in `arena_size` bytes.

    Probed in a forked child: with some too-small arenas TFLite Micro crashes the process instead of failing.
    """
    pid = os.fork()
    if pid == 0:  # child: report through the exit status only, and die quietly if TFLite Micro crashes
        faulthandler.disable()
        code = 1
        try:
            with _quiet_stderr():
                _tflm_invoke(_tflm_interpreter(model, arena_size), inputs, n_outputs)
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def tflm_arena_size(model: bytes, limit: int = 64 << 20) -> int:
    """The smallest arena (bytes) with which TFLite Micro allocates and invokes the model: the CPU-only baseline."""
    inputs = random_inputs(model, seed=0)
    n_outputs = len(output_infos(model))
    from tflite_micro.python.tflite_micro import runtime  # noqa: F401  (import once, before forking)

    high = 1024
    while not _tflm_runs(model, high, inputs, n_outputs):
        if high >= limit:
            raise RuntimeError(f"TFLite Micro cannot run the model even with a {limit}-byte arena")
        high *= 2
    low = 0  # invariant: low fails (or is zero), high works
    while high - low > 1:
        mid = (low + high) // 2
        if _tflm_runs(model, mid, inputs, n_outputs):
            high = mid
        else:
            low = mid
    return high


def random_inputs(model: bytes, seed: int) -> list[np.ndarray]:
    """Seeded random inputs covering each input's full integer range (normal samples for float inputs)."""
    rng = np.random.default_rng(seed)
    values = []
    for info in input_infos(model):
        if info.dtype == np.bool_:
            values.append(rng.integers(0, 2, size=info.shape).astype(np.bool_))
        elif np.issubdtype(info.dtype, np.integer):
            limits = np.iinfo(info.dtype)
            values.append(rng.integers(limits.min, limits.max, size=info.shape, endpoint=True, dtype=info.dtype))
        else:
            values.append(rng.standard_normal(info.shape).astype(info.dtype))
    return values
