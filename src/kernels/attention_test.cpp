// attention_row_paged against attention_row: the same positions, split into
// runs stored out of order, must give bit-identical outputs, on the scalar
// reference and the AVX2 path alike; and the AVX2 path against the
// reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "base/cpu_features.h"
#include "base/thread_pool.h"
#include "kernels/attention.h"
#include "kernels/attention_test_util.h"
#include "tensor/quant.h"

namespace omnibus {
namespace {

using namespace attention_test_util;


// Copies rows [0, n_kv) of `rows` into blocks of `block_size` rows placed in
// reverse order in `store`, and returns the runs that read them back in
// position order.
std::vector<KvRun> scatter(const std::vector<uint16_t>& keys, const std::vector<uint16_t>& values, int64_t stride,
                           int64_t n_kv, int64_t block_size, std::vector<uint16_t>& key_store,
                           std::vector<uint16_t>& value_store) {
  const int64_t blocks = (n_kv + block_size - 1) / block_size;
  key_store.assign(blocks * block_size * stride, 0x7E00);  // f16 NaN: unread slots must stay unread
  value_store.assign(blocks * block_size * stride, 0x7E00);
  std::vector<KvRun> runs;
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t first = b * block_size;
    const int64_t count = std::min(block_size, n_kv - first);
    const int64_t at = (blocks - 1 - b) * block_size * stride;
    std::memcpy(key_store.data() + at, keys.data() + first * stride, sizeof(uint16_t) * count * stride);
    std::memcpy(value_store.data() + at, values.data() + first * stride, sizeof(uint16_t) * count * stride);
    runs.push_back({key_store.data() + at, value_store.data() + at, count});
  }
  return runs;
}

TEST(AttentionPagedTest, BitIdenticalToContiguous) {
  const AttentionShape shape{6, 2, 12, 1.0f / std::sqrt(12.0f)};
  const int64_t stride = 2 * 12 + 3;  // padded rows: the stride must be honoured
  for (int64_t n_kv : {1, 7, 37}) {
    const auto q = random_floats(6 * 12, 21 + n_kv);
    const auto k = random_halves(n_kv * stride, 22 + n_kv), v = random_halves(n_kv * stride, 23 + n_kv);
    std::vector<float> want(6 * 12), scores(6 * n_kv);  // one score row per head of a call
    attention_row(shape, q.data(), k.data(), v.data(), stride, n_kv, scores.data(), want.data(), 0, 6);
    for (int64_t block_size : {1, 3, 16}) {
      std::vector<uint16_t> key_store, value_store;
      const auto runs = scatter(k, v, stride, n_kv, block_size, key_store, value_store);
      std::vector<float> got(6 * 12, NAN);
      attention_row_paged(shape, q.data(), runs, stride, scores.data(), got.data(), 0, 3);
      attention_row_paged(shape, q.data(), runs, stride, scores.data(), got.data(), 3, 6);
      EXPECT_EQ(0, std::memcmp(want.data(), got.data(), sizeof(float) * want.size()))
          << "n_kv " << n_kv << " block_size " << block_size;
    }
  }
}

// A zero-length run (a block table entry not yet written) contributes nothing.
TEST(AttentionPagedTest, EmptyRunsAreSkipped) {
  const AttentionShape shape{2, 1, 8, 0.5f};
  const auto q = random_floats(16, 31);
  const auto k = random_halves(5 * 8, 32), v = random_halves(5 * 8, 33);
  std::vector<float> want(16), got(16), scores(2 * 5);
  attention_row(shape, q.data(), k.data(), v.data(), 8, 5, scores.data(), want.data(), 0, 2);
  const KvRun runs[] = {{k.data(), v.data(), 2}, {nullptr, nullptr, 0}, {k.data() + 16, v.data() + 16, 3}};
  attention_row_paged(shape, q.data(), runs, 8, scores.data(), got.data(), 0, 2);
  EXPECT_EQ(0, std::memcmp(want.data(), got.data(), sizeof(float) * want.size()));
}


// Every implementation with the same paged layout invariance.
TEST(AttentionPagedTest, EachPathIsBitIdenticalAcrossBlockLayouts) {
  const auto paths = attention_paths();
  for (const auto& [name, fn] : paths) {
    for (int head_dim : {8, 64, 128}) {
      const AttentionShape shape{6, 2, head_dim, 1.0f / std::sqrt(static_cast<float>(head_dim))};
      const int64_t stride = 2 * head_dim + 8;
      // 300 and 600: rows of two and three softmax chunks.
      for (int64_t n_kv : {1, 8, 9, 37, 130, 300, 600}) {
        const auto q = random_floats(6 * head_dim, 41 + n_kv);
        const auto k = random_halves(n_kv * stride, 42 + n_kv), v = random_halves(n_kv * stride, 43 + n_kv);
        std::vector<float> want(6 * head_dim), scores(6 * n_kv);
        const KvRun whole{k.data(), v.data(), n_kv};
        fn(shape, q.data(), std::span(&whole, 1), stride, scores.data(), want.data(), 0, 6);
        for (int64_t block_size : {1, 3, 16, 100}) {  // 100: blocks straddle chunk boundaries
          std::vector<uint16_t> key_store, value_store;
          const auto runs = scatter(k, v, stride, n_kv, block_size, key_store, value_store);
          std::vector<float> got(6 * head_dim, NAN);
          fn(shape, q.data(), runs, stride, scores.data(), got.data(), 0, 4);
          fn(shape, q.data(), runs, stride, scores.data(), got.data(), 4, 6);
          EXPECT_EQ(0, std::memcmp(want.data(), got.data(), sizeof(float) * want.size()))
              << name << " head_dim " << head_dim << " n_kv " << n_kv << " block_size " << block_size;
        }
      }
    }
  }
}

// Rows [0, n_kv) of `rows` (n_head_kv heads of head_dim side by side)
// rearranged as the paged store keeps them: blocks of `block_size`
// positions, in order, each [kv_head][offset][head_dim]. Returns the runs
// (one per block); KV heads are block_size * head_dim apart.
std::vector<KvRun> head_major(const std::vector<uint16_t>& keys, const std::vector<uint16_t>& values, int n_head_kv,
                              int head_dim, int64_t n_kv, int64_t block_size, std::vector<uint16_t>& key_store,
                              std::vector<uint16_t>& value_store) {
  const int64_t blocks = (n_kv + block_size - 1) / block_size, kv_dim = int64_t{n_head_kv} * head_dim;
  key_store.assign(blocks * block_size * kv_dim, 0x7E00);  // f16 NaN: unread slots must stay unread
  value_store.assign(blocks * block_size * kv_dim, 0x7E00);
  std::vector<KvRun> runs;
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t count = std::min(block_size, n_kv - b * block_size);
    for (int64_t o = 0; o < count; ++o)
      for (int h = 0; h < n_head_kv; ++h)
        for (int d = 0; d < head_dim; ++d) {
          const int64_t from = (b * block_size + o) * kv_dim + h * head_dim + d;
          const int64_t to = ((b * n_head_kv + h) * block_size + o) * head_dim + d;
          key_store[to] = keys[from];
          value_store[to] = values[from];
        }
    runs.push_back({key_store.data() + b * block_size * kv_dim, value_store.data() + b * block_size * kv_dim, count});
  }
  return runs;
}


