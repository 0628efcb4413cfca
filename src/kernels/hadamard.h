// The orthonormal Walsh-Hadamard rotation H (n a power of two, H = H^T,
// H H = I) that a quantized KV cache applies along each head vector, as
// llama.cpp does for its quantized caches since its PR 21038
// (src/llama-kv-cache.cpp, attn_rot_k / attn_rot_v): Q and K are rotated
// before K is stored (scores are unchanged, q.k = (Hq).(Hk)), V before it is
// stored, and the attention output rotated back. The rotation spreads a
// head's outlier dimensions over all of them, so a 32-value quantization
// group no longer has one value setting a scale the rest cannot use: on
// SmolLM2 with a q4_0 cache, perplexity over the golden text went from
// +15.7% to +3.7% over the f16 cache's (llama.cpp's own q4_0 cache: +2.7%;
// docs/correctness.md).
#pragma once

#include <cstdint>

namespace omnibus {

struct KernelTable;  // kernels/kernel_table.h

// llama.cpp's sizes: K (and Q) in blocks of the largest power of two from
// 64 up that divides head_dim, V (and the output) in blocks of 64; 0 (no
// rotation) unless head_dim is a multiple of 64.
int hadamard_key_block(int head_dim);
int hadamard_value_block(int head_dim);

// x[0 .. count * n) := each n-value block times H: the fast transform's
// log2(n) butterfly stages, then times 1/sqrt(n). Per block, so the result
// never depends on how many blocks a call covers. With `table`'s kernels
// (a runner passes its own), or the process's (kernels()).
void hadamard_blocks(const KernelTable& table, float* x, int64_t count, int n);
void hadamard_blocks(float* x, int64_t count, int n);

// The two implementations behind hadamard_blocks (the same bits), for
// tests; avx2's only where cpu_features().has_avx2_fma(), n a multiple of 8.
namespace ref {
void hadamard_blocks(float* x, int64_t count, int n);
}
namespace avx2 {
void hadamard_blocks(float* x, int64_t count, int n);
}

}  // namespace omnibus
