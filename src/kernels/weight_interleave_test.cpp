// The interleaved layout (kernels/weight_interleave.h) against the row
// layout: the same outputs bit for bit, for every x-row count, ragged row
// counts and thread splits; and the repacked bytes are where the layout says.
#include "kernels/weight_interleave.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <vector>

#include "base/aligned_buffer.h"
#include "base/cpu_features.h"
#include "base/thread_pool.h"
#include "kernels/matmul.h"
#include "kernels/matmul_test_util.h"
#include "tensor/quant_blocks.h"

namespace omnibus {
namespace {

using testing_util::random_floats;
using testing_util::random_weights;

class Interleave : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override {
    if (!can_interleave8(GetParam())) GTEST_SKIP() << "no interleaved kernel on this CPU or build";
  }
};

// On a CPU with AVX-VNNI the interleaved side runs the vpdpbusd kernels
// (matmul_interleaved_avxvnni.cpp) and the row side the vpmaddubsw ones: this
// is also the check that the two instruction sets give the same bits.
TEST_P(Interleave, OutputsAreBitIdenticalToTheRowLayout) {
  const DType t = GetParam();
  // 157, 184 and 200 rows give decode (n_x 1) enough groups per thread for
  // its four streams with every remainder (0-3 groups) over 1-3 threads.
  for (int64_t rows : {8, 13, 40, 67, 157, 184, 200}) {
    const int64_t unit = dtype_info(t)->block_size;  // 32, or 256 for the K-quants
    for (int64_t cols : {unit, 3 * unit, 18 * unit}) {
      // Padding between rows in the source, as row_bytes allows.
      const auto w = random_weights(t, rows, cols, static_cast<uint32_t>(rows * cols), rows == 13 ? 5 : 0);
      AlignedBuffer<uint8_t> copy(interleaved8_bytes(w.view));
      const WeightMatrix il = interleave8(w.view, copy.data());
      ASSERT_EQ(il.layout, WeightLayout::kInterleaved8);
      // 6, 8, 9, 13 and 17: the AVX-512 VNNI pair tiles (6 or 8 x rows,
      // two groups) with and without rows left over.
      for (int64_t n_x : {1, 2, 3, 4, 5, 6, 8, 9, 13, 17}) {
        const auto x = random_floats(n_x * cols, static_cast<uint32_t>(n_x + cols));
        std::vector<float> want(static_cast<size_t>(n_x * rows)), got(want.size(), -1.0f);
        matmul(w.view, x.data(), n_x, want.data(), nullptr);
        for (int threads : {1, 2, 3}) {
          ThreadPool pool(threads);
          matmul(il, x.data(), n_x, got.data(), &pool);
          ASSERT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0)
              << dtype_name(t) << " rows " << rows << " cols " << cols << " n_x " << n_x << " threads " << threads;
        }
      }
    }
  }
}

TEST_P(Interleave, SharedInputProductsMatchSingleOnes) {
  const DType t = GetParam();
  const int64_t cols = 2 * dtype_info(t)->block_size;
  const auto a = random_weights(t, 24, cols, 1), b = random_weights(t, 40, cols, 2);
  AlignedBuffer<uint8_t> ca(interleaved8_bytes(a.view)), cb(interleaved8_bytes(b.view));
  const WeightMatrix ia = interleave8(a.view, ca.data()), ib = interleave8(b.view, cb.data());
  ThreadPool pool(2);
  // 13: the AVX-512 VNNI pair tiles with 5-7 rows left over.
  for (int64_t n_x : {3, 13}) {
    const auto x = random_floats(n_x * cols, 3);
    std::vector<float> ya(n_x * 24), yb(n_x * 40), wa(ya.size()), wb(yb.size());
    const MatmulTarget targets[] = {{&ia, ya.data()}, {&ib, yb.data()}};
    matmul_shared_input(targets, x.data(), n_x, &pool);
    matmul(a.view, x.data(), n_x, wa.data(), nullptr);
    matmul(b.view, x.data(), n_x, wb.data(), nullptr);
    EXPECT_EQ(ya, wa) << n_x;
    EXPECT_EQ(yb, wb) << n_x;
  }
}

