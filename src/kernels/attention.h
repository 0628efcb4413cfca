// Causal attention of one query row against the cached keys and values of
// its sequence. A row's positions are cut into chunks of kAttentionChunk,
// counted from the first position it sees (0, or the start of a
// sliding-window layer's window: the first of the runs passed); each chunk gets a two-pass softmax of its own
// (attention_chunk: scores, max, f16-rounded numerators, their sum and the
// unnormalised weighted sum of V), and the chunks are merged in position
// order (attention_merge, the flash-decoding rescale), then divided by the
// sum (attention_finish). The cut depends only on positions, so the result
// for a row depends only on that row and its sequence's cache: never on the
// rest of the batch, on how the prompt was chunked, on how its positions are
// split into KV blocks, or on which thread computed which chunk. A decode
// step can so hand one row's chunks to different threads and still match
// the prefill of the same row bit for bit. A row of at most kAttentionChunk
// positions is one chunk: the plain two-pass softmax (on the AVX2 path the
// same bits as before chunking; the reference now divides by the sum once
// at the end instead of scaling each weight).
// A scalar reference and SIMD versions of attention_chunk (AVX2+FMA in
// attention_avx2.cpp: vectorised scores, exp and value sums; AVX-512; NEON
// in attention_neon.cpp, with the avx2 bits) are
// reached through the process's kernel table (kernels/kernel_table.h),
// which names the one for each shape (resolve_attention).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>

#include "kernels/kv_quant.h"

