// attention_row_paged against attention_row: the same positions, split into
// runs stored out of order, must give bit-identical outputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/attention.h"

namespace omnibus {
namespace {

std::vector<float> random_floats(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// Copies rows [0, n_kv) of `rows` into blocks of `block_size` rows placed in
// reverse order in `store`, and returns the runs that read them back in
// position order.
std::vector<KvRun> scatter(const std::vector<float>& keys, const std::vector<float>& values, int64_t stride,
                           int64_t n_kv, int64_t block_size, std::vector<float>& key_store,
                           std::vector<float>& value_store) {
  const int64_t blocks = (n_kv + block_size - 1) / block_size;
  key_store.assign(blocks * block_size * stride, NAN);
  value_store.assign(blocks * block_size * stride, NAN);
  std::vector<KvRun> runs;
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t first = b * block_size;
    const int64_t count = std::min(block_size, n_kv - first);
    const int64_t at = (blocks - 1 - b) * block_size * stride;
    std::memcpy(key_store.data() + at, keys.data() + first * stride, sizeof(float) * count * stride);
    std::memcpy(value_store.data() + at, values.data() + first * stride, sizeof(float) * count * stride);
    runs.push_back({key_store.data() + at, value_store.data() + at, count});
  }
  return runs;
}

TEST(AttentionPagedTest, BitIdenticalToContiguous) {
  const AttentionShape shape{6, 2, 12, 1.0f / std::sqrt(12.0f)};
  const int64_t stride = 2 * 12 + 3;  // padded rows: the stride must be honoured
  for (int64_t n_kv : {1, 7, 37}) {
    const auto q = random_floats(6 * 12, 21 + n_kv);
    const auto k = random_floats(n_kv * stride, 22 + n_kv), v = random_floats(n_kv * stride, 23 + n_kv);
    std::vector<float> want(6 * 12), scores(n_kv);
    attention_row(shape, q.data(), k.data(), v.data(), stride, n_kv, scores.data(), want.data(), 0, 6);
    for (int64_t block_size : {1, 3, 16}) {
      std::vector<float> key_store, value_store;
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
  const auto q = random_floats(16, 31), k = random_floats(5 * 8, 32), v = random_floats(5 * 8, 33);
  std::vector<float> want(16), got(16), scores(5);
  attention_row(shape, q.data(), k.data(), v.data(), 8, 5, scores.data(), want.data(), 0, 2);
  const KvRun runs[] = {{k.data(), v.data(), 2}, {nullptr, nullptr, 0}, {k.data() + 16, v.data() + 16, 3}};
  attention_row_paged(shape, q.data(), runs, 8, scores.data(), got.data(), 0, 2);
  EXPECT_EQ(0, std::memcmp(want.data(), got.data(), sizeof(float) * want.size()));
}

}  // namespace
}  // namespace omnibus
