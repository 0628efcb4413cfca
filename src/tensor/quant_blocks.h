// Byte layouts of ggml's quantized blocks, as stored in GGUF files.
//
// Every field is a byte array so a block may sit at any address (rows in a
// mapped file are only byte-aligned); multi-byte fields are little-endian and
// read with the helpers below. Shared by the reference codecs (tensor/) and
// the SIMD kernels (kernels/), which must agree on these layouts exactly.
#pragma once

#include <cstdint>
#include <cstring>

namespace omnibus {

inline constexpr int kQK = 32;     // elements per legacy block (Q4_0 .. Q8_0)
inline constexpr int kQK_K = 256;  // elements per K-quant super-block

// value = (q - 8) * d; element j < 16 in the low nibble of qs[j], element
// j >= 16 in the high nibble of qs[j - 16].
struct BlockQ4_0 {
  uint8_t d[2];
  uint8_t qs[kQK / 2];
};

// value = q * d + m, nibbles as Q4_0.
struct BlockQ4_1 {
  uint8_t d[2];
  uint8_t m[2];
  uint8_t qs[kQK / 2];
};

// value = (q - 16) * d; the low four bits as Q4_0, bit 4 of element j is bit
// j of the little-endian word qh.
struct BlockQ5_0 {
  uint8_t d[2];
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};

// value = q * d + m, bits as Q5_0.
struct BlockQ5_1 {
  uint8_t d[2];
  uint8_t m[2];
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};

// value = q * d.
struct BlockQ8_0 {
  uint8_t d[2];
  int8_t qs[kQK];
};

// Eight sub-blocks of 32: value = d * sc[j] * q - dmin * mn[j], with the
// 6-bit sc/mn packed in `scales` (see k_scale_min). Sub-block j uses the
// 32 bytes qs[32 * (j / 2) ..], low nibbles when j is even, high when odd.
struct BlockQ4_K {
  uint8_t d[2];
  uint8_t dmin[2];
  uint8_t scales[12];
  uint8_t qs[kQK_K / 2];
};

// As Q4_K plus a fifth bit: element l of sub-block j has it in bit j of qh[l].
struct BlockQ5_K {
  uint8_t d[2];
  uint8_t dmin[2];
  uint8_t scales[12];
  uint8_t qh[kQK_K / 8];
  uint8_t qs[kQK_K / 2];
};

// value = d * scales[k / 16] * (q - 32) with 6-bit q. For element k:
// half = k / 128, g = (k % 128) / 32, l = k % 32; low four bits in
// ql[64 * half + 32 * (g & 1) + l] (low nibble if g < 2, else high), top two
// bits at bit 2 * g of qh[32 * half + l].
struct BlockQ6_K {
  uint8_t ql[kQK_K / 2];
  uint8_t qh[kQK_K / 4];
  int8_t scales[kQK_K / 16];
  uint8_t d[2];
};

// Sixteen sub-blocks of 16: value = d * sc[i] * q - dmin * mn[i] with
// 2-bit q, scales[i] = sc[i] | mn[i] << 4 (i = k / 16). For element k:
// half = k / 128, g = (k % 128) / 32, l = k % 32; q is bits 2g..2g+1 of
// qs[32 * half + l].
struct BlockQ2_K {
  uint8_t scales[kQK_K / 16];
  uint8_t qs[kQK_K / 4];
  uint8_t d[2];
  uint8_t dmin[2];
};

// Sixteen sub-blocks of 16: value = d * (sc[i] - 32) * (q - 4) with a 6-bit
// sc[i] (q3_k_scale) and a 3-bit q: its low two bits sit as Q2_K's in qs,
// its top bit is bit k / 32 of hmask[k % 32].
struct BlockQ3_K {
  uint8_t hmask[kQK_K / 8];
  uint8_t qs[kQK_K / 4];
  uint8_t scales[12];
  uint8_t d[2];
};

// value = d * kIq4nlValues[q], nibbles as Q4_0.
struct BlockIQ4_NL {
  uint8_t d[2];
  uint8_t qs[kQK / 2];
};

// Eight sub-blocks of 32: value = d * (ls[j] - 32) * kIq4nlValues[q], with
// the 6-bit ls[j] split into a low nibble (scales_l[j / 2], low nibble when
// j is even) and two high bits (bits 2j..2j+1 of the little-endian
// scales_h); sub-block j's codes are the 16 bytes qs[16 * j ..], nibbles as
// Q4_0.
struct BlockIQ4_XS {
  uint8_t d[2];
  uint8_t scales_h[2];
  uint8_t scales_l[kQK_K / 64];
  uint8_t qs[kQK_K / 2];
};

// IQ4_NL's and IQ4_XS's code book: sixteen levels, denser near zero, where
// most weights are.
inline constexpr int8_t kIq4nlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

// MXFP4 (OCP microscaling FP4; gpt-oss's expert weights): value =
// kMxfp4Values[q] * mxfp4_scale(e), an E8M0 exponent byte and then Q4_0's
// nibble order. The levels are twice E2M1's (0, 0.5, 1, 1.5, 2, 3, 4, 6),
// so the scale is half the exponent's power of two.
struct BlockMXFP4 {
  uint8_t e;
  uint8_t qs[kQK / 2];
};
inline constexpr int8_t kMxfp4Values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// 2^(e - 128): the float whose bits are (e - 1) << 23, exactly ggml's
// value for e >= 2 (e = 255, E8M0's NaN, too: 2^127). e = 0 and 1 read as 0
// (ggml: 2^-128 and 2^-127, blocks whose values are all below 4e-37, which
// its quantizer writes for blocks of near-zeros): no subnormal arithmetic,
// and the SIMD kernels make the same float with one saturating subtract
// and one shift.
inline float mxfp4_scale(uint8_t e) {
  const uint32_t bits = static_cast<uint32_t>(e > 1 ? e - 1 : 0) << 23;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22 && sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ4_K) == 144 && sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210);
