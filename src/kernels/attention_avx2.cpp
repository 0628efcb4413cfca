// AVX2+FMA attention_chunk: one chunk of one query row (see attention.h).
// Same two passes as the reference, vectorised:
//  * scores from transposed K (the paged store's layout): sixteen positions
//    at a time in two vectors for up to three heads sharing a KV head, one
//    FMA chain over d per score, q broadcast;
//  * scores from row-major K: four positions at a time for up to three heads
//    sharing a KV head (GQA), so each K vector is widened from f16 once for
//    all of them;
//    each score has an 8-lane accumulator over head_dim, reduced by one
//    fixed add tree ((l0+l1)+(l2+l3)) + ((l4+l5)+(l6+l7)); a position's
//    score does not depend on the group of four, the run or the heads it is
//    computed with, so results do not depend on how positions are split
//    into runs (KV blocks);
//  * softmax: a vector exp (Cephes-style range reduction and polynomial,
//    under 1 ulp on the range used) over the contiguous score buffer, each
//    numerator rounded to f16, summed in 8 lanes in position order;
//  * values: 32 output floats of up to three heads at a time, one FMA per
//    value element in position order (each V vector widened once for the
//    heads), left unnormalised (attention_finish divides by the sum);
//  * in the paged store's layout (K transposed, each KV head's blocks
//    apart), KV head by KV head: its scores while its V is fetched, its
//    softmax, its values while the next KV head's K is fetched, so each
//    pass pulls one stream from DRAM; other layouts prefetch the next
//    block while one is computed.
// Q and the softmax numerators are rounded to f16 as llama.cpp's CPU
// attention does: the golden tests agree with llama.cpp a little better so
// (docs/correctness.md).
// A q8_0 cache (int8 codes, f16 scale per 32 values) goes through its own
// score and value kernels: codes widened to f32 in registers, each group's
// partial dot scaled once (scores), the weight times the scale once per
// position (values).
// A bf16 cache goes through the f16 kernels with a cheaper widening
// (BF16Elements, attention_avx2_common.h). The building blocks are in
// attention_avx2_common.h and attention_avx2_kernels.h (Avx2Kernels), the
// order of the passes and prefetches in the ISA-neutral
// attention_chunk_driver.h (shared with the AVX-512 kernels,
// attention_avx512.cpp, which give the same bits), the two-row version in
// attention_pair_avx2.cpp.
// Requires head_dim % 8 == 0 (q8_0: % 32); attention.cpp falls back to the
// reference otherwise.
#include "kernels/attention.h"
#include "kernels/attention_avx2_kernels.h"
#include "kernels/attention_chunk_driver.h"

namespace omnibus::avx2 {

void attention_chunk(const AttentionShape& s, const float* q, std::span<const KvRun> runs, int64_t row_stride,
                     float* scores, const AttentionPartial& out, int head_begin, int head_end,
                     const ChunkAhead& ahead) {
  omnibus::attention_detail::attention_chunk_with<attention_detail::Avx2Kernels>(s, q, runs, row_stride, scores, out,
                                                                                 head_begin, head_end, ahead);
}

}  // namespace omnibus::avx2
