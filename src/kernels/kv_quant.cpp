#include "kernels/kv_quant.h"

#include <cmath>
#include <cstring>

#include "base/cpu_features.h"
#include "tensor/quant.h"

namespace omnibus {

const char* kv_cache_type_name(KvCacheType type) {
  switch (type) {
    case KvCacheType::kQ8_0: return "q8_0";
    case KvCacheType::kBF16: return "bf16";
    default: return "f16";
  }
}

bool parse_kv_cache_type(const char* name, KvCacheType* type) {
  for (KvCacheType t : {KvCacheType::kF16, KvCacheType::kQ8_0, KvCacheType::kBF16}) {
    if (std::strcmp(name, kv_cache_type_name(t)) == 0) {
      *type = t;
      return true;
    }
  }
  return false;
}

namespace ref {

void quantize_kv_q8(const float* x, int64_t n, int8_t* codes, int64_t code_stride, uint16_t* scales,
                    int64_t scale_stride) {
  for (int64_t g = 0; g * kKvQ8Group < n; ++g) {
    const float* xg = x + g * kKvQ8Group;
    float amax = 0.0f;
    for (int i = 0; i < kKvQ8Group; ++i) amax = std::fmax(amax, std::fabs(xg[i]));
    const float d = amax / 127.0f;
    const float inv = d != 0.0f ? 1.0f / d : 0.0f;
    scales[g * scale_stride] = f32_to_f16(d);
    // Clamped so a non-finite input cannot make the conversion undefined.
    for (int i = 0; i < kKvQ8Group; ++i)
      codes[(g * kKvQ8Group + i) * code_stride] =
          static_cast<int8_t>(std::fmin(std::fmax(std::nearbyint(xg[i] * inv), -127.0f), 127.0f));
  }
}

}  // namespace ref

void quantize_kv_q8(const float* x, int64_t n, int8_t* codes, int64_t code_stride, uint16_t* scales,
                    int64_t scale_stride) {
  static const bool use_avx2 = cpu_features().has_avx2_fma();
  if (use_avx2) return avx2::quantize_kv_q8(x, n, codes, code_stride, scales, scale_stride);
  ref::quantize_kv_q8(x, n, codes, code_stride, scales, scale_stride);
}

}  // namespace omnibus
