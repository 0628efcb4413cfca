// What every path of the q4_0 cache's attention (kernels/kv_quant.h) shares
// for its scores: Q quantized to q8_0 once per head and chunk, and the
// float step that turns one group's integer dot into part of a score. A
// score is sum over groups g, in order, of (code . q_code - 8 * sum
// q_code) * (k_scale * q_scale): llama.cpp's q4_0 x q8_0 dot product, with
// each group's integer sum exact, so a path's SIMD width never changes a
// bit.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/attention.h"
#include "kernels/kv_quant.h"
#include "tensor/quant.h"

namespace omnibus {

// One head's Q for q4_0 scores.
struct Q4Query {
  alignas(64) int8_t codes[kMaxHeadDim];      // quantize_kv_q8 of the f32 q
  float scale[kMaxHeadDim / kKvQ8Group];      // each group's scale (f16, widened)
  int32_t bias[kMaxHeadDim / kKvQ8Group];     // 8 * the sum of the group's codes
};

inline void quantize_q4_query(const float* q, int head_dim, Q4Query* out) {
  uint16_t scales[kMaxHeadDim / kKvQ8Group];
  quantize_kv_q8(q, head_dim, out->codes, 1, scales, 1);
  for (int g = 0; g < head_dim / kKvQ8Group; ++g) {
    out->scale[g] = f16_to_f32(scales[g]);
    int32_t sum = 0;
    for (int i = 0; i < kKvQ8Group; ++i) sum += out->codes[g * kKvQ8Group + i];
    out->bias[g] = 8 * sum;
  }
}

// Heads [head_begin, head_begin + heads) of one row's q into out[0 ..
// heads), as the SIMD drivers quantize them once per call.
inline void quantize_q4_queries(const float* q, int head_begin, int heads, int head_dim, Q4Query* out) {
  for (int i = 0; i < heads; ++i)
    quantize_q4_query(q + static_cast<int64_t>(head_begin + i) * head_dim, head_dim, &out[i]);
}

// Group g's step of a score: `isum` = sum of K codes (0..15) times Q codes
// over the group, exact; then one multiply and one fused multiply-add.
inline float q4_group_step(int32_t isum, const Q4Query& q, int g, uint16_t k_scale, float dot) {
  return std::fma(static_cast<float>(isum - q.bias[g]), f16_to_f32(k_scale) * q.scale[g], dot);
}

}  // namespace omnibus
