#include "base/aligned_buffer.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace omnibus {
namespace {

TEST(AlignedBufferTest, AlignsToACacheLineByDefault) {
  AlignedBuffer<float> b(1000);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % 64, 0u);
  EXPECT_EQ(b.size(), 1000u);
}

// The huge-page hint must not change what the buffer is: same size, usable
// everywhere, only aligned to 2 MiB (whether the kernel backs it with huge
// pages depends on its THP setting and is not checked here).
TEST(AlignedBufferTest, HugePageBuffersAreAlignedAndUsable) {
  AlignedBuffer<uint8_t> b;
  const size_t n = 3 * AlignedBuffer<uint8_t>::kHugePageBytes + 12345;
  b.resize(n, /*huge_pages=*/true);
  ASSERT_NE(b.data(), nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % AlignedBuffer<uint8_t>::kHugePageBytes, 0u);
  EXPECT_EQ(b.size(), n);
  for (size_t i = 0; i < n; i += 4096) b[i] = static_cast<uint8_t>(i / 4096);
  b[n - 1] = 7;
  for (size_t i = 0; i < n; i += 4096) EXPECT_EQ(b[i], static_cast<uint8_t>(i / 4096));
  EXPECT_EQ(b[n - 1], 7);
  b.resize(0, true);
  EXPECT_EQ(b.data(), nullptr);
}

}  // namespace
}  // namespace omnibus
