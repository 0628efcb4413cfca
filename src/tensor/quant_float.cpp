// Software conversions between f32 and the two 16-bit float formats. The
// reference path must not depend on F16C, and must round exactly as the
// hardware (and ggml) do: round to nearest, ties to even.
#include <cstring>

#include "tensor/quant.h"

namespace omnibus {
namespace {

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Rounds `value >> shift` to nearest, ties to even (shift >= 1).
uint32_t shift_round_even(uint32_t value, int shift) {
  const uint32_t kept = value >> shift;
  const uint32_t rest = value & ((1u << shift) - 1);
  const uint32_t half = 1u << (shift - 1);
  return (rest > half || (rest == half && (kept & 1))) ? kept + 1 : kept;
}

}  // namespace

float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1F;
  uint32_t mant = h & 0x3FF;
  if (exp == 0x1F) {
    // Inf keeps a zero mantissa; NaN keeps its payload and comes out quiet,
    // as vcvtph2ps does, so the SIMD and scalar paths agree.
    return float_of(sign | 0x7F800000 | (mant << 13) | (mant != 0 ? 0x00400000 : 0));
  }
  if (exp != 0) return float_of(sign | ((exp + 112) << 23) | (mant << 13));
  if (mant == 0) return float_of(sign);
  // Subnormal half: normalise into an f32 exponent.
  int e = 113;  // exponent of 2^-14, the subnormal scale, in f32 bias
  while ((mant & 0x400) == 0) {
    mant <<= 1;
    --e;
  }
  return float_of(sign | (static_cast<uint32_t>(e) << 23) | ((mant & 0x3FF) << 13));
}

uint16_t f32_to_f16(float f) {
  const uint32_t u = bits_of(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000);
  const uint32_t abs = u & 0x7FFFFFFF;
  if (abs > 0x7F800000) {  // NaN: quiet, top payload bits kept
    return static_cast<uint16_t>(sign | 0x7E00 | ((abs >> 13) & 0x3FF));
  }
  // 65520 = halfway between 65504 (largest half) and 65536: ties go to the
  // even neighbour, which is infinity.
  if (abs >= 0x477FF000) return static_cast<uint16_t>(sign | 0x7C00);
  if (abs < 0x38800000) {  // below 2^-14: a subnormal half or zero
    const int exp = static_cast<int>(abs >> 23);
    const int shift = 126 - exp;  // to units of 2^-24
    if (exp == 0 || shift > 24) return sign;
    const uint32_t mant = (abs & 0x7FFFFF) | 0x800000;
    return static_cast<uint16_t>(sign | shift_round_even(mant, shift));
  }
  // Normal: rebias the exponent and round off 13 mantissa bits; a carry out
  // of the mantissa correctly bumps the exponent.
  const uint32_t rebased = abs - (112u << 23);
  return static_cast<uint16_t>(sign | shift_round_even(rebased, 13));
}

float bf16_to_f32(uint16_t h) { return float_of(static_cast<uint32_t>(h) << 16); }

uint16_t f32_to_bf16(float f) {
  const uint32_t u = bits_of(f);
  if ((u & 0x7FFFFFFF) > 0x7F800000) return static_cast<uint16_t>((u >> 16) | 0x40);  // quiet NaN
  return static_cast<uint16_t>(shift_round_even(u, 16) & 0xFFFF);
}

}  // namespace omnibus
