// AVX-512F attention_chunk: the AVX2 path's driver (attention_chunk_driver.h)
// with the sixteen-lane inner loops of attention_avx512_kernels.h, which
// give the same bits per float. Only called where avx512_attention_usable
// (attention.cpp).
#include "kernels/attention_avx512_kernels.h"
#include "kernels/attention_chunk_driver.h"

namespace omnibus::avx512 {

void attention_chunk(const AttentionShape& s, const float* q, std::span<const KvRun> runs, int64_t row_stride,
                     float* scores, const AttentionPartial& out, int head_begin, int head_end,
                     const ChunkAhead& ahead) {
  omnibus::attention_detail::attention_chunk_with<Avx512Kernels>(s, q, runs, row_stride, scores, out, head_begin,
                                                                 head_end, ahead);
}

}  // namespace omnibus::avx512
