// Reference codec of MXFP4 (quant_blocks.h): blocks of 32 four-bit E2M1
// codes sharing one E8M0 exponent. Dequantization is ggml's
// dequantize_row_mxfp4 (bit-identical values but for e = 0 and 1, see
// mxfp4_scale); quantization follows ggml's quantize_row_mxfp4_ref: the
// exponent from the block's largest magnitude, each value to its nearest
// level (the lower code on a tie), so a file we write holds what
// llama-quantize would write from the same floats (but for blocks of
// near-zeros below 1e-37, whose codes are rounded against a scale of 0).
#include <algorithm>
#include <cmath>

#include "tensor/quant_blocks.h"
#include "tensor/quant_rows.h"

namespace omnibus::quant_detail {
namespace {

int nearest_mxfp4_code(float x, float scale) {
  int best = 0;
  float best_err = std::fabs(static_cast<float>(kMxfp4Values[0]) * scale - x);
  for (int c = 1; c < 16; ++c) {
    const float err = std::fabs(static_cast<float>(kMxfp4Values[c]) * scale - x);
    if (err < best_err) best = c, best_err = err;
  }
  return best;
}

}  // namespace

void dequantize_mxfp4(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b) {
    const auto* blk = reinterpret_cast<const BlockMXFP4*>(src) + b;
    const float d = mxfp4_scale(blk->e);
    float* y = dst + b * kQK;
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = d * static_cast<float>(kMxfp4Values[blk->qs[j] & 0x0F]);
      y[j + kQK / 2] = d * static_cast<float>(kMxfp4Values[blk->qs[j] >> 4]);
    }
  }
}

void quantize_mxfp4(const float* src, uint8_t* dst, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b) {
    auto* blk = reinterpret_cast<BlockMXFP4*>(dst) + b;
    const float* x = src + b * kQK;
    float amax = 0.0f;
    for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[j]));
    // The largest magnitude's power of two lands on level 4 or above (the
    // levels reach 12 = 3 x 4), as ggml's floor(log2(amax)) - 2 + 127.
    const float e = amax > 0.0f ? std::floor(std::log2(amax)) - 2.0f + 127.0f : 0.0f;
    blk->e = static_cast<uint8_t>(std::clamp(e, 0.0f, 254.0f));
    const float d = mxfp4_scale(blk->e);
    for (int j = 0; j < kQK / 2; ++j)
      blk->qs[j] = static_cast<uint8_t>(nearest_mxfp4_code(x[j], d) | (nearest_mxfp4_code(x[j + kQK / 2], d) << 4));
  }
}

}  // namespace omnibus::quant_detail
