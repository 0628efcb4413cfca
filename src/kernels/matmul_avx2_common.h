// Pieces shared by the AVX2 matmul kernels: the fixed horizontal sum, lane
// masks, and the decoders of float weight rows.
//
// Include only from files compiled with AVX2+FMA+F16C (*_avx2.cpp,
// *_avxvnni.cpp). Internal linkage: each file has its own copy, built for
// its own instructions.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace omnibus::matmul_avx2 {
namespace {

// The fixed horizontal sum every kernel ends an output with:
// ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7)).
inline float hsum(__m256 v) {
  const __m256 pairs = _mm256_hadd_ps(v, v);  // a0+a1, a2+a3 | a4+a5, a6+a7
  const __m256 quads = _mm256_hadd_ps(pairs, pairs);
  return _mm_cvtss_f32(_mm_add_ss(_mm256_castps256_ps128(quads), _mm256_extractf128_ps(quads, 1)));
}

// 32 bytes from any address.
inline __m256i load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// Whether this file has a 256-bit VNNI dot product: VEX AVX-VNNI, or
// AVX-512 VNNI with VL (its EVEX encoding; Ice Lake and Zen 4 have only
// this one). The sums are exact either way.
#if defined(__AVXVNNI__) || (defined(__AVX512VNNI__) && defined(__AVX512VL__))
#define OMNIBUS_YMM_VNNI 1
#endif

// acc + each int32 lane's two int16 pair sums times its int16 scales, exactly:
// one vpdpwssd in a file built with VNNI, else vpmaddwd and vpaddd.
inline __m256i add_scaled_pairs(__m256i acc, __m256i pairs, __m256i scale16) {
#if defined(__AVXVNNI__)
  return _mm256_dpwssd_avx_epi32(acc, pairs, scale16);
#elif defined(OMNIBUS_YMM_VNNI)
  return _mm256_dpwssd_epi32(acc, pairs, scale16);
#else
  return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, scale16));
#endif
}

// Lanes [0, n) set.
inline __m256i lane_mask(int n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// Float weight decoders: unit(row, u) gives elements [32u, 32u + 32) as four
// vectors of 8 in element order; chunk / partial give 8, or n < 8 padded with
// zeros. Values equal the reference conversions (tensor/quant.h).
struct DecodeF32 {
  static __m256 chunk(const uint8_t* row, int64_t k) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + k);
  }
  static __m256 partial(const uint8_t* row, int64_t k, int n) {
    float tmp[8] = {};
    std::memcpy(tmp, reinterpret_cast<const float*>(row) + k, static_cast<size_t>(n) * sizeof(float));
    return _mm256_loadu_ps(tmp);
  }
  static void unit(const uint8_t* row, int64_t u, __m256 out[4]) {
    for (int c = 0; c < 4; ++c) out[c] = chunk(row, 32 * u + 8 * c);
  }
};

struct DecodeF16 {
  static __m256 chunk(const uint8_t* row, int64_t k) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * k)));
  }
  static __m256 partial(const uint8_t* row, int64_t k, int n) {
    uint8_t tmp[16] = {};
    std::memcpy(tmp, row + 2 * k, static_cast<size_t>(n) * 2);
    return chunk(tmp, 0);
  }
  static void unit(const uint8_t* row, int64_t u, __m256 out[4]) {
    for (int c = 0; c < 4; ++c) out[c] = chunk(row, 32 * u + 8 * c);
  }
};

struct DecodeBF16 {
  static __m256 chunk(const uint8_t* row, int64_t k) {
    const __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * k)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(h, 16));
  }
  static __m256 partial(const uint8_t* row, int64_t k, int n) {
    uint8_t tmp[16] = {};
    std::memcpy(tmp, row + 2 * k, static_cast<size_t>(n) * 2);
    return chunk(tmp, 0);
  }
  static void unit(const uint8_t* row, int64_t u, __m256 out[4]) {
    for (int c = 0; c < 4; ++c) out[c] = chunk(row, 32 * u + 8 * c);
  }
};

}  // namespace
}  // namespace omnibus::matmul_avx2
