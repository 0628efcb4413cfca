// Every SIMD kernel table's attention (AVX-512's wider kernels, the VNNI
// tables) gives the avx2 table's bits: every cache type, the store's layout
// and the others, blocks cut anywhere, heads split anywhere, chunk by chunk
// (max, sum and the unnormalised sums) and whole rows. This is what lets a
// decode row on an AVX-512 CPU still match the prefill of the same row
// (AVX2 row pairs) bit for bit. Skipped, and says so, where this CPU runs
// no SIMD table but avx2.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "kernels/attention.h"
#include "kernels/attention_test_util.h"
#include "kernels/kernel_table_test_util.h"

namespace omnibus {
namespace {

using namespace attention_test_util;

// One layout of the same K and V: its shape (strides, type), its runs and
// the buffers behind them.
struct Layout {
  const char* name;
  AttentionShape shape;
  std::vector<KvRun> runs;
  int64_t row_stride;
  std::vector<uint16_t> k, v;
  Q8Store q8;
};

std::vector<Layout> layouts(const AttentionShape& base, const std::vector<uint16_t>& keys,
                            const std::vector<uint16_t>& values, int64_t n_kv, int64_t block_size) {
  const int64_t stride = int64_t{base.n_head_kv} * base.head_dim;
  std::vector<Layout> out;
  auto add = [&](const char* name) -> Layout& {
    out.push_back(Layout{name, base, {}, base.head_dim, {}, {}, {}});
    return out.back();
  };
  {  // the paged store: K transposed, each KV head's blocks in a row
    Layout& l = add("store f16");
    l.runs = transposed_blocks(keys, values, l.shape, n_kv, block_size, l.k, l.v, true);
  }
  {
    Layout& l = add("store bf16");
    l.shape.kv_type = KvCacheType::kBF16;
    l.runs = transposed_blocks(as_bf16(keys), as_bf16(values), l.shape, n_kv, block_size, l.k, l.v, true);
  }
  {  // K transposed, each block's heads in a row
    Layout& l = add("blocks f16");
    l.runs = transposed_blocks(keys, values, l.shape, n_kv, block_size, l.k, l.v, false);
  }
  if (base.head_dim % kKvQ8Group == 0) {
    Layout& l = add("blocks q8_0");
    l.runs = q8_blocks(keys, values, l.shape, n_kv, block_size, l.q8);
  }
  {  // row-major rows of all heads
    Layout& l = add("rows f16");
    l.row_stride = stride;
    for (int64_t p = 0; p < n_kv; p += block_size)
      l.runs.push_back({keys.data() + p * stride, values.data() + p * stride, std::min(block_size, n_kv - p)});
  }
  return out;
}

// Q scaled up so that scores spread over tens of units and the softmax
// numerators over many binades: with scores of a unit or two every sum of
// f16-rounded numerators is exact in f32 and a changed summation order
// would go unseen.
std::vector<float> spread_q(int64_t n, uint32_t seed) {
  auto q = random_floats(n, seed);
  for (float& x : q) x *= 12.0f;
  return q;
}

struct Case {
  int n_head, n_head_kv, head_dim;
};

// The tables compared with avx2: every other SIMD table this CPU runs.
std::vector<const KernelTable*> tables_to_compare() {
  std::vector<const KernelTable*> out;
  for (const KernelTable* t : testing_util::runnable_simd_tables()) {
    if (t->isa != Isa::kAvx2) out.push_back(t);
  }
  return out;
}

// Why a test has nothing to compare, or empty.
std::string nothing_to_compare() {
  const KernelTable* avx2 = find_kernel_table("avx2");
  if (avx2 == nullptr || !avx2->runs_on(cpu_features())) return "no avx2 table here: nothing to compare with";
  if (tables_to_compare().empty())
    return "this CPU runs no SIMD table but avx2 (AVX-512 and VNNI tables run on Zen 4, Ice Lake and later)";
  return {};
}

// SmolLM2 (9:3 x 64), Gemma 3 270M (4:1 x 256), MHA, a head_dim of three
// sixteens (a lone vector beside the 64-float passes: 48 and 112), three
// q8_0 groups (a one-group pass beside the two-group ones: 96).
constexpr Case kCases[] = {{9, 3, 64}, {4, 1, 256}, {4, 4, 32}, {6, 2, 48}, {8, 2, 112}, {16, 2, 128}, {6, 2, 96}};

TEST(AttentionTablesTest, ChunksBitIdenticalToAvx2) {
  if (const std::string why = nothing_to_compare(); !why.empty()) GTEST_SKIP() << why;
  const KernelTable& avx2 = *find_kernel_table("avx2");
  for (const KernelTable* table : tables_to_compare()) {
    for (const Case& c : kCases) {
      const AttentionShape base{c.n_head, c.n_head_kv, c.head_dim, 1.0f / std::sqrt(static_cast<float>(c.head_dim))};
      for (int64_t n_kv : {1, 15, 16, 17, 70, 256}) {
        const int64_t stride = int64_t{c.n_head_kv} * c.head_dim;
        const auto q = spread_q(int64_t{c.n_head} * c.head_dim, 11 + n_kv);
        const auto keys = random_halves(n_kv * stride, 12 + n_kv), values = random_halves(n_kv * stride, 13 + n_kv);
        for (int64_t block_size : {1, 7, 16, 64}) {
          for (Layout& l : layouts(base, keys, values, n_kv, block_size)) {
            // Head ranges: all, one cut through a GQA group, a single head.
            for (std::pair<int, int> range :
                 {std::pair{0, c.n_head}, std::pair{1, c.n_head - 1}, std::pair{c.n_head - 1, c.n_head}}) {
              // Not a structured binding: the lambdas below use them (clang < 16).
              const int h0 = range.first, h1 = range.second;
              if (h0 >= h1) continue;
              const int heads = h1 - h0;
              std::vector<float> scores(static_cast<size_t>(heads) * n_kv);
              auto run = [&](AttentionChunkFn fn, std::vector<float>& acc, std::vector<float>& mx,
                             std::vector<float>& sm, const ChunkAhead& ahead) {
                acc.assign(static_cast<size_t>(heads) * c.head_dim, NAN);
                mx.assign(heads, NAN);
                sm.assign(heads, NAN);
                fn(l.shape, q.data(), l.runs, l.row_stride, scores.data(),
                   AttentionPartial{acc.data(), mx.data(), sm.data()}, h0, h1, ahead);
              };
              std::vector<float> a_acc, a_max, a_sum, b_acc, b_max, b_sum, c_acc, c_max, c_sum;
              const AttentionChunkFn chunk = resolve_attention(*table, l.shape).chunk;
              run(resolve_attention(avx2, l.shape).chunk, a_acc, a_max, a_sum, {});
              run(chunk, b_acc, b_max, b_sum, {});
              // A next chunk to fetch ahead (here the same runs' last KV head)
              // changes only what is prefetched.
              run(chunk, c_acc, c_max, c_sum, ChunkAhead{l.runs, c.n_head_kv - 1});
              const std::string where = std::string(table->name) + " " + l.name + " heads " + std::to_string(c.n_head) +
                                        ":" + std::to_string(c.n_head_kv) + "x" + std::to_string(c.head_dim) +
                                        " n_kv " + std::to_string(n_kv) + " block " + std::to_string(block_size) +
                                        " heads [" + std::to_string(h0) + "," + std::to_string(h1) + ")";
              EXPECT_EQ(0, std::memcmp(a_acc.data(), b_acc.data(), a_acc.size() * sizeof(float))) << where;
              EXPECT_EQ(0, std::memcmp(a_max.data(), b_max.data(), a_max.size() * sizeof(float))) << where;
              EXPECT_EQ(0, std::memcmp(a_sum.data(), b_sum.data(), a_sum.size() * sizeof(float))) << where;
              EXPECT_EQ(0, std::memcmp(a_acc.data(), c_acc.data(), a_acc.size() * sizeof(float))) << where << " ahead";
              EXPECT_EQ(0, std::memcmp(a_max.data(), c_max.data(), a_max.size() * sizeof(float))) << where << " ahead";
              EXPECT_EQ(0, std::memcmp(a_sum.data(), c_sum.data(), a_sum.size() * sizeof(float))) << where << " ahead";
            }
          }
        }
      }
    }
  }
}

// The two-row chunk (consecutive prompt rows: row 0 sees the first count0
// positions, row 1 all): both rows' partials, on the K-transposed layouts
// the pair kernel takes.
TEST(AttentionTablesTest, PairChunksBitIdenticalToAvx2) {
  if (const std::string why = nothing_to_compare(); !why.empty()) GTEST_SKIP() << why;
  const KernelTable& avx2 = *find_kernel_table("avx2");
  for (const KernelTable* table : tables_to_compare()) {
    for (const Case& c : kCases) {
      const AttentionShape base{c.n_head, c.n_head_kv, c.head_dim, 1.0f / std::sqrt(static_cast<float>(c.head_dim))};
      for (int64_t n_kv : {2, 16, 17, 70, 256}) {
        const int64_t stride = int64_t{c.n_head_kv} * c.head_dim;
        const auto q = spread_q(2 * int64_t{c.n_head} * c.head_dim, 31 + n_kv);
        const float* q0 = q.data();
        const float* q1 = q.data() + int64_t{c.n_head} * c.head_dim;
        const auto keys = random_halves(n_kv * stride, 32 + n_kv), values = random_halves(n_kv * stride, 33 + n_kv);
        for (int64_t block_size : {1, 7, 16, 64}) {
          for (Layout& l : layouts(base, keys, values, n_kv, block_size)) {
            const AttentionChunkPairFn want_pair = resolve_attention(avx2, l.shape).pair;
            const AttentionChunkPairFn got_pair = resolve_attention(*table, l.shape).pair;
            ASSERT_EQ(want_pair == nullptr, got_pair == nullptr) << table->name << " " << l.name;
            if (want_pair == nullptr) continue;
            for (std::pair<int, int> range : {std::pair{0, c.n_head}, std::pair{1, c.n_head - 1}}) {
              // Not a structured binding: the lambdas below use them (clang < 16).
              const int h0 = range.first, h1 = range.second;
              if (h0 >= h1) continue;
              const int heads = h1 - h0;
              std::vector<float> scores(2 * static_cast<size_t>(heads) * n_kv);
              auto run = [&](AttentionChunkPairFn fn, std::vector<float>& got) {
                // acc0, acc1, then max0, sum0, max1, sum1.
                const size_t acc = static_cast<size_t>(heads) * c.head_dim;
                got.assign(2 * acc + 4 * heads, NAN);
                float* m = got.data() + 2 * acc;
                fn(l.shape, q0, q1, l.runs, n_kv - 1, l.row_stride, scores.data(),
                   AttentionPartial{got.data(), m, m + heads},
                   AttentionPartial{got.data() + acc, m + 2 * heads, m + 3 * heads}, h0, h1);
              };
              std::vector<float> want, got;
              run(want_pair, want);
              run(got_pair, got);
              EXPECT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * sizeof(float)))
                  << table->name << " " << l.name << " heads " << c.n_head << ":" << c.n_head_kv << "x" << c.head_dim
                  << " n_kv " << n_kv << " block " << block_size << " heads [" << h0 << "," << h1 << ")";
            }
          }
        }
      }
    }
  }
}

