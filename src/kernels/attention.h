// Causal attention of one query row against the cached keys and values of
// its sequence. Two-pass softmax over positions in order: the result for a
// row depends only on that row and its sequence's cache, never on the rest
// of the batch, on how the prompt was chunked, or on how its positions are
// split into KV blocks. A scalar reference and an AVX2+FMA version
// (attention_avx2.cpp: vectorised scores, exp and value sums; head_dim a
// multiple of 8) are picked once from the CPU's features.
#pragma once

#include <cstdint>
#include <span>

namespace omnibus {

struct AttentionShape {
  int n_head = 0;
  int n_head_kv = 0;  // n_head must be a multiple (GQA; 1 = MQA)
  int head_dim = 0;
  float scale = 1.0f;  // usually 1/sqrt(head_dim)
};

// q: n_head*head_dim floats. k, v: n_kv rows of IEEE f16 (raw bits, as the
// KV cache stores them), `row_stride` elements apart, each
// n_head_kv*head_dim. scores: scratch for (head_end - head_begin) * n_kv
// floats. out: n_head*head_dim.
// Heads [head_begin, head_end) only, so callers can split heads over threads.
void attention_row(const AttentionShape& shape, const float* q, const uint16_t* k, const uint16_t* v,
                   int64_t row_stride, int64_t n_kv, float* scores, float* out, int head_begin, int head_end);

// `count` consecutive cached positions whose key and value rows start at k
// and v (f16 bits), `row_stride` elements apart: one block of a paged KV
// store.
struct KvRun {
  const uint16_t* k = nullptr;
  const uint16_t* v = nullptr;
  int64_t count = 0;
};

// attention_row over positions split into runs, in position order (the
// positions are run 0's, then run 1's, ...). The arithmetic and its order are
// exactly attention_row's, so the result is bit-identical to attention_row on
// the same positions laid out contiguously, and a head's output does not
// depend on which other heads the call covers. scores: scratch for
// (head_end - head_begin) x the total count of positions. Covering a whole
// GQA group in one call lets the heads share each KV block's reads.
void attention_row_paged(const AttentionShape& shape, const float* q, std::span<const KvRun> runs,
                         int64_t row_stride, float* scores, float* out, int head_begin, int head_end);

// The two implementations behind attention_row_paged, for tests.
namespace ref {
void attention_row_paged(const AttentionShape& shape, const float* q, std::span<const KvRun> runs,
                         int64_t row_stride, float* scores, float* out, int head_begin, int head_end);
}  // namespace ref
// The AVX2 path's limit on head_dim (Q is copied to a stack buffer).
inline constexpr int kMaxHeadDim = 256;

// Only call when cpu_features().has_avx2_fma(), head_dim % 8 == 0 and
// head_dim <= kMaxHeadDim.
namespace avx2 {
void attention_row_paged(const AttentionShape& shape, const float* q, std::span<const KvRun> runs,
                         int64_t row_stride, float* scores, float* out, int head_begin, int head_end);
}  // namespace avx2

}  // namespace omnibus