// The copy reports its source rows in order, in runs that tile [0, rows)
// (the loader drops each run's file pages as it goes), and gives the same
// bytes as without a callback.
TEST_P(Interleave, CopiedRowRunsTileTheMatrixInOrder) {
  const DType t = GetParam();
  // About 4 MB of source rows per run: 20,000 rows of 2,048 columns make
  // several runs, the last one partial. The rows repeat 61 quantized ones
  // (quantizing 41M values by the reference took minutes under ASan).
  const int64_t rows = 20003, distinct = 61;
  auto w = random_weights(t, distinct, 2048, 5);
  const size_t row_bytes = w.view.row_bytes;
  std::vector<uint8_t> tiled(static_cast<size_t>(rows) * row_bytes);
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(tiled.data() + r * row_bytes, static_cast<const uint8_t*>(w.view.data) + (r % distinct) * row_bytes,
                row_bytes);
  w.view.data = tiled.data();
  w.view.rows = rows;
  AlignedBuffer<uint8_t> plain(interleaved8_bytes(w.view)), reported(interleaved8_bytes(w.view));
  interleave8(w.view, plain.data());
  std::vector<std::pair<int64_t, int64_t>> runs;
  interleave8(w.view, reported.data(), [&](int64_t begin, int64_t end) { runs.emplace_back(begin, end); });
  ASSERT_GE(runs.size(), 3u);
  int64_t next = 0;
  for (auto [begin, end] : runs) {
    EXPECT_EQ(begin, next);
    EXPECT_GT(end, begin);
    next = end;
  }
  EXPECT_EQ(next, rows);
  EXPECT_EQ(0, std::memcmp(plain.data(), reported.data(), plain.size()));
}

INSTANTIATE_TEST_SUITE_P(Types, Interleave,
                         ::testing::Values(DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ8_0, DType::kQ4_K,
                                           DType::kQ5_K, DType::kQ6_K, DType::kQ3_K, DType::kIQ4_XS, DType::kIQ4_NL,
                                           DType::kMXFP4, DType::kQ2_K),
                         [](const auto& info) { return dtype_name(info.param); });

