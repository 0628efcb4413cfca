#include "kernels/attention.h"

#include <cmath>
#include <cstring>

#include "base/cpu_features.h"
#include "tensor/quant.h"

namespace omnibus {

void attention_row(const AttentionShape& s, const float* q, const uint16_t* k, const uint16_t* v, int64_t row_stride,
                   int64_t n_kv, float* scores, float* out, int head_begin, int head_end) {
  const KvRun whole{k, v, n_kv};
  attention_row_paged(s, q, std::span(&whole, 1), row_stride, scores, out, head_begin, head_end);
}

void attention_row_paged(const AttentionShape& s, const float* q, std::span<const KvRun> runs, int64_t row_stride,
                         float* scores, float* out, int head_begin, int head_end) {
  static const bool use_avx2 = cpu_features().has_avx2_fma();
  if (use_avx2 && s.head_dim % 8 == 0 && s.head_dim <= kMaxHeadDim) {
    avx2::attention_row_paged(s, q, runs, row_stride, scores, out, head_begin, head_end);
  } else {
    ref::attention_row_paged(s, q, runs, row_stride, scores, out, head_begin, head_end);
  }
}

namespace ref {

// The plain loops: one scalar dot per position, libm exp, one scaled add
// per position; f16 elements widened one at a time. Q and the softmax
// numerators are rounded to f16 (as llama.cpp's CPU attention does).
void attention_row_paged(const AttentionShape& s, const float* q, std::span<const KvRun> runs, int64_t row_stride,
                         float* scores, float* out, int head_begin, int head_end) {
  const int group = s.n_head / s.n_head_kv;
  for (int h = head_begin; h < head_end; ++h) {
    const int64_t kv_offset = static_cast<int64_t>(h / group) * s.head_dim;
    // Q rounded to f16 once per head, into this head's output slice (free
    // until the value pass below).
    const float* qsrc = q + static_cast<int64_t>(h) * s.head_dim;
    float* oh = out + static_cast<int64_t>(h) * s.head_dim;
    for (int d = 0; d < s.head_dim; ++d) oh[d] = f16_to_f32(f32_to_f16(qsrc[d]));
    const float* qh = oh;
    float max_score = -INFINITY;
    int64_t n_kv = 0;
    for (const KvRun& run : runs) {
      for (int64_t j = 0; j < run.count; ++j, ++n_kv) {
        const uint16_t* kj = run.k + j * row_stride + kv_offset;
        float dot = 0.0f;
        for (int d = 0; d < s.head_dim; ++d) dot += qh[d] * f16_to_f32(kj[d]);
        scores[n_kv] = dot * s.scale;
        if (scores[n_kv] > max_score) max_score = scores[n_kv];
      }
    }
    float sum = 0.0f;
    for (int64_t j = 0; j < n_kv; ++j) {
      scores[j] = f16_to_f32(f32_to_f16(std::exp(scores[j] - max_score)));
      sum += scores[j];
    }
    std::memset(oh, 0, sizeof(float) * s.head_dim);
    const float inv_sum = 1.0f / sum;
    const float* p = scores;
    for (const KvRun& run : runs) {
      for (int64_t j = 0; j < run.count; ++j, ++p) {
        const uint16_t* vj = run.v + j * row_stride + kv_offset;
        const float w = *p * inv_sum;
        for (int d = 0; d < s.head_dim; ++d) oh[d] += w * f16_to_f32(vj[d]);
      }
    }
  }
}

}  // namespace ref

}  // namespace omnibus
