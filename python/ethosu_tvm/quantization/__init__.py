"""TFLite's integer quantization arithmetic, computed exactly as TFLite computes it (NumPy only, no TVM).

Partitioning (can the NPU express a scale?), NPU legalization (its scale/shift pairs and lookup tables) and the
host kernels (their constants) must all derive the same integers from a model's float scales, so the derivations
live here once:

* :mod:`.multipliers`: real multipliers → TFLite's (Q31 multiplier, shift) and the NPU's (scale, right shift);
  the effective multipliers of each kernel; activation bounds in quantized units.
* :mod:`.fixed_point`: TFLite's fixed-point integer operations on NumPy arrays, for tables computed at compile time.
* :mod:`.tables`: the lookup tables TFLite's LUT kernels build (int8 tables, int16 interpolation tables), and the
  int8 tables of functions TFLite computes per element (ABS, HARD_SWISH, RSQRT, NEG in integers; SQRT in float32);
  the int32 exp table of int8 SOFTMAX (TFLite's integer exp of each input difference); int16 tables as the NPU's
  16-bit interpolating LUTs.
"""
from .fixed_point import (
    EXP_INPUT_INTEGER_BITS,
    SOFTMAX_INT16_EXP_RANGE,
    exp_on_negative_values,
    hard_swish_refusal,
    hard_swish_values,
    leaky_relu_extreme,
    multiply_by_quantized_multiplier,
    multiply_by_quantized_multiplier_single_round,
    softmax_input_multiplier,
    softmax_input_scaling,
    softmax_int16_input_scaling,
)
from .multipliers import (
    ELEMENTWISE_INPUT_SHIFT,
    MAX_NPU_SHIFT,
    add_multipliers,
    add_output_refusal,
    conv_multipliers,
    fully_connected_multipliers,
    mean_multiplier,
    mul_multiplier,
    narrowing_mul,
    widening_fully_connected,
    npu_scale_shift,
    per_channel_scale_shift,
    SQUARED_DIFFERENCE_LEFT_SHIFT,
    prelu_multipliers,
    quantize_multiplier,
    quantize_multipliers,
    quantize_value,
    reduced_multipliers,
    reduced_scale_shift,
    rescaled_operands,
    round_half_away,
    shifts_in_range,
    squared_difference_multipliers,
    table_multipliers,
    undefined_left_shift,
)
from .tables import (
    FLOAT32_FUNCTIONS,
    INTERPOLATION_STEPS,
    SIGMOID_SEGMENTS,
    abs_lut,
    float32_lut,
    float32_table_overflow,
    hard_swish_lut,
    interpolation_table,
    neg_lut,
    npu_interpolation_lut,
    rsqrt_lut,
    sigmoid_input_rescale,
    sigmoid_table,
    softmax_exp_lut,
    softmax_int16_tables,
    sqrt_lut,
)

__all__ = ["ELEMENTWISE_INPUT_SHIFT", "EXP_INPUT_INTEGER_BITS", "FLOAT32_FUNCTIONS", "INTERPOLATION_STEPS",
           "MAX_NPU_SHIFT", "SIGMOID_SEGMENTS", "SOFTMAX_INT16_EXP_RANGE", "SQUARED_DIFFERENCE_LEFT_SHIFT", "abs_lut",
           "add_multipliers", "add_output_refusal", "conv_multipliers", "exp_on_negative_values", "float32_lut",
           "float32_table_overflow", "fully_connected_multipliers", "hard_swish_lut", "hard_swish_refusal",
           "hard_swish_values", "interpolation_table", "mean_multiplier", "mul_multiplier", "narrowing_mul",
           "multiply_by_quantized_multiplier", "multiply_by_quantized_multiplier_single_round",
           "neg_lut", "npu_interpolation_lut", "npu_scale_shift",
           "per_channel_scale_shift", "prelu_multipliers", "quantize_multiplier", "quantize_multipliers",
           "quantize_value", "reduced_multipliers", "reduced_scale_shift", "rescaled_operands", "round_half_away",
           "rsqrt_lut",
           "shifts_in_range", "sigmoid_input_rescale", "sigmoid_table", "softmax_exp_lut", "softmax_input_multiplier",
           "softmax_input_scaling", "softmax_int16_input_scaling", "softmax_int16_tables", "sqrt_lut",
           "squared_difference_multipliers", "table_multipliers", "undefined_left_shift", "widening_fully_connected"]