// Transposed K (the paged store's layout) gives the same bits however the
// positions are cut into blocks, on every path, and agrees with row-major K
// to rounding.
TEST(AttentionPagedTest, TransposedKeysAreBitIdenticalAcrossBlockLayouts) {
  const auto paths = attention_paths();
  for (const auto& [name, fn] : paths) {
    for (int64_t n_kv : {1, 9, 17, 300, 600}) {
      const AttentionShape rows_shape{9, 3, 64, 0.125f};
      const auto q = random_floats(9 * 64, 101 + n_kv);
      const auto k = random_halves(n_kv * 192, 102 + n_kv), v = random_halves(n_kv * 192, 103 + n_kv);
      std::vector<float> rows(9 * 64), want(9 * 64), scores(9 * n_kv);
      const KvRun whole{k.data(), v.data(), n_kv};
      fn(rows_shape, q.data(), std::span(&whole, 1), 192, scores.data(), rows.data(), 0, 9);
      std::vector<uint16_t> key_store, value_store;
      AttentionShape one = rows_shape;
      const auto one_block = transposed_blocks(k, v, one, n_kv, n_kv, key_store, value_store);
      fn(one, q.data(), one_block, 64, scores.data(), want.data(), 0, 9);
      for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(want[i], rows[i], 1e-4f) << name << " n_kv " << n_kv;
      // Each block's heads in a row, or each head's blocks (the store's).
      for (bool across : {false, true})
        for (int64_t block_size : {1, 5, 16, 100}) {
          AttentionShape shape = rows_shape;
          std::vector<uint16_t> ks, vs;
          const auto runs = transposed_blocks(k, v, shape, n_kv, block_size, ks, vs, across);
          std::vector<float> got(9 * 64, NAN);
          fn(shape, q.data(), runs, 64, scores.data(), got.data(), 0, 4);  // heads cut across a GQA group
          fn(shape, q.data(), runs, 64, scores.data(), got.data(), 4, 9);
          EXPECT_EQ(0, std::memcmp(want.data(), got.data(), sizeof(float) * want.size()))
              << name << " n_kv " << n_kv << " block_size " << block_size << " across " << across;
        }
    }
  }
}

// The paged store's layout (each KV head's positions of a block together)
// gives the bits of the row layout, on every path, with blocks that cut the
// softmax chunks.
TEST(AttentionPagedTest, HeadMajorBlocksGiveTheRowLayoutsBits) {
  const auto paths = attention_paths();
  for (const auto& [name, fn] : paths) {
    const AttentionShape rows_shape{9, 3, 64, 0.125f};
    const int64_t stride = 3 * 64;
    for (int64_t n_kv : {5, 300}) {
      const auto q = random_floats(9 * 64, 91 + n_kv);
      const auto k = random_halves(n_kv * stride, 92 + n_kv), v = random_halves(n_kv * stride, 93 + n_kv);
      std::vector<float> want(9 * 64), got(9 * 64), scores(9 * n_kv);
      const KvRun whole{k.data(), v.data(), n_kv};
      fn(rows_shape, q.data(), std::span(&whole, 1), stride, scores.data(), want.data(), 0, 9);
      for (int64_t block_size : {1, 16, 100}) {
        std::vector<uint16_t> key_store, value_store;
        const auto runs = head_major(k, v, 3, 64, n_kv, block_size, key_store, value_store);
        AttentionShape shape = rows_shape;
        shape.kv_head_stride = block_size * 64;
        fn(shape, q.data(), runs, 64, scores.data(), got.data(), 0, 9);
        EXPECT_EQ(0, std::memcmp(want.data(), got.data(), sizeof(float) * want.size()))
            << name << " n_kv " << n_kv << " block_size " << block_size;
      }
    }
  }
}

