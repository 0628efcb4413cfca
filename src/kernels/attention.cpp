#include "kernels/attention.h"

#include <cmath>
#include <cstring>

#include "kernels/ops.h"

namespace omnibus {

void attention_row(const AttentionShape& s, const float* q, const float* k, const float* v, int64_t row_stride,
                   int64_t n_kv, float* scores, float* out, int head_begin, int head_end) {
  const KvRun whole{k, v, n_kv};
  attention_row_paged(s, q, std::span(&whole, 1), row_stride, scores, out, head_begin, head_end);
}

void attention_row_paged(const AttentionShape& s, const float* q, std::span<const KvRun> runs, int64_t row_stride,
                         float* scores, float* out, int head_begin, int head_end) {
  const int group = s.n_head / s.n_head_kv;
  for (int h = head_begin; h < head_end; ++h) {
    const int64_t kv_offset = static_cast<int64_t>(h / group) * s.head_dim;
    const float* qh = q + static_cast<int64_t>(h) * s.head_dim;
    float max_score = -INFINITY;
    int64_t n_kv = 0;
    for (const KvRun& run : runs) {
      for (int64_t j = 0; j < run.count; ++j, ++n_kv) {
        scores[n_kv] = dot_f32(qh, run.k + j * row_stride + kv_offset, s.head_dim) * s.scale;
        if (scores[n_kv] > max_score) max_score = scores[n_kv];
      }
    }
    float sum = 0.0f;
    for (int64_t j = 0; j < n_kv; ++j) {
      scores[j] = std::exp(scores[j] - max_score);
      sum += scores[j];
    }
    float* oh = out + static_cast<int64_t>(h) * s.head_dim;
    std::memset(oh, 0, sizeof(float) * s.head_dim);
    const float inv_sum = 1.0f / sum;
    const float* p = scores;
    for (const KvRun& run : runs) {
      for (int64_t j = 0; j < run.count; ++j, ++p)
        axpy_f32(*p * inv_sum, run.v + j * row_stride + kv_offset, oh, s.head_dim);
    }
  }
}

}  // namespace omnibus
