"""TIR PrimFunc -> one plain C function for a Cortex-M: pointer parameters, no TVM runtime, no allocation.

TVM's `c` target emits the packed-function ABI. Following the plain-C recipe instead: buffer parameters become
typed pointers declared over the buffers, the kernel is lowered by the "ethosu_tvm.host_c" pipeline (see
`lowering`), and the TVM preamble is removed from `target.build.c`'s text. Scratch buffers are laid out in one
caller-provided workspace, so the only local arrays left are the small ones the schedule compacted.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import tvm
from tvm import tirx

from ..arch import round_up
from .lowering import PIPELINE
from .spec import UnsupportedHostOp

# Parameter roles: what the caller passes; inputs and constants are read-only (`const` in C).
READ_ONLY_ROLES = ("input", "constant")
ROLES = READ_ONLY_ROLES + ("output", "scratch")
_TVM_PREAMBLE = re.compile(r'^(#define TVM_EXPORTS|#include "tvm/.*"|void\* __tvm_ffi__library_ctx = NULL;|'
                           r'// tvm target:.*)\n', re.MULTILINE)


@dataclass(frozen=True)
class CFunction:
    """The emitted C text and the size of the workspace its last parameter points to (0: no such parameter)."""

    source: str
    workspace_bytes: int


def host_target(mcpu: str | None = None) -> tvm.target.Target:
    """The `c` target for a Cortex-M host, e.g. host_target("cortex-m55") for `c -mcpu=cortex-m55`."""
    return tvm.target.Target({"kind": "c", "mcpu": mcpu} if mcpu else {"kind": "c"})


def _check_target(target: tvm.target.Target) -> tvm.target.Target:
    if target.kind.name != "c":
        raise UnsupportedHostOp(f"host kernels are emitted for the 'c' target, got {target.kind.name!r}")
    return target


def _pointer(name: str, dtype: str) -> tirx.Var:
    return tirx.Var(name, tvm.ir.PointerType(tvm.ir.PrimType(dtype)))


def _dtype(buffer) -> str:
    return str(buffer.ty.dtype.dtype)


def _nbytes(buffer) -> int:
    count = 1
    for extent in buffer.ty.shape:
        count *= int(extent)
    return count * tvm.DataType(_dtype(buffer)).bits // 8


def _bind_pointers(func: tirx.PrimFunc, roles: list[str]) -> tuple[tirx.PrimFunc, int, set[str]]:
    """Buffer parameters -> pointer parameters; scratch buffers -> aligned slices of one `workspace` pointer.

    Returns the new function, the workspace size and the names of the read-only pointer parameters.
    """
    offsets, total = {}, 0
    for buffer, role in zip(func.params, roles):
        if role == "scratch":
            offsets[buffer.name] = total
            total += round_up(_nbytes(buffer))
    workspace = _pointer("workspace", "uint8")
    workspace_view = tirx.decl_buffer((max(total, 1),), "uint8", "workspace_view", data=workspace)
    params, decls, read_only = [], [], set()
    for buffer, role in zip(func.params, roles):
        if role == "scratch":
            address = tirx.address_of(tirx.BufferLoad(workspace_view, [offsets[buffer.name]]))
            decls.append(tirx.DeclBuffer(buffer, data=address))
            continue
        pointer = _pointer(buffer.name, _dtype(buffer))
        params.append(pointer)
        decls.append(tirx.DeclBuffer(buffer, data=pointer))
        if role in READ_ONLY_ROLES:
            read_only.add(buffer.name)
    if total:
        params.append(workspace)
        decls.insert(0, tirx.DeclBuffer(workspace_view, data=workspace))
    return tirx.PrimFunc(params, tirx.SeqStmt(decls + [func.body]), attrs=func.attrs), total, read_only


def _strip_tvm(source: str, helpers: list[str]) -> str:
    """Drop the TVM preamble and export macro; make the helpers `static inline`: file-local (their names are
    kernel-prefixed anyway), and no warning when simplification leaves one uncalled (e.g. a constant output)."""
    source = _TVM_PREAMBLE.sub("", source).replace("TVM_DLL ", "")
    for helper in helpers:
        source = re.sub(rf'#ifdef __cplusplus\nextern "C"\n#endif\n(\w+ {re.escape(helper)}\()', r"static inline \1",
                        source)
    return source


def _constify(source: str, name: str, read_only: set[str]) -> str:
    """Mark the read-only pointer parameters of the kernel's declaration and definition `const`."""

    def rewrite(match: re.Match) -> str:
        args = [("const " + a) if a.split("* ")[-1] in read_only else a for a in match.group(1).split(", ")]
        return f"void {name}({', '.join(args)})"

    return re.sub(rf"^void {re.escape(name)}\((.*)\)", rewrite, source, flags=re.MULTILINE)


def _mark_unused(source: str, name: str) -> str:
    """`(void)p;` for parameters a degenerate kernel never reads (e.g. an input that is all padding)."""
    definition = re.search(rf"^void {re.escape(name)}\((.*)\) {{\n", source, re.MULTILINE)
    body = source[definition.end():source.index("\n}\n", definition.end())]
    params = re.findall(r"(\w+)(?:, |$)", definition.group(1))
    marks = "".join(f"  (void){p};\n" for p in params if not re.search(rf"\b{p}\b", body))
    return source[:definition.end()] + marks + source[definition.end():]


def emit_c(func: tirx.PrimFunc, name: str, roles: list[str], target: tvm.target.Target, banner: str,
           helpers: dict[tvm.ir.GlobalVar, tirx.PrimFunc]) -> CFunction:
    """The C function `void name(<params in order, scratch ones replaced by a final uint8_t* workspace>)`.

    `roles` gives each parameter's role (one of ROLES); `helpers` are the subroutines it calls, emitted as static
    functions; `banner` becomes the file's leading comment.
    """
    if len(roles) != len(func.params) or not set(roles) <= set(ROLES):
        raise ValueError(f"{name}: need one role from {ROLES} per parameter, got {roles}")
    func, workspace_bytes, read_only = _bind_pointers(func, roles)
    mod = tvm.IRModule({name: func.with_attr("global_symbol", name), **helpers})
    source = tirx.build(mod, target=_check_target(target), pipeline=PIPELINE).inspect_source()
    source = _mark_unused(_constify(_strip_tvm(source, [g.name_hint for g in helpers]), name, read_only), name)
    return CFunction(f"/* {banner} */\n#include <stdint.h>\n" + source.lstrip("\n"), workspace_bytes)
