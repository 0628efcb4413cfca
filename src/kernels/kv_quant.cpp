#include "kernels/kv_quant.h"

#include <cmath>
#include <cstring>

#include "kernels/kernel_table.h"
#include "tensor/quant.h"

namespace omnibus {

const char* kv_cache_type_name(KvCacheType type) {
  switch (type) {
    case KvCacheType::kQ8_0: return "q8_0";
    case KvCacheType::kBF16: return "bf16";
    case KvCacheType::kQ4_0: return "q4_0";
    default: return "f16";
  }
}

bool parse_kv_cache_type(const char* name, KvCacheType* type) {
  for (KvCacheType t : {KvCacheType::kF16, KvCacheType::kQ8_0, KvCacheType::kBF16, KvCacheType::kQ4_0}) {
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

void quantize_kv_q4(const float* x, int64_t n, uint8_t* codes, uint16_t* scales, int64_t scale_stride) {
  for (int64_t g = 0; g * kKvQ8Group < n; ++g) {
    const float* xg = x + g * kKvQ8Group;
    float amax = 0.0f, max = 0.0f;
    for (int i = 0; i < kKvQ8Group; ++i) {
      if (amax < std::fabs(xg[i])) {
        amax = std::fabs(xg[i]);
        max = xg[i];
      }
    }
    const float d = max / -8.0f;
    const float inv = d != 0.0f ? 1.0f / d : 0.0f;
    scales[g * scale_stride] = f32_to_f16(d);
    // x / d + 8.5 truncated, as ggml (x / d is in [-8, 8] here, so the
    // same as its min(15, (int8_t)(...))); clamped first so that a
    // non-finite product cannot make the conversion undefined (fmax of a
    // NaN gives 0).
    for (int i = 0; i < kKvQ8Group; ++i)
      codes[g * kKvQ8Group + i] = static_cast<uint8_t>(std::fmin(std::fmax(xg[i] * inv + 8.5f, 0.0f), 15.0f));
  }
}

void pack_key_q4(const uint8_t* codes, int head_dim, int64_t octet_stride, uint8_t* dst) {
  for (int o = 0; o < head_dim / 8; ++o)
    for (int b = 0; b < 4; ++b)
      dst[o * octet_stride + b] = static_cast<uint8_t>(codes[8 * o + b] | codes[8 * o + 4 + b] << 4);
}

void pack_value_q4(const uint8_t* codes, int head_dim, uint8_t* dst) {
  for (int g = 0; g < head_dim / kKvQ8Group; ++g)
    for (int i = 0; i < 16; ++i)
      dst[16 * g + i] = static_cast<uint8_t>(codes[32 * g + i] | codes[32 * g + 16 + i] << 4);
}

void quantize_kv_q8(const KernelTable& table, const float* x, int64_t n, int8_t* codes, int64_t code_stride,
                    uint16_t* scales, int64_t scale_stride) {
  table.quantize_kv_q8(x, n, codes, code_stride, scales, scale_stride);
}

void quantize_kv_q8(const float* x, int64_t n, int8_t* codes, int64_t code_stride, uint16_t* scales,
                    int64_t scale_stride) {
  quantize_kv_q8(kernels(), x, n, codes, code_stride, scales, scale_stride);
}

}  // namespace omnibus