// Whole rows over several chunks (each chunk merged in order), so the
// merges see the same partials: 2,100 positions at SmolLM2's shape.
TEST(AttentionTablesTest, RowsBitIdenticalToAvx2) {
  if (const std::string why = nothing_to_compare(); !why.empty()) GTEST_SKIP() << why;
  const AttentionShape base{9, 3, 64, 0.125f};
  const int64_t n_kv = 2100;
  const auto q = spread_q(9 * 64, 21);
  const auto keys = random_halves(n_kv * 192, 22), values = random_halves(n_kv * 192, 23);
  for (const KernelTable* table : tables_to_compare()) {
    for (Layout& l : layouts(base, keys, values, n_kv, 16)) {
      std::vector<float> scores(9 * kAttentionChunk), want(9 * 64, NAN), got(9 * 64, NAN);
      table_row(find_kernel_table("avx2"))(l.shape, q.data(), l.runs, l.row_stride, scores.data(), want.data(), 0, 9);
      table_row(table)(l.shape, q.data(), l.runs, l.row_stride, scores.data(), got.data(), 0, 9);
      EXPECT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * sizeof(float))) << table->name << " " << l.name;
      // The same row as row 1 of a pair (attention_row_pair_paged takes this
      // process's pair kernel): its bits again.
      if (l.shape.k_dim_stride == 0 || !attention_pairs_supported(l.shape)) continue;
      std::vector<float> q_pair(2 * 9 * 64), pair_scores(2 * 9 * kAttentionChunk), out0(9 * 64), out1(9 * 64, NAN);
      std::copy(q.begin(), q.end(), q_pair.begin() + 9 * 64);
      std::copy(q.begin(), q.end(), q_pair.begin());
      attention_row_pair_paged(l.shape, q_pair.data(), q_pair.data() + 9 * 64, l.runs, l.row_stride, pair_scores.data(),
                               out0.data(), out1.data(), 0, 9);
      EXPECT_EQ(0, std::memcmp(want.data(), out1.data(), want.size() * sizeof(float)))
          << table->name << " " << l.name << " as a pair's row 1";
    }
  }
}

}  // namespace
}  // namespace omnibus