// One call over many heads (GQA groups sharing KV reads) gives each head
// exactly what a call for that head alone gives.
TEST(AttentionPagedTest, HeadsTogetherEqualHeadsAlone) {
  const AttentionShape shape{9, 3, 64, 0.125f};
  const int64_t stride = 3 * 64, n_kv = 77;
  const auto q = random_floats(9 * 64, 61);
  const auto k = random_halves(n_kv * stride, 62), v = random_halves(n_kv * stride, 63);
  std::vector<uint16_t> key_store, value_store;
  const auto runs = scatter(k, v, stride, n_kv, 16, key_store, value_store);
  std::vector<float> together(9 * 64), alone(9 * 64), scores(9 * n_kv);
  attention_row_paged(shape, q.data(), runs, stride, scores.data(), together.data(), 0, 9);
  for (int h = 0; h < 9; ++h) attention_row_paged(shape, q.data(), runs, stride, scores.data(), alone.data(), h, h + 1);
  EXPECT_EQ(0, std::memcmp(together.data(), alone.data(), sizeof(float) * together.size()));
  attention_row_paged(shape, q.data(), runs, stride, scores.data(), together.data(), 2, 7);  // across groups
  EXPECT_EQ(0, std::memcmp(together.data(), alone.data(), sizeof(float) * together.size()));
}

// slice_runs cuts runs (empty ones among them) at any positions, and a long
// row over such runs gives the contiguous row's bits.
TEST(AttentionChunkTest, SliceRunsCutsAtAnyPosition) {
  const int64_t stride = 8;
  const std::vector<int64_t> sizes = {0, 5, 0, 300, 1, 0, 250};
  const int64_t n_kv = 556;
  const auto k = random_halves(n_kv * stride, 5), v = random_halves(n_kv * stride, 6);
  std::vector<KvRun> runs;
  int64_t at = 0;
  for (int64_t size : sizes) {
    runs.push_back({k.data() + at * stride, v.data() + at * stride, size});
    at += size;
  }
  std::vector<KvRun> out(runs.size());
  for (auto [first, count] : {std::pair<int64_t, int64_t>{0, 256}, {256, 256}, {512, 44}, {3, 3}, {305, 2}, {0, 556}}) {
    const size_t n = slice_runs(runs, first, count, stride, stride, out.data());
    int64_t pos = first;
    for (size_t i = 0; i < n; ++i) {
      ASSERT_GT(out[i].count, 0);
      EXPECT_EQ(out[i].k, k.data() + pos * stride) << "first " << first << " run " << i;
      EXPECT_EQ(out[i].v, v.data() + pos * stride);
      pos += out[i].count;
    }
    EXPECT_EQ(pos, first + count) << "first " << first;
  }
  const AttentionShape shape{2, 1, 8, 0.3f};
  const auto q = random_floats(16, 7);
  std::vector<float> want(16), got(16), scores(2 * n_kv);
  const KvRun whole{k.data(), v.data(), n_kv};
  attention_row_paged(shape, q.data(), std::span(&whole, 1), stride, scores.data(), want.data(), 0, 2);
  attention_row_paged(shape, q.data(), runs, stride, scores.data(), got.data(), 0, 2);
  EXPECT_EQ(0, std::memcmp(want.data(), got.data(), sizeof(float) * want.size()));
}

// What a decode step does with a long row: each chunk's partial computed on
// its own (any thread, any order), then merged in position order and
// divided by the sum, gives attention_row_paged's bits.
TEST(AttentionChunkTest, ChunksComputedApartThenMergedEqualTheRow) {
  const AttentionShape shape{9, 3, 64, 0.125f};
  const int64_t stride = 3 * 64;
  for (int64_t n_kv : {200, 256, 257, 700}) {
    const auto q = random_floats(9 * 64, 71 + n_kv);
    const auto k = random_halves(n_kv * stride, 72 + n_kv), v = random_halves(n_kv * stride, 73 + n_kv);
    std::vector<uint16_t> key_store, value_store;
    const auto runs = scatter(k, v, stride, n_kv, 16, key_store, value_store);
    std::vector<float> want(9 * 64), scores(9 * n_kv);
    attention_row_paged(shape, q.data(), runs, stride, scores.data(), want.data(), 0, 9);

    const int64_t chunks = (n_kv + kAttentionChunk - 1) / kAttentionChunk;
    std::vector<float> acc(chunks * 9 * 64), max(chunks * 9), sum(chunks * 9);
    std::vector<KvRun> chunk_runs(runs.size());
    for (int64_t c = chunks - 1; c >= 0; --c) {  // last first: order does not matter
      const int64_t first = c * kAttentionChunk;
      const size_t n =
          slice_runs(runs, first, std::min(kAttentionChunk, n_kv - first), stride, stride, chunk_runs.data());
      // Heads in two calls that cut a GQA group.
      for (auto [h0, h1] : {std::pair{0, 4}, std::pair{4, 9}}) {
        const AttentionPartial part{acc.data() + (c * 9 + h0) * 64, max.data() + c * 9 + h0, sum.data() + c * 9 + h0};
        attention_chunk(shape, q.data(), std::span(chunk_runs.data(), n), stride, scores.data(), part, h0, h1);
      }
    }
    const AttentionPartial state{acc.data(), max.data(), sum.data()};
    for (int64_t c = 1; c < chunks; ++c)
      attention_merge(64, 9, {acc.data() + c * 9 * 64, max.data() + c * 9, sum.data() + c * 9}, state);
    std::vector<float> got(9 * 64);
    attention_finish(64, 9, state, got.data());
    EXPECT_EQ(0, std::memcmp(want.data(), got.data(), sizeof(float) * want.size())) << "n_kv " << n_kv;
  }
}

