// attention_avx512.cpp's attention_chunk built with AVX-512 VNNI: the q4_0
// cache's integer score sums take `vpdpbusd` (attention_avx512_kernels.h,
// score_heads_q4), the same integers, so the same bits. Only called where
// avx512vnni_attention_usable (attention.cpp).
#include "kernels/attention_avx512_kernels.h"
#include "kernels/attention_chunk_driver.h"

namespace omnibus::avx512vnni {

void attention_chunk(const AttentionShape& s, const float* q, std::span<const KvRun> runs, int64_t row_stride,
                     float* scores, const AttentionPartial& out, int head_begin, int head_end,
                     const ChunkAhead& ahead) {
  omnibus::attention_detail::attention_chunk_with<avx512::Avx512Kernels>(s, q, runs, row_stride, scores, out,
                                                                         head_begin, head_end, ahead);
}

}  // namespace omnibus::avx512vnni
