// Dispatch from a dtype to its reference row codec.
#include "tensor/quant.h"

#include <algorithm>
#include <cstring>

#include "tensor/quant_blocks.h"
#include "tensor/quant_rows.h"

namespace omnibus {

using namespace quant_detail;

// Types without a codec (callers are expected to have checked `computable`)
// dequantize to zeros and quantize to nothing rather than touching memory
// beyond what the caller sized.
void dequantize_row_ref(DType t, const void* src, float* dst, int64_t n) {
  const auto* s = static_cast<const uint8_t*>(src);
  switch (t) {
    case DType::kF32: std::memcpy(dst, s, static_cast<size_t>(n) * sizeof(float)); return;
    case DType::kF16:
      for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(load_u16le(s + 2 * i));
      return;
    case DType::kBF16:
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(load_u16le(s + 2 * i));
      return;
    case DType::kQ4_0: dequantize_q4_0(s, dst, n); return;
    case DType::kQ4_1: dequantize_q4_1(s, dst, n); return;
    case DType::kQ5_0: dequantize_q5_0(s, dst, n); return;
    case DType::kQ5_1: dequantize_q5_1(s, dst, n); return;
    case DType::kQ8_0: dequantize_q8_0(s, dst, n); return;
    case DType::kQ4_K: dequantize_q4_k(s, dst, n); return;
    case DType::kQ5_K: dequantize_q5_k(s, dst, n); return;
    case DType::kQ6_K: dequantize_q6_k(s, dst, n); return;
    case DType::kQ2_K: dequantize_q2_k(s, dst, n); return;
    case DType::kQ3_K: dequantize_q3_k(s, dst, n); return;
    case DType::kIQ4_NL: dequantize_iq4_nl(s, dst, n); return;
    case DType::kIQ4_XS: dequantize_iq4_xs(s, dst, n); return;
    case DType::kMXFP4: dequantize_mxfp4(s, dst, n); return;
    default: std::fill(dst, dst + n, 0.0f); return;
  }
}

void quantize_row_ref(DType t, const float* src, void* dst, int64_t n) {
  auto* d = static_cast<uint8_t*>(dst);
  switch (t) {
    case DType::kF32: std::memcpy(d, src, static_cast<size_t>(n) * sizeof(float)); return;
    case DType::kF16:
      for (int64_t i = 0; i < n; ++i) store_u16le(d + 2 * i, f32_to_f16(src[i]));
      return;
    case DType::kBF16:
      for (int64_t i = 0; i < n; ++i) store_u16le(d + 2 * i, f32_to_bf16(src[i]));
      return;
    case DType::kQ4_0: quantize_q4_0(src, d, n); return;
    case DType::kQ4_1: quantize_q4_1(src, d, n); return;
    case DType::kQ5_0: quantize_q5_0(src, d, n); return;
    case DType::kQ5_1: quantize_q5_1(src, d, n); return;
    case DType::kQ8_0: quantize_q8_0(src, d, n); return;
    case DType::kQ4_K: quantize_q4_k(src, d, n); return;
    case DType::kQ5_K: quantize_q5_k(src, d, n); return;
    case DType::kQ6_K: quantize_q6_k(src, d, n); return;
    case DType::kQ2_K: quantize_q2_k(src, d, n); return;
    case DType::kQ3_K: quantize_q3_k(src, d, n); return;
    case DType::kIQ4_NL: quantize_iq4_nl(src, d, n); return;
    case DType::kIQ4_XS: quantize_iq4_xs(src, d, n); return;
    case DType::kMXFP4: quantize_mxfp4(src, d, n); return;
    default: return;
  }
}

}  // namespace omnibus
