// The q8_0 KV cache format (--kv-type q8_0): each group of kKvQ8Group
// consecutive values of one head's vector is stored as int8 codes and one
// f16 scale d = max|x| / 127, x ~ d * code (ggml's q8_0 block, split so the
// codes and scales can be laid out apart: K's codes transposed like the f16
// cache's K, the scales beside them). 34 bytes per 32 values against 64 for
// f16: twice the context per MiB and half the bytes attention reads.
#pragma once

#include <cstdint>

namespace omnibus {

struct KernelTable;  // kernels/kernel_table.h

// How the cache stores K and V: IEEE f16 (the default, as llama.cpp's),
// q8_0 (below), q4_0 (further below), or bf16. bf16 takes the f16 layout and size and keeps 8
// mantissa bits instead of 11; its point is speed: widening bf16 to f32 is
// a shift or a mask, where vcvtph2ps costs three FMAs' time on Zen 1 and
// bounds long-context attention (docs/profiling.md).
enum class KvCacheType : uint8_t { kF16, kQ8_0, kBF16, kQ4_0 };

// "f16" / "q8_0" / "bf16" / "q4_0", as --kv-type spells them.
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
// The same with `table`'s quantizer (a runner passes its own; the above
// takes the process's, kernels()).
void quantize_kv_q8(const KernelTable& table, const float* x, int64_t n, int8_t* codes, int64_t code_stride,
                    uint16_t* scales, int64_t scale_stride);
namespace ref {
void quantize_kv_q8(const float* x, int64_t n, int8_t* codes, int64_t code_stride, uint16_t* scales,
                    int64_t scale_stride);
}
// Only call when cpu_features().has_avx2_fma().
namespace avx2 {
void quantize_kv_q8(const float* x, int64_t n, int8_t* codes, int64_t code_stride, uint16_t* scales,
                    int64_t scale_stride);
}

// The q4_0 KV cache format (--kv-type q4_0): ggml's q4_0 block. Each group
// of kKvQ8Group values of a head's vector gets an f16 scale d = m / -8, m
// the value of largest magnitude, and 4-bit codes c = min(15, trunc(x / d
// + 8.5)), x ~ d * (c - 8) (ggml's quantize_row_q4_0_ref, so the cache
// holds what llama.cpp's q4_0 cache holds). 18 bytes per 32 values: 3.6x
// the context per MiB of f16 and 0.28x the bytes attention reads. Scores
// are integer dot products of the codes with Q quantized to q8_0
// (llama.cpp's q4_0 x q8_0 arithmetic); values are f32 multiply-adds.
//
// Writes code i (0..15, one per byte) to codes[i] and the scale of group g
// to scales[g * scale_stride] (f16 bits). An all-zero group gets scale 0
// and codes 8; non-finite inputs give some code in 0..15.
void quantize_kv_q4(const float* x, int64_t n, uint8_t* codes, uint16_t* scales, int64_t scale_stride);

// The q4_0 cache's byte layouts (PagedKvStore, attention kernels), for one
// head vector of head_dim codes (a multiple of kKvQ8Group):
//  * K, transposed in octets: dimensions 8o .. 8o + 7 of a position are four
//    bytes, byte b holding dimension 8o + b in its low nibble and 8o + 4 + b
//    in its high one; a block's positions' bytes of one octet follow one
//    another (four bytes a position), octet after octet `octet_stride` bytes
//    apart. Sixteen positions of an octet are one 64-byte load, two nibble
//    masks give dimensions 8o .. 8o + 3 and 8o + 4 .. 8o + 7 with positions
//    in lanes, ready for vpmaddubsw against four q8 codes of Q.
//  * V, per position: head_dim / 2 bytes, group g's byte 16g + i holding
//    dimension 32g + i in its low nibble and 32g + 16 + i in its high one
//    (ggml's q4_0 order).
void pack_key_q4(const uint8_t* codes, int head_dim, int64_t octet_stride, uint8_t* dst);
void pack_value_q4(const uint8_t* codes, int head_dim, uint8_t* dst);

}  // namespace omnibus
