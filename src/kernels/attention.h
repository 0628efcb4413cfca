// Causal attention of one query row against the cached keys and values of
// its sequence. Plain two-pass softmax over positions in order: the result
// for a row depends only on that row and its sequence's cache, never on the
// rest of the batch or on how the prompt was chunked.
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

// q: n_head*head_dim floats. k, v: n_kv rows, `row_stride` floats apart, each
// n_head_kv*head_dim. scores: scratch for n_kv floats. out: n_head*head_dim.
// Heads [head_begin, head_end) only, so callers can split heads over threads.
void attention_row(const AttentionShape& shape, const float* q, const float* k, const float* v,
                   int64_t row_stride, int64_t n_kv, float* scores, float* out, int head_begin, int head_end);

// `count` consecutive cached positions whose key and value rows start at k
// and v, `row_stride` floats apart: one block of a paged KV store.
struct KvRun {
  const float* k = nullptr;
  const float* v = nullptr;
  int64_t count = 0;
};

// attention_row over positions split into runs, in position order (the
// positions are run 0's, then run 1's, ...). The arithmetic and its order are
// exactly attention_row's, so the result is bit-identical to attention_row on
// the same positions laid out contiguously. scores: scratch for the total
// count of positions.
void attention_row_paged(const AttentionShape& shape, const float* q, std::span<const KvRun> runs,
                         int64_t row_stride, float* scores, float* out, int head_begin, int head_end);

}  // namespace omnibus
