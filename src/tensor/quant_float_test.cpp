// f16 / bf16 conversions: edge values, exhaustive round trips and the
// round-to-nearest-even rule checked at every midpoint.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "tensor/quant.h"

namespace omnibus {
namespace {

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint32_t to_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

TEST(F16, KnownValues) {
  EXPECT_EQ(f16_to_f32(0x3C00), 1.0f);
  EXPECT_EQ(f16_to_f32(0xC000), -2.0f);
  EXPECT_EQ(f16_to_f32(0x7BFF), 65504.0f);
  EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));                  // smallest subnormal
  EXPECT_EQ(f16_to_f32(0x03FF), std::ldexp(1023.0f, -24));               // largest subnormal
  EXPECT_EQ(f16_to_f32(0x0400), std::ldexp(1.0f, -14));                  // smallest normal
  EXPECT_EQ(f16_to_f32(0x3555), 0x155 * std::ldexp(1.0f, -12) + 0.25f);  // 2^-2 * (1 + 0x155 / 1024)
  EXPECT_EQ(f16_to_f32(0x7C00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(f16_to_f32(0xFC00), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(f16_to_f32(0x7E00)));
  EXPECT_TRUE(std::isnan(f16_to_f32(0xFC01)));
  EXPECT_EQ(to_bits(f16_to_f32(0x8000)), 0x80000000u);  // -0 keeps its sign
}

TEST(F16, FromF32KnownValues) {
  EXPECT_EQ(f32_to_f16(1.0f), 0x3C00);
  EXPECT_EQ(f32_to_f16(-2.0f), 0xC000);
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7BFF);
  EXPECT_EQ(f32_to_f16(65519.0f), 0x7BFF);
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7C00);  // the tie goes to even: infinity
  EXPECT_EQ(f32_to_f16(1e10f), 0x7C00);
  EXPECT_EQ(f32_to_f16(-1e10f), 0xFC00);
  EXPECT_EQ(f32_to_f16(std::numeric_limits<float>::infinity()), 0x7C00);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);  // tie to even zero
  EXPECT_EQ(f32_to_f16(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(f32_to_f16(std::ldexp(3.0f, -25)), 0x0002);  // 1.5 units: tie up to 2
  EXPECT_EQ(f32_to_f16(std::ldexp(5.0f, -25)), 0x0002);  // 2.5 units: tie down to 2
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -30)), 0x0000);
  EXPECT_EQ(f32_to_f16(-std::ldexp(1.0f, -30)), 0x8000);
  EXPECT_EQ(f32_to_f16(from_bits(1)), 0x0000);                  // f32 subnormal
  EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3C00);  // tie, even below
  EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(3.0f, -11)), 0x3C02);  // tie, even above
  EXPECT_EQ(f32_to_f16(std::ldexp(1023.5f, -24)), 0x0400);      // rounds up into the normals
  EXPECT_EQ(f32_to_f16(-0.0f), 0x8000);
  const uint16_t nan = f32_to_f16(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7C00, 0x7C00);
  EXPECT_NE(nan & 0x03FF, 0);
}

TEST(F16, EveryHalfRoundTrips) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7C00) == 0x7C00 && (h & 0x3FF) != 0) continue;  // NaN payloads
    ASSERT_EQ(f32_to_f16(f16_to_f32(static_cast<uint16_t>(h))), h) << std::hex << h;
  }
}

// Between consecutive finite halves a < b (same sign), the exact midpoint goes
// to whichever has an even code, and one f32 ulp either side decides it.
TEST(F16, EveryMidpointRoundsToEven) {
  for (uint32_t h = 0; h < 0x7BFF; ++h) {
    for (uint32_t sign : {0u, 0x8000u}) {
      const uint16_t a = static_cast<uint16_t>(h | sign), b = static_cast<uint16_t>((h + 1) | sign);
      const float mid = (f16_to_f32(a) + f16_to_f32(b)) / 2;  // exact: 12 significant bits
      const uint16_t even = (a & 1) == 0 ? a : b;
      ASSERT_EQ(f32_to_f16(mid), even) << std::hex << h;
      const float toward_a = std::nextafter(mid, f16_to_f32(a));
      const float toward_b = std::nextafter(mid, f16_to_f32(b));
      ASSERT_EQ(f32_to_f16(toward_a), a) << std::hex << h;
      ASSERT_EQ(f32_to_f16(toward_b), b) << std::hex << h;
    }
  }
}

TEST(BF16, KnownValues) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(bf16_to_f32(0x3F80), 1.0f);
  EXPECT_EQ(bf16_to_f32(0xC040), -3.0f);
  EXPECT_EQ(f32_to_bf16(from_bits(0x3F808000)), 0x3F80);  // tie, kept is even
  EXPECT_EQ(f32_to_bf16(from_bits(0x3F818000)), 0x3F82);  // tie, kept is odd
  EXPECT_EQ(f32_to_bf16(from_bits(0x3F808001)), 0x3F81);
  EXPECT_EQ(f32_to_bf16(from_bits(0x3F807FFF)), 0x3F80);
  EXPECT_EQ(f32_to_bf16(std::numeric_limits<float>::infinity()), 0x7F80);
  EXPECT_EQ(f32_to_bf16(-std::numeric_limits<float>::infinity()), 0xFF80);
  EXPECT_EQ(f32_to_bf16(std::numeric_limits<float>::max()), 0x7F80);  // overflows
  EXPECT_EQ(f32_to_bf16(from_bits(0x00010000)), 0x0001);              // subnormals are kept
  EXPECT_EQ(f32_to_bf16(-0.0f), 0x8000);
  // A NaN whose payload lives only in the low bits must stay a NaN.
  const uint16_t nan = f32_to_bf16(from_bits(0x7F800001));
  EXPECT_TRUE(std::isnan(bf16_to_f32(nan)));
}

TEST(BF16, EveryValueRoundTrips) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7F80) == 0x7F80 && (h & 0x7F) != 0) continue;
    ASSERT_EQ(f32_to_bf16(bf16_to_f32(static_cast<uint16_t>(h))), h) << std::hex << h;
  }
}

TEST(FloatRows, F16AndBf16RowsUseTheScalarConversions) {
  const float src[7] = {1.0f, -0.5f, 3.14159f, 1e-6f, -65504.0f, 0.1f, 7.0f};
  uint8_t buf[14];
  float back[7];
  quantize_row_ref(DType::kF16, src, buf, 7);
  dequantize_row_ref(DType::kF16, buf, back, 7);
  for (int i = 0; i < 7; ++i) {
    EXPECT_EQ(buf[2 * i] | (buf[2 * i + 1] << 8), f32_to_f16(src[i]));  // little-endian
    EXPECT_EQ(back[i], f16_to_f32(f32_to_f16(src[i])));
  }
  quantize_row_ref(DType::kBF16, src, buf, 7);
  dequantize_row_ref(DType::kBF16, buf, back, 7);
  for (int i = 0; i < 7; ++i) EXPECT_EQ(back[i], bf16_to_f32(f32_to_bf16(src[i])));
}

}  // namespace
}  // namespace omnibus
