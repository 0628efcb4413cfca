// Reference (scalar) conversions between float and every computable dtype:
// the definition of each block layout that all faster code is tested against.
// Layouts follow ggml's so GGUF files read as written.
#pragma once

#include <cstdint>

#include "tensor/dtype.h"

namespace omnibus {

// dst[0..n) = values of the n elements at src. n must be a multiple of the
// block size (callers check with dtype_bytes first).
void dequantize_row_ref(DType t, const void* src, float* dst, int64_t n);

// Packs n floats into dtype t (round-to-nearest as ggml's reference
// quantizers do). Used by tests and tools to make models.
void quantize_row_ref(DType t, const float* src, void* dst, int64_t n);

// Half-precision helpers (IEEE binary16 and bfloat16).
float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);
float bf16_to_f32(uint16_t h);
uint16_t f32_to_bf16(float f);

}  // namespace omnibus
