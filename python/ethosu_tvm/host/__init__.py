"""Host kernels: ops left on the Cortex-M, as integer TIR that reproduces LiteRT's reference kernels bit for bit,
emitted as one plain C function each (no TVM runtime, no allocation, scratch in a caller-planned workspace).

    from ethosu_tvm.host import build_kernel, host_target, spec
    x = spec.QuantTensor((1, 10), "int8", scale=0.1, zero_point=3)
    y = spec.QuantTensor((1, 10), "int8", scale=1 / 256, zero_point=-128)
    kernel = build_kernel(spec.Softmax(x, y, beta=1.0), name="net_softmax_0", target=host_target("cortex-m55"))
    kernel.c_source        # one C translation unit; several kernels may also share one
    kernel.declaration     # void net_softmax_0(const int8_t* input, int8_t* output, uint8_t* workspace);
    kernel.params          # KernelParam(name, dtype, shape, role "input"/"constant"/"output", data for constants)
    kernel.scratch         # ScratchBuffer(name, nbytes, alignment): memory the caller provides after the params

`spec` describes the op and its quantization as TFLite's kernel reads it; `build_kernel` derives TFLite's integer
parameters, writes the arithmetic in TE, schedules and lowers it to TIR and emits the C. Ops and dtypes it cannot
build raise UnsupportedHostOp, naming the op.

From a partitioned module: `fuse_host_ops(mod)` groups what stays in main into `host.<kind>` composites (or raises
UnsupportedHostOp naming the TFLite operator no kernel covers); `host_spec(func)` reads one composite as its spec;
`build_host_kernels(mod, target, prefix)` builds the kernel of every composite main calls, each by the
implementation `REGISTRY` selects: a kernel library registered for the op that accepts the spec, else the portable
C above (see `implementation`).
"""
from . import spec
from .c_emitter import host_target
from .fusion import fuse_host_ops, host_functions
from .implementation import LIBRARY_OPS, PORTABLE, REGISTRY, KernelImplementation, KernelRegistry
from .kernel import HostKernel, KernelParam, ScratchBuffer, build_kernel
from .lowering import StackLimitExceeded
from .patterns import host_patterns
from .program_kernels import build_copy_kernel, build_host_kernels
from .spec import UnsupportedHostOp
from .spec_reader import host_spec

__all__ = ["HostKernel", "KernelImplementation", "KernelParam", "KernelRegistry", "LIBRARY_OPS", "PORTABLE", "REGISTRY",
           "ScratchBuffer", "StackLimitExceeded", "UnsupportedHostOp", "build_copy_kernel", "build_host_kernels",
           "build_kernel", "fuse_host_ops", "host_functions", "host_patterns", "host_spec", "host_target", "spec"]
