"""The NPU sequence for a BATCH_MATMUL whose operands are both computed at run time (issue 14), on streams of Vela's
API: per output row, a MUL of the right-hand matrix [columns, depth] (adj_y) by the row's left-hand values (IFM2,
broadcast over the columns) into int32, the zero points subtracted by the NPU, at scale 1; then a REDUCE_SUM over
the depth with LiteRT's multiplier as the OFM's explicit scale, TFL rounding and the output zero point. That this is
LiteRT's arithmetic (double rounding included) is what the legalized run-time form (per output column, the same
MUL and REDUCE_SUM) rests on; here it is checked at the stream level, apart from our code generation."""
import numpy as np
import pytest
from ethosu.vela import api as vapi
from ethosu.vela.operation import ExplicitScaling

from ethosu_tvm.arch import find_accelerator
from ethosu_tvm.codegen.block_config import choose_block_config
from ethosu_tvm.frontend.tflite_file import input_infos, output_infos
from ethosu_tvm.quantization import npu_scale_shift
from ethosu_tvm.sim import Simulator
from ethosu_tvm.testing import models
from ethosu_tvm.testing.reference import random_inputs, run_litert

from conftest import ACCELERATORS

CASES = {
    "factory default": {},
    "zero points": {"in_zp": -7, "in2_zp": 5, "in_shape": (1, 1, 5, 24), "in2_shape": (1, 1, 11, 24)},
    "three batches": {"in_zp": 3, "in2_zp": -128, "in_shape": (1, 3, 4, 40), "in2_shape": (1, 3, 7, 40)},
}
_LHS, _RHS, _PRODUCTS, _OFM = 0, 0x2000, 0x4000, 0xC000


def _fm(data_type, address: int, shape: tuple[int, int, int], zero_point: int) -> vapi.NpuFeatureMap:
    height, width, depth = shape
    element = 4 if data_type == vapi.NpuDataType.INT32 else 1
    fm = vapi.NpuFeatureMap()
    fm.data_type, fm.region, fm.layout = data_type, 1, vapi.NpuLayout.NHWC
    fm.shape = vapi.NpuShape3D(height=height, width=width, depth=depth)
    fm.tiles = vapi.NpuTileBox(height_0=height, height_1=height, width_0=width, addresses=[address, 0, 0, 0])
    fm.quantization = vapi.NpuQuantization(scale_f32=1.0, zero_point=zero_point)
    fm.strides = vapi.NpuShape3D(height=width * depth * element, width=depth * element, depth=element)
    return fm


def _row(accelerator, lhs_row: int, rhs: int, ofm_row: int, columns: int, depth: int, zero_points, scaling):
    """The MUL and REDUCE_SUM of one output row."""
    lhs_zp, rhs_zp, ofm_zp = zero_points
    mul = vapi.NpuElementWiseOperation(vapi.NpuElementWiseOp.MUL)
    mul.ifm = _fm(vapi.NpuDataType.INT8, rhs, (columns, 1, depth), rhs_zp)
    mul.ifm2 = _fm(vapi.NpuDataType.INT8, lhs_row, (1, 1, depth), lhs_zp)
    mul.ofm = _fm(vapi.NpuDataType.INT32, _PRODUCTS, (columns, 1, depth), 0)
    mul.rescale = (1, 0)
    total = vapi.NpuPoolingOperation(vapi.NpuPoolingOp.REDUCE_SUM)
    total.kernel = vapi.NpuKernel(1, 1, 1, 1)
    total.padding = vapi.NpuPadding(top=0, left=0, bottom=0, right=0)
    total.ifm = _fm(vapi.NpuDataType.INT32, _PRODUCTS, (columns, 1, depth), 0)
    total.ofm = _fm(vapi.NpuDataType.INT8, ofm_row, (columns, 1, 1), ofm_zp)
    total.rescale = scaling
    for op in (mul, total):
        op.rounding_mode = vapi.NpuRoundingMode.TFL
        op.block_config = choose_block_config(op, accelerator)
    return [mul, total]


@pytest.mark.parametrize("accelerator", ACCELERATORS)
@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("seed", range(3))
def test_mul_and_reduce_sum_per_row_are_litert_batch_matmul(accelerator, case, seed):
    model = models.make("batch_matmul", seed, adj_y=True, **CASES[case])
    lhs, rhs = random_inputs(model, seed)
    expected = run_litert(model, [lhs, rhs])[0]
    lhs_info, rhs_info = input_infos(model)
    ofm_info = output_infos(model)[0]
    multiplier, shift = npu_scale_shift(np.float64(lhs_info.scale) * np.float64(rhs_info.scale)
                                        / np.float64(ofm_info.scale))
    scaling = ExplicitScaling(False, shift=[shift], multiplier=[multiplier])
    zero_points = (lhs_info.zero_point, rhs_info.zero_point, ofm_info.zero_point)
    rows, columns = expected.shape[-2:]
    depth = lhs.shape[-1]
    batches = expected.size // (rows * columns)
    memory = bytearray(0x10000)
    memory[_LHS:_LHS + lhs.nbytes], memory[_RHS:_RHS + rhs.nbytes] = lhs.tobytes(), rhs.tobytes()
    npu = find_accelerator(accelerator).vela_accelerator
    ops = []
    for batch in range(batches):
        for row in range(rows):
            ops += _row(npu, _LHS + (batch * rows + row) * depth, _RHS + batch * columns * depth,
                        _OFM + (batch * rows + row) * columns, columns, depth, zero_points, scaling)
    Simulator(accelerator).run(vapi.npu_generate_register_command_stream(ops, npu), {1: memory})
    result = np.frombuffer(bytes(memory[_OFM:_OFM + expected.size]), np.int8).reshape(expected.shape)
    np.testing.assert_array_equal(result, expected)