namespace omnibus {

struct KernelTable;

struct AttentionShape {
  int n_head = 0;
  int n_head_kv = 0;  // n_head must be a multiple (GQA; 1 = MQA)
  int head_dim = 0;
  float scale = 1.0f;  // usually 1/sqrt(head_dim)
  // Elements from KV head h's vector of a position to head h + 1's. 0: the
  // heads sit side by side in one row of n_head_kv * head_dim (head_dim
  // apart). The paged KV store keeps each head's positions of a block
  // together instead (PagedKvStore::head_stride(layer)).
  int64_t kv_head_stride = 0;
  // K's layout. 0: like V, a position's head_dim values are contiguous and
  // positions are `row_stride` apart. Otherwise K is stored transposed: a
  // run's positions of one (head, dimension) are contiguous and dimension d
  // is d * k_dim_stride further (the paged store keeps each block's K as
  // [kv_head][head_dim][offset]: k_dim_stride = block_size). Transposed K
  // lets the AVX2 scores put eight positions in one vector (a chain of FMAs
  // over d per score, no horizontal adds). The two layouts sum each score
  // in a different order, so they do not give the same bits.
  int64_t k_dim_stride = 0;
  // q8_0 runs (KvRun::k_q etc.): K must be transposed (k_dim_stride != 0)
  // and head_dim a multiple of kKvQ8Group. K's scales mirror its codes with
  // one entry per group instead of per dimension: group g of KV head h,
  // position j at k_scale + h * scale_head_stride + g * k_dim_stride + j. V's
  // scales are laid out as K's (eight positions' scales in one vector).
  // q4_0 runs (KvRun::k_q, v_q point at packed bytes, kernels/kv_quant.h):
  // K transposed in octets, head_dim a multiple of kKvQ8Group; the strides
  // above still count elements and a byte holds two, so KV head h's bytes
  // are h * kv_head_stride / 2 further, octet o's 4 * o * k_dim_stride, a
  // position's 4 (K) or row_stride / 2 (V) further. Scales as q8_0's.
  KvCacheType kv_type = KvCacheType::kF16;
  int64_t scale_head_stride = 0;
  // Attention sinks (gpt-oss): one learned logit per head, n_head floats,
  // that joins each head's softmax as a position with no value: it takes
  // its share of the weight and gives nothing back. Null: none. Applied
  // once per row, when the merged chunks are divided by their sum
  // (attention_finish), so chunking and threading still give the same bits.
  const float* sinks = nullptr;
  // The sinks of heads [head_begin, ...), or null.
  const float* sinks_from(int head_begin) const { return sinks != nullptr ? sinks + head_begin : nullptr; }
  int64_t kv_head_step() const { return kv_head_stride != 0 ? kv_head_stride : head_dim; }
  // Elements from a position's K to the next position's.
  int64_t k_position_step(int64_t row_stride) const { return k_dim_stride != 0 ? 1 : row_stride; }
  // What a run's K and V pointers move per position (elements; q4_0 bytes).
  int64_t k_run_step(int64_t row_stride) const {
    return kv_type == KvCacheType::kQ4_0 ? 4 : k_position_step(row_stride);
  }
  int64_t v_run_step(int64_t row_stride) const { return kv_type == KvCacheType::kQ4_0 ? row_stride / 2 : row_stride; }
};

// Reads of transposed K may run up to this many elements past a run's last
// position (whole vectors of eight positions); buffers holding transposed
// K must have that much readable memory after their last element.
inline constexpr int64_t kTransposedKeyOverread = 16;

// q: n_head*head_dim floats. k, v: n_kv positions of IEEE f16 (raw bits, as
// the KV cache stores them), `row_stride` elements apart, KV head h of a
// position at + h * shape.kv_head_step(). scores: scratch for (head_end - head_begin) *
// min(n_kv, kAttentionChunk) floats. out: n_head*head_dim.
// Heads [head_begin, head_end) only, so callers can split heads over threads.
void attention_row(const AttentionShape& shape, const float* q, const uint16_t* k, const uint16_t* v,
                   int64_t row_stride, int64_t n_kv, float* scores, float* out, int head_begin, int head_end);

// Positions per softmax chunk (see the top of this file). 256 keeps one
// chunk's scores of 16 heads (16 KB) in L1 and leaves a 2,048-position
// decode row eight chunks to share out over threads; rows up to 256
// positions (most of the golden tests) are a single chunk.
inline constexpr int64_t kAttentionChunk = 256;

// `count` consecutive cached positions whose keys and values start at k
// and v (f16 bits), `row_stride` elements apart (KV heads
// shape.kv_head_step() apart): one block of a paged KV store, or part of
// one.
// A q8_0 cache fills k_q, v_q (codes, laid out as the f16 elements would
// be) and k_scale, v_scale (AttentionShape says where each scale is) instead
// of k and v; a q4_0 cache the same members with its packed bytes.
struct KvRun {
  const uint16_t* k = nullptr;
  const uint16_t* v = nullptr;
  int64_t count = 0;
  const int8_t* k_q = nullptr;
  const int8_t* v_q = nullptr;
  const uint16_t* k_scale = nullptr;
  const uint16_t* v_scale = nullptr;
};

// Room for up to N runs on the stack that is not zeroed at every call, as
// an array of KvRun would be (its members have initializers): the
// kernels' chunk buffers hold kAttentionChunk runs, 14 KB, and clearing
// them per call and chunk showed as ~1% of a prefill in memset. Entries
// are written (slice_runs, assignment) before they are read.
template <size_t N>
class KvRunScratch {
 public:
  static_assert(std::is_trivially_copyable_v<KvRun> && std::is_trivially_destructible_v<KvRun>);
  KvRun* data() { return reinterpret_cast<KvRun*>(storage_); }

