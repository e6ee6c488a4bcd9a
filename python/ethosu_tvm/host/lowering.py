"""The TIR pipeline for plain-C host kernels: TVM's s_tir lowering without the packed-function ABI.

Registered as "ethosu_tvm.host_c" for `tvm.tirx.build`. It is the s_tir pipeline minus the passes that produce the
packed ABI (AnnotateEntryFunc, MakePackedAPI, LowerTVMBuiltin), plus a check that the kernel's local arrays
stay small: large intermediates belong in the caller's workspace.
"""
from __future__ import annotations

import tvm
import tvm_ffi
from tvm import s_tir, tirx

from .subroutines import HELPER_ATTR

PIPELINE = "ethosu_tvm.host_c"
MAX_STACK_BYTES = 64


@tvm_ffi.register_error
class StackLimitExceeded(RuntimeError):
    """A kernel schedule left a local array larger than MAX_STACK_BYTES (a bug in that kernel's schedule).

    Registered with TVM's FFI so that it keeps its type when raised from inside the pass pipeline.
    """


def _check_stack_pass() -> tvm.transform.Pass:
    """Fail when local arrays exceed MAX_STACK_BYTES: large intermediates belong in the workspace."""

    @tvm.transform.module_pass(opt_level=0, name="ethosu_tvm.CheckStack")
    def check(mod: tvm.IRModule, _ctx) -> tvm.IRModule:
        for name, sizes in s_tir.analysis.calculate_allocated_bytes(mod).items():
            total = sum(int(v) for v in sizes.values())
            if total > MAX_STACK_BYTES:
                raise StackLimitExceeded(f"{name}: {total} bytes of local arrays (limit {MAX_STACK_BYTES})")
        return mod

    return check


def _is_helper(func: tirx.PrimFunc) -> bool:
    return bool(func.attrs is not None and HELPER_ATTR in func.attrs)


def _kernels_only(passes: tvm.transform.Pass) -> tvm.transform.Pass:
    """Apply `passes` to the kernel functions of a module, passing helper subroutines through untouched."""

    @tvm.transform.module_pass(opt_level=0, name="ethosu_tvm.KernelsOnly")
    def apply(mod: tvm.IRModule, _ctx) -> tvm.IRModule:
        result = passes(tirx.transform.Filter(lambda f: not _is_helper(f))(mod))
        result.update(tirx.transform.Filter(_is_helper)(mod))
        return result

    return apply


def _plain_c_pipeline():
    """The s_tir pipeline without AnnotateEntryFunc, MakePackedAPI and LowerTVMBuiltin, plus the stack check.

    Helper subroutines are scalar code that needs no lowering, and skip it: the simplifier would substitute their
    named intermediates into every use, duplicating expressions (exponentially, for chains of selects) and
    stranding the names as unused variables.
    """
    lowering = tvm.ir.transform.Sequential([
        s_tir.transform.CanonicalizeLoop(),
        s_tir.transform.LowerInitBlock(),
        s_tir.transform.PlanAndUpdateBufferAllocationLocation(),
        s_tir.transform.ConvertBlocksToOpaque(),
        s_tir.transform.CompactBufferAllocation(),
        s_tir.transform.LowerMatchBuffer(),
        s_tir.transform.StmtSimplify(),
        s_tir.transform.LowerOpaqueBlock(),
        tirx.transform.FlattenBuffer(),
        tirx.transform.NarrowDataType(32),
        s_tir.transform.LoopPartition(),
        tirx.transform.VectorizeLoop(False),
        tirx.transform.StorageRewrite(),
        tirx.transform.UnrollLoop(),
        s_tir.transform.RenormalizeSplitPattern(),
        tirx.transform.StmtSimplify(),
        tirx.transform.RemoveNoOp(),
        s_tir.transform.RewriteUnsafeSelect(),
        tirx.transform.CommonSubexprElim(),
        tirx.transform.VerifyMemory(),
        _check_stack_pass(),
    ])

    finalize = _kernels_only(tvm.ir.transform.Sequential([tirx.transform.LowerIntrin()]))
    return _kernels_only(lowering), (lambda: finalize), (lambda: finalize)


tirx.register_tir_pipeline(PIPELINE, _plain_c_pipeline)