// The int16 sums of the K-quant kernels at their worst: every code at its
// largest, the largest 6-bit scales and mins (Q6_K: int8 scales 127, -128
// and -1; Q3_K: scales 31 and -32; Q2_K: codes 3, scales and mins 15; IQ4_XS: levels 113 and -127, scales 31
// and -32), x at +127 or -127 in every position. Both layouts must still give
// the same bits, and the scalar path's exact sums within float rounding (a
// saturated int16 would be off by thousands).
TEST(InterleaveKQuants, LargestCodesScalesAndActivationsStayExact) {
  for (DType t : {DType::kQ4_K, DType::kQ5_K, DType::kQ6_K, DType::kQ3_K, DType::kIQ4_XS, DType::kQ2_K}) {
    if (!can_interleave8(t)) GTEST_SKIP() << "no interleaved kernel on this CPU or build";
    const int64_t rows = 16, cols = 512;
    const size_t row_bytes = dtype_bytes(t, cols).value(), block_bytes = row_bytes / 2;
    std::vector<uint8_t> bytes(static_cast<size_t>(rows) * row_bytes, 0xFF);
    for (int64_t r = 0; r < rows; ++r)
      for (int b = 0; b < 2; ++b) {
        uint8_t* blk = bytes.data() + r * row_bytes + b * block_bytes;
        const uint8_t d[2] = {0x00, 0x1C};  // f16 2^-8
        if (t == DType::kQ6_K) {
          std::memcpy(blk + 208, d, 2);
          std::memset(blk + 192, r % 3 == 0 ? 0x7F : r % 3 == 1 ? 0x80 : 0xFF, 16);
        } else if (t == DType::kQ3_K) {
          std::memcpy(blk + offsetof(BlockQ3_K, d), d, 2);
          if (r % 2 == 1) std::memset(blk + offsetof(BlockQ3_K, scales), 0, 12);  // every scale -32
        } else if (t == DType::kQ2_K) {
          std::memcpy(blk + offsetof(BlockQ2_K, d), d, 2);
          std::memcpy(blk + offsetof(BlockQ2_K, dmin), d, 2);
        } else if (t == DType::kIQ4_XS) {
          std::memcpy(blk + offsetof(BlockIQ4_XS, d), d, 2);
          if (r % 2 == 1) {  // level -127 (code 0) everywhere, every scale -32
            std::memset(blk + offsetof(BlockIQ4_XS, qs), 0, 128);
            std::memset(blk + offsetof(BlockIQ4_XS, scales_h), 0, 6);
          }
        } else {
          std::memcpy(blk, d, 2);
          std::memcpy(blk + 2, d, 2);
        }
      }
    const WeightMatrix w{t, bytes.data(), rows, cols, row_bytes};
    AlignedBuffer<uint8_t> copy(interleaved8_bytes(w));
    const WeightMatrix il = interleave8(w, copy.data());
    for (int64_t n_x : {1, 3, 4, 8, 9}) {
      std::vector<float> x(static_cast<size_t>(n_x * cols));
      for (int64_t i = 0; i < n_x; ++i)
        for (int64_t k = 0; k < cols; ++k) x[static_cast<size_t>(i * cols + k)] = i % 2 == 0 ? 1.0f : -1.0f;
      std::vector<float> rows_y(static_cast<size_t>(n_x * rows)), il_y(rows_y.size()), ref(rows_y.size());
      matmul(w, x.data(), n_x, rows_y.data(), nullptr);
      matmul(il, x.data(), n_x, il_y.data(), nullptr);
      matmul_ref(w, x.data(), n_x, ref.data());
      ASSERT_EQ(0, std::memcmp(rows_y.data(), il_y.data(), rows_y.size() * sizeof(float)))
          << dtype_name(t) << " n_x " << n_x;
      for (size_t i = 0; i < ref.size(); ++i)
        ASSERT_NEAR(il_y[i], ref[i], 1e-5 * std::fabs(ref[i]) + 1e-6) << dtype_name(t) << " n_x " << n_x << " output " << i;
    }
  }
}

// Byte placement, independent of the kernels: block b of row r's scale and
// its quant bytes 4j..4j+3 land where the header says.
TEST(InterleaveLayout, BytesLandWhereTheLayoutSays) {
  const auto w = random_weights(DType::kQ4_1, 11, 64, 7);
  AlignedBuffer<uint8_t> copy(interleaved8_bytes(w.view));
  ASSERT_EQ(copy.size(), 16u * w.view.row_bytes);  // two groups, the second padded
  interleave8(w.view, copy.data());
  const auto* src = static_cast<const uint8_t*>(w.view.data);
  for (int64_t row = 0; row < 16; ++row) {
    const int64_t g = row / 8, r = row % 8;
    for (int64_t b = 0; b < 2; ++b) {
      const uint8_t* dst = copy.data() + (g * 2 + b) * 8 * sizeof(BlockQ4_1);
      const bool real = row < 11;
      const auto* blk = reinterpret_cast<const BlockQ4_1*>(src + row * w.view.row_bytes) + b;
      EXPECT_EQ(dst[2 * r], real ? blk->d[0] : 0);
      EXPECT_EQ(dst[16 + 2 * r + 1], real ? blk->m[1] : 0);
      for (int j = 0; j < 4; ++j)
        for (int k = 0; k < 4; ++k) EXPECT_EQ(dst[32 + 32 * j + 4 * r + k], real ? blk->qs[4 * j + k] : 0);
    }
  }
}

}  // namespace
}  // namespace omnibus