// The chunked softmax against one softmax over the whole row in double
// precision: the merge rescales correctly. Scores spread wide enough that
// the chunks' maxima differ by a lot.
TEST(AttentionChunkTest, ChunkedRowMatchesOneSoftmaxInDouble) {
  const AttentionShape shape{4, 2, 16, 0.25f};
  const int64_t stride = 2 * 16, n_kv = 900;
  auto q = random_floats(4 * 16, 81);
  for (auto& x : q) x *= 3.0f;
  const auto k = random_halves(n_kv * stride, 82), v = random_halves(n_kv * stride, 83);
  std::vector<float> got(4 * 16), scores(4 * n_kv);
  const KvRun whole{k.data(), v.data(), n_kv};
  attention_row_paged(shape, q.data(), std::span(&whole, 1), stride, scores.data(), got.data(), 0, 4);
  for (int h = 0; h < 4; ++h) {
    const int64_t kv_off = (h / 2) * 16;
    std::vector<double> s(n_kv);
    double m = -1e300;
    for (int64_t j = 0; j < n_kv; ++j) {
      double dot = 0;
      for (int d = 0; d < 16; ++d) dot += static_cast<double>(f16_to_f32(f32_to_f16(q[h * 16 + d]))) *
                                          f16_to_f32(k[j * stride + kv_off + d]);
      s[j] = dot * 0.25;
      m = std::max(m, s[j]);
    }
    double total = 0;
    std::vector<double> out(16, 0.0);
    for (int64_t j = 0; j < n_kv; ++j) {
      const double p = std::exp(s[j] - m);
      total += p;
      for (int d = 0; d < 16; ++d) out[d] += p * f16_to_f32(v[j * stride + kv_off + d]);
    }
    // Numerators are rounded to f16 (relative 2^-11) in the kernels.
    for (int d = 0; d < 16; ++d) EXPECT_NEAR(got[h * 16 + d], out[d] / total, 2e-3) << "head " << h << " dim " << d;
  }
}

// Attention sinks (gpt-oss): each head's softmax in double over its scores
// and its sink logit (the sink adds weight, no value); a sink far above
// every score leaves a small but finite output, far below changes nothing
// measurable. Chunks merged apart give the row's bits with sinks too.
TEST(AttentionChunkTest, SinksJoinEachHeadsSoftmax) {
  const int64_t stride = 2 * 16, n_kv = 600;
  auto q = random_floats(4 * 16, 91);
  for (auto& x : q) x *= 3.0f;
  const auto k = random_halves(n_kv * stride, 92), v = random_halves(n_kv * stride, 93);
  const KvRun whole{k.data(), v.data(), n_kv};
  for (float sink_base : {-30.0f, 0.5f, 3.0f, 80.0f}) {
    const std::vector<float> sinks = {sink_base, sink_base - 1.0f, sink_base + 0.7f, sink_base * 0.5f};
    AttentionShape shape{4, 2, 16, 0.25f};
    shape.sinks = sinks.data();
    std::vector<float> got(4 * 16), scores(4 * n_kv);
    attention_row_paged(shape, q.data(), std::span(&whole, 1), stride, scores.data(), got.data(), 0, 4);
    // Heads in two calls: each call's sinks are its own heads'.
    std::vector<float> split(4 * 16);
    attention_row_paged(shape, q.data(), std::span(&whole, 1), stride, scores.data(), split.data(), 0, 1);
    attention_row_paged(shape, q.data(), std::span(&whole, 1), stride, scores.data(), split.data(), 1, 4);
    EXPECT_EQ(0, std::memcmp(got.data(), split.data(), sizeof(float) * got.size())) << "sink " << sink_base;
    for (int h = 0; h < 4; ++h) {
      const int64_t kv_off = (h / 2) * 16;
      std::vector<double> sc(n_kv);
      double m = sinks[h];
      for (int64_t j = 0; j < n_kv; ++j) {
        double dot = 0;
        for (int d = 0; d < 16; ++d)
          dot += static_cast<double>(f16_to_f32(f32_to_f16(q[h * 16 + d]))) * f16_to_f32(k[j * stride + kv_off + d]);
        sc[j] = dot * 0.25;
        m = std::max(m, sc[j]);
      }
      double total = std::exp(sinks[h] - m);
      std::vector<double> out(16, 0.0);
      for (int64_t j = 0; j < n_kv; ++j) {
        const double p = std::exp(sc[j] - m);
        total += p;
        for (int d = 0; d < 16; ++d) out[d] += p * f16_to_f32(v[j * stride + kv_off + d]);
      }
      // The scores' share of the weight scales the output and its error
      // (f16 numerators, as ChunkedRowMatchesOneSoftmaxInDouble).
      const double share = 1.0 - std::exp(sinks[h] - m) / total;
      for (int d = 0; d < 16; ++d) {
        ASSERT_TRUE(std::isfinite(got[h * 16 + d]));
        EXPECT_NEAR(got[h * 16 + d], out[d] / total, 2e-3 * share + 1e-30)
            << "sink " << sink_base << " head " << h << " dim " << d;
      }
    }
  }
}

