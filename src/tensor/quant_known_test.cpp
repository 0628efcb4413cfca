// Blocks assembled byte by byte, with values worked out by hand from ggml's
// format definitions (not from our decoder).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "tensor/quant.h"

namespace omnibus {
namespace {

std::vector<float> dequant(DType t, const std::vector<uint8_t>& bytes, int n) {
  std::vector<float> out(static_cast<size_t>(n), -12345.0f);
  dequantize_row_ref(t, bytes.data(), out.data(), n);
  return out;
}

TEST(KnownBlocks, Q4_0) {
  // d = 0.5 (f16 0x3800, little-endian), qs[j] = j | (15 - j) << 4.
  std::vector<uint8_t> b = {0x00, 0x38};
  for (int j = 0; j < 16; ++j) b.push_back(static_cast<uint8_t>(j | ((15 - j) << 4)));
  const auto y = dequant(DType::kQ4_0, b, 32);
  EXPECT_EQ(y[0], -4.0f);   // (0 - 8) * 0.5
  EXPECT_EQ(y[8], 0.0f);    // (8 - 8) * 0.5
  EXPECT_EQ(y[15], 3.5f);   // (15 - 8) * 0.5
  EXPECT_EQ(y[16], 3.5f);   // high nibble of qs[0] = 15
  EXPECT_EQ(y[31], -4.0f);  // high nibble of qs[15] = 0
  EXPECT_EQ(y[20], 1.5f);   // high nibble of qs[4] = 11
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], (j - 8) * 0.5f);
    EXPECT_EQ(y[16 + j], (7 - j) * 0.5f);
  }
}

TEST(KnownBlocks, Q4_1) {
  // d = 0.25 (0x3400), m = -1 (0xBC00); qs[j] = (j+1)&15 | j << 4.
  std::vector<uint8_t> b = {0x00, 0x34, 0x00, 0xBC};
  for (int j = 0; j < 16; ++j) b.push_back(static_cast<uint8_t>(((j + 1) & 15) | (j << 4)));
  const auto y = dequant(DType::kQ4_1, b, 32);
  EXPECT_EQ(y[0], -0.75f);  // 1 * 0.25 - 1
  EXPECT_EQ(y[15], -1.0f);  // 0 * 0.25 - 1
  EXPECT_EQ(y[16], -1.0f);
  EXPECT_EQ(y[31], 2.75f);  // 15 * 0.25 - 1
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], ((j + 1) & 15) * 0.25f - 1.0f);
    EXPECT_EQ(y[16 + j], j * 0.25f - 1.0f);
  }
}

TEST(KnownBlocks, Q5_0AndQ5_1) {
  // Q5_0: d = 1 (0x3C00); qh = 0x80000001 (bit 0 and bit 31); qs[j] = 0x5A.
  std::vector<uint8_t> b = {0x00, 0x3C, 0x01, 0x00, 0x00, 0x80};
  for (int j = 0; j < 16; ++j) b.push_back(0x5A);
  auto y = dequant(DType::kQ5_0, b, 32);
  EXPECT_EQ(y[0], 10.0f);    // (0xA | 16) - 16
  EXPECT_EQ(y[1], -6.0f);    // 0xA - 16
  EXPECT_EQ(y[16], -11.0f);  // 0x5 - 16
  EXPECT_EQ(y[31], 5.0f);    // (0x5 | 16) - 16
  // Q5_1: d = 2 (0x4000), m = 0.5 (0x3800), same bits.
  std::vector<uint8_t> c = {0x00, 0x40, 0x00, 0x38, 0x01, 0x00, 0x00, 0x80};
  for (int j = 0; j < 16; ++j) c.push_back(0x5A);
  y = dequant(DType::kQ5_1, c, 32);
  EXPECT_EQ(y[0], 52.5f);  // 26 * 2 + 0.5
  EXPECT_EQ(y[1], 20.5f);  // 10 * 2 + 0.5
  EXPECT_EQ(y[16], 10.5f);
  EXPECT_EQ(y[31], 42.5f);  // 21 * 2 + 0.5
}

