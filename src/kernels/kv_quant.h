// The q8_0 KV cache format (--kv-type q8_0): each group of kKvQ8Group
// consecutive values of one head's vector is stored as int8 codes and one
// f16 scale d = max|x| / 127, x ~ d * code (ggml's q8_0 block, split so the
// codes and scales can be laid out apart: K's codes transposed like the f16
// cache's K, the scales beside them). 34 bytes per 32 values against 64 for
// f16: twice the context per MiB and half the bytes attention reads.
#pragma once

#include <cstdint>

namespace omnibus {

// How the cache stores K and V: IEEE f16 (the default, as llama.cpp's),
// q8_0 (below), or bf16. bf16 takes the f16 layout and size and keeps 8
// mantissa bits instead of 11; its point is speed: widening bf16 to f32 is
// a shift or a mask, where vcvtph2ps costs three FMAs' time on Zen 1 and
// bounds long-context attention (docs/profiling.md).
enum class KvCacheType : uint8_t { kF16, kQ8_0, kBF16 };

// "f16" / "q8_0" / "bf16", as --kv-type spells them.
const char* kv_cache_type_name(KvCacheType type);
// The type --kv-type `name` stands for; false for a name it does not know.
bool parse_kv_cache_type(const char* name, KvCacheType* type);

inline constexpr int kKvQ8Group = 32;

// Quantizes x[0..n) (n a multiple of kKvQ8Group): code i goes to
// codes[i * code_stride], the scale of group g to scales[g * scale_stride]
// (f16 bits). Codes are x times the unrounded scale's inverse, rounded to
// nearest even (as ggml's AVX2 q8_0 quantizer); an all-zero group gets scale
// 0 and codes 0. The scalar and AVX2 versions give the same bytes.
void quantize_kv_q8(const float* x, int64_t n, int8_t* codes, int64_t code_stride, uint16_t* scales,
                    int64_t scale_stride);
namespace ref {
void quantize_kv_q8(const float* x, int64_t n, int8_t* codes, int64_t code_stride, uint16_t* scales,
                    int64_t scale_stride);
}
// Only call when cpu_features().has_avx2_fma().
namespace avx2 {
void quantize_kv_q8(const float* x, int64_t n, int8_t* codes, int64_t code_stride, uint16_t* scales,
                    int64_t scale_stride);
}

}  // namespace omnibus