// The AVX2 path (vector exp, other summation order) agrees with the scalar
// reference to f16 rounding of the softmax numerators, on sharply peaked and
// flat score distributions.
TEST(AttentionSimdTablesTest, MatchesReference) {
  const auto tables = testing_util::runnable_simd_tables();
  if (tables.empty()) GTEST_SKIP() << "this CPU runs no SIMD kernel table";
  for (const KernelTable* t : tables) {
    SCOPED_TRACE(t->name);
    for (float spread : {0.05f, 1.0f, 8.0f}) {
      for (int head_dim : {8, 64, 72, 128}) {
        const AttentionShape shape{9, 3, head_dim, 1.0f / std::sqrt(static_cast<float>(head_dim))};
        const int64_t stride = 3 * head_dim;
        for (int64_t n_kv : {1, 5, 16, 33, 1000}) {
          auto q = random_floats(9 * head_dim, 51 + n_kv);
          for (auto& x : q) x *= spread;
          const auto k = random_halves(n_kv * stride, 52 + n_kv), v = random_halves(n_kv * stride, 53 + n_kv);
          std::vector<float> want(9 * head_dim), got(9 * head_dim), scores(9 * n_kv);
          const KvRun whole{k.data(), v.data(), n_kv};
          ref_row(shape, q.data(), std::span(&whole, 1), stride, scores.data(), want.data(), 0, 9);
          table_row(t)(shape, q.data(), std::span(&whole, 1), stride, scores.data(), got.data(), 0, 9);
          for (size_t i = 0; i < want.size(); ++i) {
            // Both round each softmax numerator to f16; the vector exp and
            // libm's may land on neighbouring f16 values (2^-11 apart), so
            // outputs (|v| <= 2) may differ by about 2 * 2^-11.
            ASSERT_NEAR(got[i], want[i], 2e-3f)
                << "spread " << spread << " head_dim " << head_dim << " n_kv " << n_kv << " at " << i;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace omnibus

namespace omnibus {
namespace {

// Throughput of one decode row against a long paged context (SmolLM2's
// shape: 9 heads, 3 KV heads, head_dim 64, blocks of 16); a measurement,
// not a check. Run with --gtest_also_run_disabled_tests
// --gtest_filter=*AttentionBench*.
TEST(AttentionBench, DISABLED_DecodeRowAgainstLongContext) {
  if (!cpu_features().has_avx2_fma()) GTEST_SKIP();
  const AttentionShape s{9, 3, 64, 0.125f};
  const int64_t stride = s.n_head_kv * s.head_dim;
  for (int64_t n_kv : {64, 512, 2048}) {
    const auto keys = random_halves(n_kv * stride, 1), values = random_halves(n_kv * stride, 2);
    std::vector<KvRun> runs;
    for (int64_t p = 0; p < n_kv; p += 16) runs.push_back({keys.data() + p * stride, values.data() + p * stride, 16});
    const auto q = random_floats(s.n_head * s.head_dim, 3);
    std::vector<float> scores(static_cast<size_t>(s.n_head * n_kv)), out(static_cast<size_t>(s.n_head * s.head_dim));
    AttentionShape t_shape = s;
    std::vector<uint16_t> t_keys, t_values;
    const auto t_runs = transposed_blocks(keys, values, t_shape, n_kv, 16, t_keys, t_values);
    AttentionShape q8_shape = s;
    Q8Store q8_store;
    const auto q8_runs = q8_blocks(keys, values, q8_shape, n_kv, 16, q8_store);
    AttentionShape bf16_shape = s;
    bf16_shape.kv_type = KvCacheType::kBF16;
    std::vector<uint16_t> bf16_keys, bf16_values;
    const auto bf16_runs = transposed_blocks(as_bf16(keys), as_bf16(values), bf16_shape, n_kv, 16, bf16_keys, bf16_values);
    AttentionShape q4_shape = s;
    Q8Store q4_store;
    const auto q4_runs = q4_blocks(keys, values, q4_shape, n_kv, 16, q4_store);
    for (int layout : {0, 1, 2, 3, 4}) {
      // OMNIBUS_BENCH_LAYOUT=N: only layout N (4: q4_0), e.g. under perf.
      const char* only = std::getenv("OMNIBUS_BENCH_LAYOUT");
      if (only != nullptr && layout != std::atoi(only)) continue;
      const bool transposed = layout == 1;
      double best = 1e9;
      for (int rep = 0; rep < 400; ++rep) {
        const auto t0 = std::chrono::steady_clock::now();
        if (layout == 4) {
          attention_row_paged(q4_shape, q.data(), q4_runs, s.head_dim, scores.data(), out.data(), 0, s.n_head);
        } else if (layout == 3) {
          attention_row_paged(bf16_shape, q.data(), bf16_runs, s.head_dim, scores.data(), out.data(), 0, s.n_head);
        } else if (layout == 2) {
          attention_row_paged(q8_shape, q.data(), q8_runs, s.head_dim, scores.data(), out.data(), 0, s.n_head);
        } else if (transposed) {
          attention_row_paged(t_shape, q.data(), t_runs, s.head_dim, scores.data(), out.data(), 0, s.n_head);
        } else {
          attention_row_paged(s, q.data(), runs, stride, scores.data(), out.data(), 0, s.n_head);
        }
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      }
      const double fmas = 2.0 * s.n_head * n_kv * s.head_dim;
      std::printf("n_kv %5lld, %s: %8.1f us for 9 heads, %.2f GFLOP/s\n", static_cast<long long>(n_kv),
                  layout == 4   ? "q4_0 cache"
                  : layout == 3 ? "bf16 cache, K transposed"
                  : layout == 2 ? "q8_0 cache, K transposed"
                  : transposed  ? "f16 cache, K transposed"
                               : "rows of all heads",
                  best * 1e6,
                  2 * fmas / best / 1e9);
    }
  }
}

// The same row against 30 layers' worth of cache (47 MB at 2,048 positions,
// more than the last-level cache), one layer after another as a decode step
// reads them: K and V come from DRAM, as in a real long-context step;
// microseconds per layer, one thread.
TEST(AttentionBench, DISABLED_DecodeRowColdCache) {
  if (!cpu_features().has_avx2_fma()) GTEST_SKIP();
  const AttentionShape rows_shape{9, 3, 64, 0.125f};
  const int64_t stride = 3 * 64;
  constexpr int kLayers = 30;
  for (int64_t n_kv : {512, 2048}) {
    std::vector<std::vector<uint16_t>> keys, values, head_keys(kLayers), head_values(kLayers);
    std::vector<std::vector<KvRun>> row_runs(kLayers), head_runs(kLayers);
    for (int l = 0; l < kLayers; ++l) {
      keys.push_back(random_halves(n_kv * stride, 10 + l));
      values.push_back(random_halves(n_kv * stride, 100 + l));
      for (int64_t p = 0; p < n_kv; p += 16)
        row_runs[l].push_back({keys[l].data() + p * stride, values[l].data() + p * stride, 16});
      head_runs[l] = head_major(keys[l], values[l], 3, 64, n_kv, 16, head_keys[l], head_values[l]);
    }
    const auto q = random_floats(9 * 64, 3);
    std::vector<float> scores(static_cast<size_t>(9 * n_kv)), out(9 * 64);
    AttentionShape head_shape = rows_shape;
    head_shape.kv_head_stride = 16 * 64;
    std::vector<std::vector<uint16_t>> t_keys(kLayers), t_values(kLayers);
    std::vector<std::vector<KvRun>> t_runs(kLayers);
    AttentionShape t_shape = rows_shape;
    for (int l = 0; l < kLayers; ++l) t_runs[l] = transposed_blocks(keys[l], values[l], t_shape, n_kv, 16, t_keys[l], t_values[l]);
    std::vector<Q8Store> q8_stores(kLayers);
    std::vector<std::vector<KvRun>> q8_runs(kLayers);
    AttentionShape q8_shape = rows_shape;
    for (int l = 0; l < kLayers; ++l) q8_runs[l] = q8_blocks(keys[l], values[l], q8_shape, n_kv, 16, q8_stores[l]);
    std::vector<std::vector<uint16_t>> bf16_keys(kLayers), bf16_values(kLayers);
    std::vector<std::vector<KvRun>> bf16_runs(kLayers);
    AttentionShape bf16_shape = rows_shape;
    bf16_shape.kv_type = KvCacheType::kBF16;
    for (int l = 0; l < kLayers; ++l)
      bf16_runs[l] = transposed_blocks(as_bf16(keys[l]), as_bf16(values[l]), bf16_shape, n_kv, 16, bf16_keys[l],
                                       bf16_values[l]);
    std::vector<std::vector<uint16_t>> hx_keys(kLayers), hx_values(kLayers), hxb_keys(kLayers), hxb_values(kLayers);
    std::vector<std::vector<KvRun>> hx_runs(kLayers), hxb_runs(kLayers);
    AttentionShape hx_shape = rows_shape, hxb_shape = bf16_shape;
    for (int l = 0; l < kLayers; ++l) {
      hx_runs[l] = transposed_blocks(keys[l], values[l], hx_shape, n_kv, 16, hx_keys[l], hx_values[l], true);
      hxb_runs[l] = transposed_blocks(as_bf16(keys[l]), as_bf16(values[l]), hxb_shape, n_kv, 16, hxb_keys[l],
                                      hxb_values[l], true);
    }
    // 0 and 1 are earlier layouts, kept in the code for comparison runs.
    for (int layout : {2, 5, 4, 6, 3}) {
      const bool by_head = layout != 0;
      std::vector<double> per_layer;
      for (int rep = 0; rep < 15; ++rep) {
        const auto t0 = std::chrono::steady_clock::now();
        for (int l = 0; l < kLayers; ++l) {
          if (layout == 5) {
            attention_row_paged(hx_shape, q.data(), hx_runs[l], 64, scores.data(), out.data(), 0, 9);
          } else if (layout == 6) {
            attention_row_paged(hxb_shape, q.data(), hxb_runs[l], 64, scores.data(), out.data(), 0, 9);
          } else if (layout == 4) {
            attention_row_paged(bf16_shape, q.data(), bf16_runs[l], 64, scores.data(), out.data(), 0, 9);
          } else if (layout == 3) {
            attention_row_paged(q8_shape, q.data(), q8_runs[l], 64, scores.data(), out.data(), 0, 9);
          } else if (layout == 2) {
            attention_row_paged(t_shape, q.data(), t_runs[l], 64, scores.data(), out.data(), 0, 9);
          } else if (by_head) {
            attention_row_paged(head_shape, q.data(), head_runs[l], 64, scores.data(), out.data(), 0, 9);
          } else {
            attention_row_paged(rows_shape, q.data(), row_runs[l], stride, scores.data(), out.data(), 0, 9);
          }
        }
        per_layer.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / kLayers);
      }
      std::sort(per_layer.begin(), per_layer.end());
      const double median = per_layer[per_layer.size() / 2];
      std::printf("cold n_kv %5lld, %s: median %7.1f us per layer (best %7.1f), the layer's K and V at %.1f GB/s\n",
                  static_cast<long long>(n_kv),
                  layout == 6   ? "bf16, each head's blocks in a row (the store)"
                  : layout == 5 ? "f16, each head's blocks in a row (the store)"
                  : layout == 4 ? "bf16, each block's heads in a row"
                  : layout == 3 ? "q8_0, each block's heads in a row"
                  : layout == 2 ? "f16, each block's heads in a row, K transposed"
                  : by_head     ? "head-major blocks"
                                : "rows of all heads",
                  median * 1e6, per_layer[0] * 1e6,
                  2.0 * n_kv * stride * (layout == 3 ? 34.0 / 32 : 2.0) / median / 1e9);
    }
  }
}

// One decode row at 2,048 positions from DRAM as ForwardPass::attend_chunks
// splits it: each of `threads` threads takes a contiguous share of the
// row's eight softmax chunks, all nine heads; 30 layers one after another.
// Microseconds per layer, medians of 15 passes, f16 and bf16 store layouts.
TEST(AttentionBench, DISABLED_DecodeRowColdCacheTwoThreads) {
  if (!cpu_features().has_avx2_fma()) GTEST_SKIP();
  constexpr int kLayers = 30;
  constexpr int64_t kPositions = 2048, kChunks = kPositions / kAttentionChunk;
  for (bool bf16 : {false, true}) {
    AttentionShape shape{9, 3, 64, 0.125f};
    if (bf16) shape.kv_type = KvCacheType::kBF16;
    std::vector<std::vector<uint16_t>> keys(kLayers), values(kLayers);
    std::vector<std::vector<KvRun>> runs(kLayers);
    for (int l = 0; l < kLayers; ++l) {
      auto k = random_halves(kPositions * 192, 10 + l), v = random_halves(kPositions * 192, 100 + l);
      if (bf16) k = as_bf16(k), v = as_bf16(v);
      runs[l] = transposed_blocks(k, v, shape, kPositions, 16, keys[l], values[l], true);
    }
    const auto q = random_floats(9 * 64, 3);
    for (int threads : {1, 2}) {
      ThreadPool pool(threads);
      std::vector<float> scores(static_cast<size_t>(threads) * 9 * kAttentionChunk), acc(kChunks * 9 * 64);
      std::vector<float> max(kChunks * 9), sum(kChunks * 9);
      std::vector<double> per_layer;
      for (int rep = 0; rep < 15; ++rep) {
        const auto t0 = std::chrono::steady_clock::now();
        for (int l = 0; l < kLayers; ++l) {
          pool.run([&](int t, int count) {
            KvRun chunk_runs[kAttentionChunk / 16];
            for (int64_t ch = kChunks * t / count; ch < kChunks * (t + 1) / count; ++ch) {
              const size_t n = slice_runs(runs[l], ch * kAttentionChunk, kAttentionChunk, 1, 64, chunk_runs);
              const AttentionPartial part{acc.data() + ch * 9 * 64, max.data() + ch * 9, sum.data() + ch * 9};
              attention_chunk(shape, q.data(), std::span(chunk_runs, n), 64, scores.data() + t * 9 * kAttentionChunk,
                              part, 0, 9);
            }
          });
        }
        per_layer.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / kLayers);
      }
      std::sort(per_layer.begin(), per_layer.end());
      std::printf("cold n_kv %lld, %s, %d thread(s): median %6.1f us per layer (best %6.1f)\n",
                  static_cast<long long>(kPositions), bf16 ? "bf16" : "f16 ", threads,
                  per_layer[per_layer.size() / 2] * 1e6, per_layer[0] * 1e6);
    }
  }
}

}  // namespace
}  // namespace omnibus
namespace omnibus {
namespace {

// A decode row at 2,048 positions on two threads as in a real step: between
// layers 3 MB of other data (a layer's weights) are streamed, so K and V
// come from DRAM with the weights competing for the cache, instead of
// partly from L3 as in *DecodeRowColdCacheTwoThreads*. On the Intel AVX-512
// VM this reproduced the engine's own profile (f16 ~75 us per
// layer, the same as `omnibus run --profile` after 2,048 tokens).
// Microseconds of attention per layer, medians of 10 passes.
TEST(AttentionBench, DISABLED_DecodeRowEvictedByWeights) {
  constexpr int kLayers = 30;
  constexpr int64_t kPositions = 2048, kChunks = kPositions / kAttentionChunk;
  std::vector<float> weights(3 * 1024 * 1024 / 4 * kLayers, 1.0f);  // 3 MB per layer, like SmolLM2's matrices
  for (int type : {0, 1, 2}) {
    // OMNIBUS_BENCH_TYPE=N: only type N (0 f16, 1 q8_0, 2 q4_0), e.g. under perf.
    const char* only = std::getenv("OMNIBUS_BENCH_TYPE");
    if (only != nullptr && type != std::atoi(only)) continue;
    AttentionShape shape{9, 3, 64, 0.125f};
    std::vector<std::vector<uint16_t>> keys(kLayers), values(kLayers);
    std::vector<Q8Store> q8(kLayers);
    std::vector<std::vector<KvRun>> runs(kLayers);
    for (int l = 0; l < kLayers; ++l) {
      auto k = random_halves(kPositions * 192, 10 + l), v = random_halves(kPositions * 192, 100 + l);
      if (type == 0) runs[l] = transposed_blocks(k, v, shape, kPositions, 16, keys[l], values[l], true);
      else if (type == 1) { AttentionShape s2 = shape; runs[l] = q8_blocks(k, v, s2, kPositions, 16, q8[l]); if (l == kLayers - 1) shape = s2; }
      else { AttentionShape s2 = shape; runs[l] = q4_blocks(k, v, s2, kPositions, 16, q8[l]); if (l == kLayers - 1) shape = s2; }
    }
    const auto q = random_floats(9 * 64, 3);
    for (int threads : {2}) {
      ThreadPool pool(threads);
      std::vector<float> scores(static_cast<size_t>(threads) * 9 * kAttentionChunk), acc(kChunks * 9 * 64);
      std::vector<float> max(kChunks * 9), sum(kChunks * 9);
      std::vector<double> att;
      std::vector<float> sink(threads, 0.0f);  // per thread: the weight sweep's sums, kept
      std::atomic<int> touched{0};  // keeps the touching reads
      const char* reps_env = std::getenv("OMNIBUS_BENCH_REPS");
      const int reps = reps_env != nullptr ? std::max(1, std::atoi(reps_env)) : 10;
      const bool touch_first = std::getenv("OMNIBUS_BENCH_TOUCH") != nullptr;
      for (int rep = 0; rep < reps; ++rep) {
        double t_att = 0;
        for (int l = 0; l < kLayers; ++l) {
          pool.run([&](int t, int count) {
            const size_t n = weights.size() / kLayers, b = l * n;
            float s = 0;
            for (size_t i = b + n * t / count; i < b + n * (t + 1) / count; i += 16) s += weights[i];
            sink[t] += s;
          });
          // OMNIBUS_BENCH_TOUCH=1: every thread reads the layer's K/V just
          // before the timed part (which then runs from L2): the ceiling of
          // any prefetch scheme (docs/findings/q4_0-attention-is-arithmetic-bound.md).
          if (touch_first) {
            pool.run([&](int, int) {
              int s = 0;
              auto touch = [&](const void* p, size_t bytes) {
                const char* c = static_cast<const char*>(p);
                for (size_t i = 0; i < bytes; i += 64) s += c[i];
              };
              if (type == 0) {
                touch(keys[l].data(), keys[l].size() * 2);
                touch(values[l].data(), values[l].size() * 2);
              } else {
                touch(q8[l].key_codes.data(), q8[l].key_codes.size());
                touch(q8[l].value_codes.data(), q8[l].value_codes.size());
                touch(q8[l].key_scales.data(), q8[l].key_scales.size() * 2);
                touch(q8[l].value_scales.data(), q8[l].value_scales.size() * 2);
              }
              touched.fetch_add(s, std::memory_order_relaxed);
            });
          }
          const auto t0 = std::chrono::steady_clock::now();
          pool.run([&](int t, int count) {
            // As the engine's attend_chunk_share: each chunk fetches the next one's first KV head ahead.
            KvRun chunk_runs[2][kAttentionChunk / 16];
            auto slice = [&](int64_t ch, KvRun* out) {
              return std::span<const KvRun>(out, slice_runs(runs[l], ch * kAttentionChunk, kAttentionChunk,
                                                            shape.k_run_step(64), shape.v_run_step(64), out));
            };
            const int64_t ch_end = kChunks * (t + 1) / count;
            std::span<const KvRun> here = slice(kChunks * t / count, chunk_runs[(kChunks * t / count) % 2]);
            for (int64_t ch = kChunks * t / count; ch < ch_end; ++ch) {
              const std::span<const KvRun> next =
                  ch + 1 < ch_end ? slice(ch + 1, chunk_runs[(ch + 1) % 2]) : std::span<const KvRun>{};
              const AttentionPartial part{acc.data() + ch * 9 * 64, max.data() + ch * 9, sum.data() + ch * 9};
              attention_chunk(shape, q.data(), here, 64, scores.data() + t * 9 * kAttentionChunk, part, 0, 9,
                              ChunkAhead{next, next.empty() ? -1 : 0});
              here = next;
            }
          });
          t_att += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        }
        att.push_back(t_att / kLayers);
      }
      std::sort(att.begin(), att.end());
      std::printf("evicted, %s, %d threads: median %6.1f us per layer (best %6.1f)%s\n",
                  type == 2 ? "q4_0" : type == 1 ? "q8_0" : "f16",
                  threads, att[att.size() / 2] * 1e6, att[0] * 1e6, sink[0] == 0 && touched == 1 ? " " : "");
    }
  }
}
}  // namespace
}  // namespace omnibus

namespace omnibus {
namespace {

// A short-context decode row (SmolLM2's shape, f16 cache, K transposed, in
// cache) whole and in the two head ranges attend_chunks gives two threads,
// one thread: what a head split saves where the positions are few. At 80
// positions 2.2 us whole, 1.4 and 1.2 us the halves, against 5.2-5.5 us a
// layer in a real decode step, whose K/V come from memory
// (docs/findings/decode-step-as-one-pool-job.md).
TEST(AttentionBench, DISABLED_DecodeRowShortContextHeadSplit) {
  if (!cpu_features().has_avx2_fma()) GTEST_SKIP();
  const AttentionShape s{9, 3, 64, 0.125f};
  const int64_t stride = s.n_head_kv * s.head_dim;
  for (int64_t n_kv : {20, 80, 150}) {
    const auto keys = random_halves(n_kv * stride, 1), values = random_halves(n_kv * stride, 2);
    AttentionShape t_shape = s;
    std::vector<uint16_t> t_keys, t_values;
    const auto t_runs = transposed_blocks(keys, values, t_shape, n_kv, 16, t_keys, t_values);
    const auto q = random_floats(s.n_head * s.head_dim, 3);
    std::vector<float> scores(static_cast<size_t>(s.n_head * n_kv)), out(static_cast<size_t>(s.n_head * s.head_dim));
    std::vector<float> acc(s.n_head * s.head_dim), mx(s.n_head), sum(s.n_head);
    const std::pair<int, int> ranges[] = {{0, 9}, {0, 5}, {5, 9}, {0, 3}, {0, 1}};
    for (auto [h0, h1] : ranges) {
      double best = 1e9;
      for (int rep = 0; rep < 2000; ++rep) {
        const auto t0 = std::chrono::steady_clock::now();
        const AttentionPartial part{acc.data() + h0 * s.head_dim, mx.data() + h0, sum.data() + h0};
        attention_chunk(t_shape, q.data(), t_runs, s.head_dim, scores.data(), part, h0, h1);
        attention_finish(s.head_dim, h1 - h0, part, out.data() + h0 * s.head_dim);
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      }
      std::printf("n_kv %4lld heads [%d, %d): %6.2f us\n", static_cast<long long>(n_kv), h0, h1, best * 1e6);
    }
  }
}

}  // namespace
}  // namespace omnibus