TEST(KnownBlocks, Q8_0) {
  // d = 2 (0x4000); qs[j] = 7j - 100 as int8.
  std::vector<uint8_t> b = {0x00, 0x40};
  for (int j = 0; j < 32; ++j) b.push_back(static_cast<uint8_t>(static_cast<int8_t>(7 * j - 100)));
  const auto y = dequant(DType::kQ8_0, b, 32);
  EXPECT_EQ(y[0], -200.0f);
  EXPECT_EQ(y[31], 234.0f);  // (217 - 100) * 2
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], (7 * j - 100) * 2.0f);
}

TEST(KnownBlocks, Q4_K) {
  // d = 1 (0x3C00), dmin = 0.5 (0x3800). Sub-block scales and mins
  //   sc = {1, 2, 3, 4, 33, 40, 63, 17}, mn = {0, 5, 10, 63, 20, 1, 2, 50}
  // packed by hand: bytes 0-3 = sc[j] | top2(sc[j+4]) << 6, bytes 4-7 =
  // mn[j] | top2(mn[j+4]) << 6, bytes 8-11 = low4(sc[j+4]) | low4(mn[j+4]) << 4.
  const int sc[8] = {1, 2, 3, 4, 33, 40, 63, 17};
  const int mn[8] = {0, 5, 10, 63, 20, 1, 2, 50};
  std::vector<uint8_t> b = {0x00, 0x3C, 0x00, 0x38, 0x81, 0x82, 0xC3, 0x44,
                            0x40, 0x05, 0x0A, 0xFF, 0x41, 0x18, 0x2F, 0x21};
  for (int i = 0; i < 128; ++i) b.push_back(static_cast<uint8_t>(i * 7));
  ASSERT_EQ(b.size(), 144u);
  const auto y = dequant(DType::kQ4_K, b, 256);
  EXPECT_EQ(y[0], 0.0f);      // sub 0: 1 * 0 - 0.5 * 0
  EXPECT_EQ(y[33], -2.5f);    // sub 1, l = 1: high nibble of qs[1] = 7 is 0 -> 2 * 0 - 0.5 * 5
  EXPECT_EQ(y[200], 503.0f);  // sub 6, l = 8: low nibble of qs[104] = 728 & 255 = 0xD8 -> 63 * 8 - 0.5 * 2
  for (int k = 0; k < 256; ++k) {
    const int j = k / 32, l = k % 32;
    const uint8_t byte = static_cast<uint8_t>((32 * (j / 2) + l) * 7);
    const int q = (j % 2 == 0) ? (byte & 15) : (byte >> 4);
    ASSERT_EQ(y[k], 1.0f * sc[j] * q - 0.5f * mn[j]) << k;
  }
}

TEST(KnownBlocks, Q6_K) {
  // ql[i] = 37i, qh[i] = 91i (mod 256), scales[i] = 3i - 20, d = 0.5 (0x3800).
  std::vector<uint8_t> b;
  for (int i = 0; i < 128; ++i) b.push_back(static_cast<uint8_t>(i * 37));
  for (int i = 0; i < 64; ++i) b.push_back(static_cast<uint8_t>(i * 91));
  for (int i = 0; i < 16; ++i) b.push_back(static_cast<uint8_t>(static_cast<int8_t>(3 * i - 20)));
  b.push_back(0x00);
  b.push_back(0x38);
  ASSERT_EQ(b.size(), 210u);
  const auto y = dequant(DType::kQ6_K, b, 256);
  // k = 0: ql[0] = 0, qh[0] = 0 -> q = -32; scale -20 -> 0.5 * -20 * -32.
  EXPECT_EQ(y[0], 320.0f);
  // k = 200: second half, group 2, l = 8: high nibble of ql[72] = 104 = 0x68
  // is 6; bits 4-5 of qh[40] = 56 = 0b111000 are 3 -> q = 54 - 32 = 22;
  // scale[12] = 16 -> 0.5 * 16 * 22.
  EXPECT_EQ(y[200], 176.0f);
  // k = 45: first half, group 1, l = 13: low nibble of ql[45] = 1665 & 255 =
  // 129 = 0x81 is 1; bits 2-3 of qh[13] = 1183 & 255 = 159 = 0b10011111 are 3
  // -> q = 49 - 32 = 17; scale[2] = -14 -> 0.5 * -14 * 17.
  EXPECT_EQ(y[45], -119.0f);
}

}  // namespace
}  // namespace omnibus
