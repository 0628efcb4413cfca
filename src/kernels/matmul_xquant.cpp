// Activation quantization for the int8 matmul kernels (portable code: every
// path uses these exact bytes, so the x side never differs between paths).
#include <algorithm>
#include <cmath>

#include "kernels/matmul_internal.h"

namespace omnibus::matmul_detail {
namespace {

// Round to nearest (ties to even) into [-127, 127]. NaN maps to -127 rather
// than reaching an undefined float-to-int conversion.
inline int8_t round_q(float v) {
  v = v >= -127.0f ? (v <= 127.0f ? v : 127.0f) : -127.0f;
  constexpr float kMagic = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  return static_cast<int8_t>(static_cast<int>((v + kMagic) - kMagic));
}

// Quantizes n values with one scale (largest magnitude -> 127); returns it.
float quantize_block(const float* x, int n, int8_t* q) {
  float amax = 0.0f;
  for (int k = 0; k < n; ++k) amax = std::max(amax, std::fabs(x[k]));
  const float scale = amax / 127.0f;
  const float inv = scale > 0.0f ? 1.0f / scale : 0.0f;
  for (int k = 0; k < n; ++k) q[k] = round_q(x[k] * inv);
  return scale;
}

}  // namespace

int legacy_bias(DType t) {
  switch (t) {
    case DType::kQ4_0: return 8;
    case DType::kQ5_0: return 16;
    default: return 0;
  }
}

ActFormat act_format(DType t) {
#ifdef OMNIBUS_FLOAT_ACTIVATIONS
  // Accuracy experiments only: every type multiplies float activations
  // (quantized weights then take the slow portable path).
  return ActFormat::kFloat;
#endif
  switch (t) {
    case DType::kQ4_0:
    case DType::kQ4_1:
    case DType::kQ5_0:
    case DType::kQ5_1:
    case DType::kQ8_0:
    case DType::kIQ4_NL:
    case DType::kMXFP4: return ActFormat::kQ8x32;
    case DType::kQ2_K:
    case DType::kQ3_K:
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K:
    case DType::kIQ4_XS: return ActFormat::kQ8x256;
    default: return ActFormat::kFloat;
  }
}

void shape_quantized_x(DType t, int64_t n_x, int64_t cols, QuantizedX* out) {
  const ActFormat format = act_format(t);
  out->format = format;
  out->n_x = n_x;
  out->cols = cols;
  out->blocks = cols / (format == ActFormat::kQ8x256 ? 256 : 32);
  const int64_t total_blocks = n_x * out->blocks;
  out->q.resize(static_cast<size_t>(n_x * cols));
  out->scale.resize(static_cast<size_t>(total_blocks));
  if (format == ActFormat::kQ8x32) {
    out->scaled_sum.resize(static_cast<size_t>(total_blocks));
    out->block_sum.resize(static_cast<size_t>(total_blocks));
    out->bias_lanes.resize(legacy_bias(t) != 0 ? static_cast<size_t>(total_blocks * 8) : 0);
    out->bias_sum.resize(legacy_bias(t) != 0 ? static_cast<size_t>(total_blocks) : 0);
  } else {
    out->sums16.resize(static_cast<size_t>(total_blocks * 16));
  }
}

void quantize_x(DType t, const float* x, int64_t n_x, int64_t cols, QuantizedX* out) {
  shape_quantized_x(t, n_x, cols, out);
  quantize_x_rows(t, x, 0, n_x, out);
}

void quantize_x_rows(DType t, const float* x, int64_t begin, int64_t end, QuantizedX* out) {
  const int64_t cols = out->cols;
  const int block = out->format == ActFormat::kQ8x256 ? 256 : 32;
  const int bias = legacy_bias(t);
  for (int64_t r = begin; r < end; ++r) {
    for (int64_t b = 0; b < out->blocks; ++b) {
      const int64_t idx = r * out->blocks + b;
      int8_t* q = out->q.data() + r * cols + b * block;
      const float scale = quantize_block(x + r * cols + b * block, block, q);
      out->scale[static_cast<size_t>(idx)] = scale;
      if (out->format == ActFormat::kQ8x32) {
        int sum = 0;
        for (int lane = 0; lane < 8; ++lane) {
          const int lane_sum = q[4 * lane] + q[4 * lane + 1] + q[4 * lane + 2] + q[4 * lane + 3];
          sum += lane_sum;
          if (bias != 0) out->bias_lanes[static_cast<size_t>(idx * 8 + lane)] = bias * lane_sum;
        }
        out->scaled_sum[static_cast<size_t>(idx)] = scale * static_cast<float>(sum);
        out->block_sum[static_cast<size_t>(idx)] = sum;
        if (bias != 0) out->bias_sum[static_cast<size_t>(idx)] = bias * sum;
      } else {
        for (int g = 0; g < 16; ++g) {
          int sum = 0;
          for (int k = 0; k < 16; ++k) sum += q[16 * g + k];
          out->sums16[static_cast<size_t>(idx * 16 + g)] = static_cast<int16_t>(sum);
        }
      }
    }
  }
}

}  // namespace omnibus::matmul_detail
