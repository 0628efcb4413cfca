// Q2_K, Q3_K, IQ4_NL, IQ4_XS and MXFP4 blocks assembled byte by byte, with values
// worked out by hand from ggml's format definitions (not from our decoder).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tensor/quant.h"

namespace omnibus {
namespace {

std::vector<float> dequant(DType t, const std::vector<uint8_t>& bytes, int n) {
  std::vector<float> out(static_cast<size_t>(n), -12345.0f);
  dequantize_row_ref(t, bytes.data(), out.data(), n);
  return out;
}

TEST(KnownLowBitBlocks, Q2_K) {
  // scales[16] (sc | mn << 4), qs[64], d = 1 (0x3C00), dmin = 0.5 (0x3800).
  std::vector<uint8_t> b(84, 0);
  b[0] = 0x21;  // sub-block 0: sc 1, mn 2
  b[1] = 0x03;  // sub-block 1: sc 3
  b[2] = 0x12;  // sub-block 2: sc 2, mn 1
  b[4] = 0x14;  // sub-block 4: sc 4, mn 1
  b[6] = 0x05;  // sub-block 6: sc 5
  b[8] = 0xF1;  // sub-block 8: sc 1, mn 15
  uint8_t* qs = b.data() + 16;
  qs[0] = 0xE4;   // elements 0, 32, 64, 96: codes 0, 1, 2, 3
  qs[16] = 0x03;  // element 16: code 3
  qs[32] = 0x02;  // element 128: code 2
  b[81] = 0x3C, b[83] = 0x38;
  const auto y = dequant(DType::kQ2_K, b, 256);
  EXPECT_EQ(y[0], -1.0f);  // 1 * 0 - 0.5 * 2
  EXPECT_EQ(y[1], -1.0f);
  EXPECT_EQ(y[16], 9.0f);    // 3 * 3
  EXPECT_EQ(y[32], 1.5f);    // 2 * 1 - 0.5
  EXPECT_EQ(y[64], 7.5f);    // 4 * 2 - 0.5
  EXPECT_EQ(y[96], 15.0f);   // 5 * 3
  EXPECT_EQ(y[128], -5.5f);  // 1 * 2 - 0.5 * 15
  EXPECT_EQ(y[200], 0.0f);
}

TEST(KnownLowBitBlocks, Q3_K) {
  // hmask[32], qs[64], scales[12], d = 0.5 (0x3800).
  std::vector<uint8_t> b(110, 0);
  uint8_t* hmask = b.data();
  uint8_t* qs = b.data() + 32;
  uint8_t* scales = b.data() + 96;
  scales[0] = 0x01, scales[8] = 0x02;   // sub-block 0: 33 -> +1
  scales[5] = 0x0F, scales[9] = 0x0C;   // sub-block 5: 63 -> +31
  scales[1] = 0x40, scales[9] |= 0x10;  // sub-block 9: 20 -> -12
  qs[0] = 0x03, hmask[0] = 0x01;        // element 0: 3 + 4 -> +3
  qs[16] = 0x10;                        // element 80: 1 -> -3
  qs[48] = 0x02, hmask[16] = 0x10;      // element 144: 2 + 4 -> +2
  b[109] = 0x38;
  const auto y = dequant(DType::kQ3_K, b, 256);
  EXPECT_EQ(y[0], 1.5f);      // 0.5 * 1 * 3
  EXPECT_EQ(y[1], -2.0f);     // 0.5 * 1 * -4
  EXPECT_EQ(y[32], 64.0f);    // sub-block 2: 0.5 * -32 * -4
  EXPECT_EQ(y[80], -46.5f);   // 0.5 * 31 * -3
  EXPECT_EQ(y[144], -12.0f);  // 0.5 * -12 * 2
}

TEST(KnownLowBitBlocks, IQ4_NL) {
  // d = 2 (0x4000), qs[j] = j | (15 - j) << 4.
  std::vector<uint8_t> b = {0x00, 0x40};
  for (int j = 0; j < 16; ++j) b.push_back(static_cast<uint8_t>(j | ((15 - j) << 4)));
  const auto y = dequant(DType::kIQ4_NL, b, 32);
  EXPECT_EQ(y[0], -254.0f);
  EXPECT_EQ(y[8], 2.0f);
  EXPECT_EQ(y[15], 226.0f);
  EXPECT_EQ(y[16], 226.0f);
  EXPECT_EQ(y[31], -254.0f);
  EXPECT_EQ(y[20], 2.0f * 38);  // high nibble of qs[4] = 11
}

TEST(KnownLowBitBlocks, MXFP4) {
  // e = 130: scale 2^(130 - 128) = 4; qs[j] = j | (15 - j) << 4; levels
  // {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12}.
  std::vector<uint8_t> b = {130};
  for (int j = 0; j < 16; ++j) b.push_back(static_cast<uint8_t>(j | ((15 - j) << 4)));
  // Then e = 255 (2^127, as ggml), e = 1 and e = 0 (both read as 0).
  for (const uint8_t e : {255, 1, 0}) {
    b.push_back(e);
    for (int j = 0; j < 16; ++j) b.push_back(0x77);  // code 7 (12) everywhere
  }
  b[18] = 0x21;  // block 2 (e = 255), qs[0]: codes 1 and 2
  const auto y = dequant(DType::kMXFP4, b, 128);
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(y[5], 24.0f);    // code 5: 6 x 4
  EXPECT_EQ(y[7], 48.0f);    // code 7: 12 x 4
  EXPECT_EQ(y[8], 0.0f);     // code 8: minus zero
  EXPECT_EQ(y[13], -24.0f);  // code 13: -6 x 4
  EXPECT_EQ(y[15], -48.0f);
  EXPECT_EQ(y[16], -48.0f);  // high nibble of qs[0] = 15
  EXPECT_EQ(y[20], -12.0f);  // high nibble of qs[4] = 11: -3 x 4
  EXPECT_EQ(y[31], 0.0f);
  EXPECT_EQ(y[32], std::ldexp(1.0f, 127));
  EXPECT_EQ(y[48], std::ldexp(2.0f, 127));
  EXPECT_EQ(y[33], INFINITY);  // 12 x 2^127
  EXPECT_EQ(y[64], 0.0f);
  EXPECT_EQ(y[127], 0.0f);
}

TEST(KnownLowBitBlocks, IQ4_XS) {
  // d = 0.5, scales_h = 0x0002, scales_l[4], qs[128].
  std::vector<uint8_t> b(136, 0);
  b[1] = 0x38;
  b[2] = 0x02;  // sub-block 0's top bits: 2
  b[4] = 0x31;  // low nibbles: sub-block 0: 1 (ls 33 -> +1), sub-block 1: 3 (ls 3 -> -29)
  uint8_t* qs = b.data() + 8;
  qs[0] = 0xF0;   // elements 0 and 16: codes 0 and 15
  qs[16] = 0x08;  // elements 32 and 48: codes 8 and 0
  const auto y = dequant(DType::kIQ4_XS, b, 256);
  EXPECT_EQ(y[0], -63.5f);    // 0.5 * 1 * -127
  EXPECT_EQ(y[16], 56.5f);    // 0.5 * 1 * 113
  EXPECT_EQ(y[32], -14.5f);   // 0.5 * -29 * 1
  EXPECT_EQ(y[48], 1841.5f);  // 0.5 * -29 * -127
  EXPECT_EQ(y[64], 2032.0f);  // sub-block 2: 0.5 * -32 * -127
}

}  // namespace
}  // namespace omnibus
