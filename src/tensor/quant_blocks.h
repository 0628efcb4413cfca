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

static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22 && sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ4_K) == 144 && sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210);

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

}  // namespace omnibus
