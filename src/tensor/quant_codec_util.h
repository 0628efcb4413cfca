// Small helpers shared by the reference row codecs (internal to tensor/).
#pragma once

#include <cmath>
#include <cstdint>

#include "tensor/quant.h"
#include "tensor/quant_blocks.h"

namespace omnibus::quant_detail {

inline float load_f16(const uint8_t* p) { return f16_to_f32(load_u16le(p)); }

// Rounds v to f16 and stores it; returns the value the decoder will see.
inline float store_f16(uint8_t* p, float v) {
  const uint16_t h = f32_to_f16(v);
  store_u16le(p, h);
  return f16_to_f32(h);
}

// v rounded to the nearest integer and clamped to [lo, hi].
inline int clamp_int(float v, int lo, int hi) {
  const float r = std::nearbyint(v);
  if (!(r >= static_cast<float>(lo))) return lo;  // also catches NaN
  if (r > static_cast<float>(hi)) return hi;
  return static_cast<int>(r);
}

// The value with the largest magnitude, sign kept (first one on ties).
inline float signed_absmax(const float* x, int n) {
  float best = 0.0f;
  for (int j = 0; j < n; ++j)
    if (std::fabs(x[j]) > std::fabs(best)) best = x[j];
  return best;
}

}  // namespace omnibus::quant_detail
