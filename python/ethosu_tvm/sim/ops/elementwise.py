"""NPU_OP_ELEMENTWISE on zero-point-corrected operands A (first) and B (second).

A is the IFM and B the IFM2 (a tensor broadcast along the flagged axes, or IFM2_SCALAR); operand_order swaps them.
* ADD/SUB: in scale mode OPA_OPB_16, A*OPA_SCALE +/- B*OPB_SCALE (16-bit multipliers, no shift). In OPA_32/OPB_32
  the named operand becomes (x << L) scaled by (OPA_SCALE, OPA_SHIFT + L) with the IFM rounding mode and the other
  x << (L - 1); L = 20 for 8-bit and 15 for 16-bit IFMs (TFLite's ADD). The sum is scaled by OFM_SCALE.
* MUL: A*B scaled by OFM_SCALE; with a 32-bit IFM only the shift applies (multiplier 1).
* ABS: |A| scaled by OFM_SCALE. LRELU: A if A >= 0, else A scaled by OFM_SCALE (the slope).
* MIN, MAX, SHL (A << B), SHR (A / 2**B, OFM rounding mode) and CLZ (leading zeros of A as 32 bits) are unscaled.
"""
from __future__ import annotations

import numpy as np

from ...arch import Accelerator
from .. import output
from ..errors import SimulatorError
from ..featuremap import read
from ..memory import Memory
from ..operation import BlockOperation
from ..quant import apply_scale, shift_round
from ..regfile import RegisterFile

_OPERAND_SHIFT = {8: 20, 16: 15}


def _operands(op: BlockOperation, memory: Memory) -> tuple[np.ndarray, np.ndarray | None]:
    a = read(memory, op.ifm).astype(np.int64) - op.ifm.zero_point
    if op.ifm2 is None:
        return a, None
    if op.ifm2_scalar is not None:
        b = np.full((1, 1, 1), op.ifm2_scalar - op.ifm2.zero_point, np.int64)
    else:
        b = read(memory, op.ifm2).astype(np.int64) - op.ifm2.zero_point
    a, b = np.broadcast_arrays(a, b)
    return (b, a) if op.reversed_operands else (a, b)


def _operand_shift(op: BlockOperation, regs: RegisterFile) -> int | None:
    """The ADD/SUB operand shift L of the 32-bit scaling modes (None in OPA_OPB_16), its rules checked."""
    scaling = op.operand_scaling
    if scaling.mode == 0:
        if scaling.opa_shift:
            raise regs.error("OPA_SCALE", "OPA_OPB_16 scaling has no shift")
        for name, value in (("OPA_SCALE", scaling.opa_scale), ("OPB_SCALE", scaling.opb_scale)):
            if value > 0xFFFF:
                raise regs.error(name, "OPA_OPB_16 scaling takes 16-bit multipliers")
        return None
    shift = _OPERAND_SHIFT.get(op.ifm.bits)
    if shift is None:
        raise regs.error("IFM_PRECISION", "32-bit operand scaling is defined for 8- and 16-bit IFMs only")
    return shift


def _add_sub_operands(op: BlockOperation, regs: RegisterFile, a: np.ndarray, b: np.ndarray):
    scaling = op.operand_scaling
    shift = _operand_shift(op, regs)
    if shift is None:
        return a * scaling.opa_scale, b * scaling.opb_scale

    def scaled(x):
        return apply_scale(x << shift, scaling.opa_scale, scaling.opa_shift + shift, scaling.rounding)

    if scaling.mode == 1:
        return scaled(a), b << (shift - 1)
    return a << (shift - 1), scaled(b)


def _shift_amounts(regs: RegisterFile, b: np.ndarray) -> np.ndarray:
    if b.size and (int(b.min()) < 0 or int(b.max()) > 31):
        raise SimulatorError(f"{regs.where()}: shift amounts must be 0..31, the second operand holds "
                             f"{int(b.min())}..{int(b.max())}")
    return b


def _shift_right(a: np.ndarray, b: np.ndarray, op: BlockOperation) -> np.ndarray:
    result = np.empty_like(a)
    for amount in np.unique(b):
        lanes = b == amount
        result[lanes] = shift_round(a[lanes], int(amount), op.output.rounding)
    return result


def _count_leading_zeros(a: np.ndarray) -> np.ndarray:
    _, exponent = np.frexp((a & 0xFFFFFFFF).astype(np.float64))
    return 32 - exponent.astype(np.int64)


def check(op: BlockOperation, regs: RegisterFile, memory: Memory, accelerator: Accelerator) -> None:
    """`execute`'s checks in its order, but those of values (SHL/SHR amounts read from a tensor, overflows)."""
    _operands(op, memory)
    if op.mode in ("ADD", "SUB"):
        _operand_shift(op, regs)
    output.check(op.output, regs)


def execute(op: BlockOperation, regs: RegisterFile, memory: Memory, accelerator: Accelerator) -> np.ndarray:
    a, b = _operands(op, memory)
    stage = op.output
    ofm_scale = (stage.scale, stage.shift)
    scale = None
    if op.mode in ("ADD", "SUB"):
        a, b = _add_sub_operands(op, regs, a, b)
        values, scale = (a + b if op.mode == "ADD" else a - b), ofm_scale
    elif op.mode == "MUL":
        values, scale = a * b, ((1, stage.shift) if op.ifm.bits == 32 else ofm_scale)
    elif op.mode == "MIN":
        values = np.minimum(a, b)
    elif op.mode == "MAX":
        values = np.maximum(a, b)
    elif op.mode == "SHL":
        values = a << _shift_amounts(regs, b)
    elif op.mode == "SHR":
        values = _shift_right(a, _shift_amounts(regs, b), op)
    elif op.mode == "CLZ":
        values = _count_leading_zeros(a)
    elif op.mode == "ABS":
        values, scale = np.abs(a), ofm_scale
    else:  # LRELU
        values = np.where(a < 0, apply_scale(a, stage.scale, stage.shift, stage.rounding), a)
    return output.finish(values, stage, scale, regs, memory, accelerator)