 private:
  alignas(KvRun) unsigned char storage_[N * sizeof(KvRun)];
};

// attention_row over positions split into runs, in position order (the
// positions are run 0's, then run 1's, ...): the chunks of the row one after
// another, each merged into the output as it is done. The arithmetic and its
// order are exactly attention_row's, so the result is bit-identical to
// attention_row on the same positions laid out contiguously, and a head's
// output does not depend on which other heads the call covers. scores:
// scratch for (head_end - head_begin) x min(positions, kAttentionChunk)
// floats. Covering a whole GQA group in one call lets the heads share each
// KV block's reads.
void attention_row_paged(const AttentionShape& shape, const float* q, std::span<const KvRun> runs,
                         int64_t row_stride, float* scores, float* out, int head_begin, int head_end);

// One chunk's softmax state for heads [head_begin, head_end), head i of
// the call (counted from head_begin) at acc + i * head_dim, max[i], sum[i]:
// max is the chunk's largest score, p_j = e^(s_j - max) rounded to f16,
// sum = sum of p_j, acc = sum of p_j * v_j (not yet divided by sum).
struct AttentionPartial {
  float* acc = nullptr;
  float* max = nullptr;
  float* sum = nullptr;
};

// What a caller computes after a chunk: the runs of its next chunk and the
// first KV head it takes there (kv < 0: nothing). While the chunk's last
// KV head computes, that KV head's K and V are fetched into L2 (the
// AVX-512 kernels with a 16-bit cache; decode at long context, where each
// thread computes several chunks of a row in turn).
struct ChunkAhead {
  std::span<const KvRun> runs;
  int kv = -1;
};

// The chunk's partial for heads [head_begin, head_end). runs: the chunk's
// positions (1..kAttentionChunk of them) in order. scores: scratch for
// (head_end - head_begin) x the chunk's positions. `ahead` changes only
// what is prefetched, never the result.
void attention_chunk(const AttentionShape& shape, const float* q, std::span<const KvRun> runs, int64_t row_stride,
                     float* scores, const AttentionPartial& out, int head_begin, int head_end,
                     const ChunkAhead& ahead = {});

// Folds `next`, the partial of the chunk after those already in `state`, into
// `state`, for `heads` heads: M = max of the two maxima, each side scaled by
// e^(its max - M). One function for every caller, so every path merges with
// the same arithmetic.
void attention_merge(int head_dim, int heads, const AttentionPartial& next, const AttentionPartial& state);

// out[i * head_dim + d] = state.acc[i * head_dim + d] * (1 / state.sum[i]);
// with sinks (the heads' own, AttentionShape::sinks_from), head i's sum
// counts e^(sinks[i] - max) too, taken about the larger of the two so a
// sink far above the scores cannot overflow. out may be state.acc.
void attention_finish(int head_dim, int heads, const AttentionPartial& state, float* out, const float* sinks = nullptr);

// The non-empty runs covering positions [first, first + count) of `runs`
// (positions in run order), cut at both ends; writes them to `out` (room
// for min(runs.size(), count) entries) and returns how many. K and V
// pointers (f16 or q8_0 codes) move k_step and v_step elements per
// position; q8_0 scales move one element per position (q8_0 K is always
// transposed, and its and V's scales are laid out alike).
size_t slice_runs(std::span<const KvRun> runs, int64_t first, int64_t count, int64_t k_step, int64_t v_step,
                  KvRun* out);

// attention_row_paged with `chunk` computing each chunk (tests run it on
// each implementation); attention_row_paged passes attention_chunk.
using AttentionChunkFn = void (*)(const AttentionShape&, const float*, std::span<const KvRun>, int64_t, float*,
                                  const AttentionPartial&, int, int, const ChunkAhead&);
void attention_row_paged_with(AttentionChunkFn chunk, const AttentionShape& shape, const float* q,
                              std::span<const KvRun> runs, int64_t row_stride, float* scores, float* out,
                              int head_begin, int head_end);

// Two rows of one sequence, row 1 one position further: `runs` hold row 1's
// n positions, row 0 sees the first n - 1 (consecutive prompt rows in
// prefill). Computed together, so each K and V vector widened from f16
// serves both rows' heads: on Zen 1 the widening costs about as much as the
// multiply-adds it feeds (docs/profiling.md), and a single decode row can
// share it only across the heads of a GQA group. Each row's output is
// bit-identical to attention_row_paged's for that row (same kernels per
// score and output float, same chunks, same merges). Only where
// attention_pairs_supported(shape); scores: scratch for 2 x (head_end -
// head_begin) x min(n, kAttentionChunk) floats.
bool attention_pairs_supported(const AttentionShape& shape);
void attention_row_pair_paged(const AttentionShape& shape, const float* q0, const float* q1,
                              std::span<const KvRun> runs, int64_t row_stride, float* scores, float* out0,
                              float* out1, int head_begin, int head_end);

// One chunk of two rows of different sequences over the same positions (a
// shared cached prefix): each row's partial bit-identical to
// attention_chunk's for that row, each K and V vector read once for both.
// Only where attention_pairs_supported(shape); heads [head_begin,
// head_end) at most 16; scores: scratch for 2 x heads x positions floats.
void attention_chunk_shared(const AttentionShape& shape, const float* q0, const float* q1, std::span<const KvRun> runs,
                            int64_t row_stride, float* scores, const AttentionPartial& out0,
                            const AttentionPartial& out1, int head_begin, int head_end);

// Two rows of different sequences whose first `shared` positions (from the
// first of their runs) are the same cached K and V: a prompt prefix both
// took from the prefix cache, as in a batched decode step of requests that
// share a system prompt. The chunks wholly inside the shared prefix are
// computed for both rows at once with the pair kernel (each K and V vector
// read once for both rows' heads, where two separate rows read it twice
// from DRAM), the other chunks row by row. Each row's output is
// bit-identical to attention_row_paged's for that row (same chunks, same
// kernels per float, same merges). Only where attention_pairs_supported;
// scores: scratch for 2 x (head_end - head_begin) x min(positions,
// kAttentionChunk) floats.
void attention_rows_shared_prefix(const AttentionShape& shape, const float* q0, std::span<const KvRun> runs0,
                                  const float* q1, std::span<const KvRun> runs1, int64_t shared, int64_t row_stride,
                                  float* scores, float* out0, float* out1, int head_begin, int head_end);

// avx2:: / avx512::attention_chunk_pair's signature.
using AttentionChunkPairFn = void (*)(const AttentionShape&, const float*, const float*, std::span<const KvRun>,
                                      int64_t, int64_t, float*, const AttentionPartial&, const AttentionPartial&, int,
                                      int);

// The two implementations behind attention_chunk, for tests.
namespace ref {
void attention_chunk(const AttentionShape& shape, const float* q, std::span<const KvRun> runs, int64_t row_stride,
                     float* scores, const AttentionPartial& out, int head_begin, int head_end,
                     const ChunkAhead& ahead = {});
}  // namespace ref
// The AVX2 path's limit on head_dim (Q is copied to a stack buffer).
inline constexpr int kMaxHeadDim = 256;

// The per-ISA kernels the tables in kernel_table.cpp hold; call them only
// through a table (resolve_attention), which knows the CPU and shapes they
// need. AVX2+FMA: head_dim % 8 == 0 (q8_0, q4_0: % 32) and head_dim <=
// kMaxHeadDim.
namespace avx2 {
void attention_chunk(const AttentionShape& shape, const float* q, std::span<const KvRun> runs, int64_t row_stride,
                     float* scores, const AttentionPartial& out, int head_begin, int head_end,
                     const ChunkAhead& ahead = {});
// One chunk of attention_row_pair_paged: row 1 over all the runs' positions,
// row 0 over the first count0 (>= 1) of them. Transposed K (f16, bf16, q8_0)
// only; heads [head_begin, head_end) at most 16.
void attention_chunk_pair(const AttentionShape& shape, const float* q0, const float* q1, std::span<const KvRun> runs,
                          int64_t count0, int64_t row_stride, float* scores, const AttentionPartial& out0,
                          const AttentionPartial& out1, int head_begin, int head_end);
}  // namespace avx2

// The AVX-512F versions of avx2::attention_chunk and attention_chunk_pair
// (attention_avx512.cpp, attention_pair_avx512.cpp): the same bits, wider
// inner loops; head_dim % 16 == 0 (q8_0, q4_0: % 32).
namespace avx512 {
void attention_chunk(const AttentionShape& shape, const float* q, std::span<const KvRun> runs, int64_t row_stride,
                     float* scores, const AttentionPartial& out, int head_begin, int head_end,
                     const ChunkAhead& ahead = {});
void attention_chunk_pair(const AttentionShape& shape, const float* q0, const float* q1, std::span<const KvRun> runs,
                          int64_t count0, int64_t row_stride, float* scores, const AttentionPartial& out0,
                          const AttentionPartial& out1, int head_begin, int head_end);
}  // namespace avx512
// The same built with AVX-512 VNNI (the q4_0 cache's scores; same bits).
namespace avx512vnni {
void attention_chunk(const AttentionShape& shape, const float* q, std::span<const KvRun> runs, int64_t row_stride,
                     float* scores, const AttentionPartial& out, int head_begin, int head_end,
                     const ChunkAhead& ahead = {});
}  // namespace avx512vnni
// The NEON version of avx2::attention_chunk (attention_neon.cpp, aarch64
// builds only): the same bits on every cache type and layout; no pair
// kernel.
namespace neon {
void attention_chunk(const AttentionShape& shape, const float* q, std::span<const KvRun> runs, int64_t row_stride,
                     float* scores, const AttentionPartial& out, int head_begin, int head_end,
                     const ChunkAhead& ahead = {});
}  // namespace neon
// The entry points above (attention_row, attention_row_paged,
// attention_chunk, attention_pairs_supported, attention_row_pair_paged,
// attention_chunk_shared, attention_rows_shared_prefix) with `table`'s
// kernels for the shape (resolve_attention): a runner passes its own. The
// overloads without a table take the process's (kernels()), for tests and
// tools.
void attention_row(const KernelTable& table, const AttentionShape& shape, const float* q, const uint16_t* k,
                   const uint16_t* v, int64_t row_stride, int64_t n_kv, float* scores, float* out, int head_begin,
                   int head_end);
void attention_row_paged(const KernelTable& table, const AttentionShape& shape, const float* q,
                         std::span<const KvRun> runs, int64_t row_stride, float* scores, float* out, int head_begin,
                         int head_end);
void attention_chunk(const KernelTable& table, const AttentionShape& shape, const float* q, std::span<const KvRun> runs,
                     int64_t row_stride, float* scores, const AttentionPartial& out, int head_begin, int head_end,
                     const ChunkAhead& ahead = {});
bool attention_pairs_supported(const KernelTable& table, const AttentionShape& shape);
void attention_row_pair_paged(const KernelTable& table, const AttentionShape& shape, const float* q0, const float* q1,
                              std::span<const KvRun> runs, int64_t row_stride, float* scores, float* out0, float* out1,
                              int head_begin, int head_end);
void attention_chunk_shared(const KernelTable& table, const AttentionShape& shape, const float* q0, const float* q1,
                            std::span<const KvRun> runs, int64_t row_stride, float* scores,
                            const AttentionPartial& out0, const AttentionPartial& out1, int head_begin, int head_end);
void attention_rows_shared_prefix(const KernelTable& table, const AttentionShape& shape, const float* q0,
                                  std::span<const KvRun> runs0, const float* q1, std::span<const KvRun> runs1,
                                  int64_t shared, int64_t row_stride, float* scores, float* out0, float* out1,
                                  int head_begin, int head_end);

// The kernels one table (kernels/kernel_table.h) runs a shape with: the
// table's own, or those of the first table down its attention_fallback
// chain that takes the shape (the scalar table takes every shape). pair is
// null where the shape has no pair kernel (attention_pairs_supported).
struct ResolvedAttention {
  const char* name;  // the table whose kernels these are
  AttentionChunkFn chunk;
  AttentionChunkPairFn pair;
};
ResolvedAttention resolve_attention(const KernelTable& table, const AttentionShape& shape);
// The table whose attention kernels a model with this head size and cache
// type runs in this process (kernels()), for --verbose.
const char* attention_path_name(int head_dim, KvCacheType kv_type);

}  // namespace omnibus