static_assert(sizeof(BlockQ2_K) == 84 && sizeof(BlockQ3_K) == 110);
static_assert(sizeof(BlockIQ4_NL) == 18 && sizeof(BlockIQ4_XS) == 136);
static_assert(sizeof(BlockMXFP4) == 17);

inline uint16_t load_u16le(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
inline void store_u16le(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
}
inline uint32_t load_u32le(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16) |
         (static_cast<uint32_t>(p[3]) << 24);
}

// Unpacks the 6-bit scale and min of sub-block j (0..7) of a Q4_K/Q5_K block.
// Bytes 0-3 hold scales 0-3 in their low six bits, bytes 4-7 mins 0-3; for
// j >= 4 the low four bits sit in byte j + 4 (scale low nibble, min high
// nibble) and the top two bits in the spare high bits of bytes j - 4 / j.
inline void k_scale_min(int j, const uint8_t* scales, uint8_t* sc, uint8_t* mn) {
  if (j < 4) {
    *sc = scales[j] & 63;
    *mn = scales[j + 4] & 63;
  } else {
    *sc = static_cast<uint8_t>((scales[j + 4] & 0x0F) | ((scales[j - 4] >> 6) << 4));
    *mn = static_cast<uint8_t>((scales[j + 4] >> 4) | ((scales[j] >> 6) << 4));
  }
}

// The low two bits of element k's code in a Q2_K or Q3_K block's qs.
inline int k_low2_bits(const uint8_t* qs, int k) { return (qs[32 * (k / 128) + k % 32] >> (2 * ((k % 128) / 32))) & 3; }

// The 6-bit scale (0..63, the format subtracts 32) of sub-block i (0..15)
// of a Q3_K block: its low nibble is the low (i < 8) or high nibble of
// byte i % 8, its top two bits are bits 2 * (i / 4).. of byte 8 + i % 4.
inline int q3_k_scale(int i, const uint8_t* scales) {
  const int low = (scales[i % 8] >> (4 * (i / 8))) & 0x0F;
  const int high = (scales[8 + i % 4] >> (2 * (i / 4))) & 3;
  return low | (high << 4);
}

// The 6-bit scale (0..63, the format subtracts 32) of sub-block j (0..7) of
// an IQ4_XS block.
inline int iq4_xs_scale(int j, const BlockIQ4_XS& blk) {
  const int low = (blk.scales_l[j / 2] >> (4 * (j % 2))) & 0x0F;
  const int high = (load_u16le(blk.scales_h) >> (2 * j)) & 3;
  return low | (high << 4);
}

}  // namespace omnibus
