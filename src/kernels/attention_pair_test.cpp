// attention_row_pair_paged (two consecutive prompt rows computed together)
// against attention_row_paged on each row alone: bit-identical, across
// chunk boundaries, block layouts and head splits.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "base/cpu_features.h"
#include "kernels/attention.h"
#include "kernels/attention_test_util.h"

namespace omnibus {
namespace {

using namespace attention_test_util;

TEST(AttentionPairTest, EachRowIsBitIdenticalToItsSingleRow) {
  AttentionShape probe{9, 3, 64, 0.125f};
  probe.k_dim_stride = 16;
  if (!attention_pairs_supported(probe)) GTEST_SKIP() << "no pair kernel on this CPU";
  for (const KvCacheType type : {KvCacheType::kF16, KvCacheType::kQ8_0, KvCacheType::kBF16, KvCacheType::kQ4_0}) {
  AttentionShape q4_probe{9, 3, 64, 0.125f, 64 * 16, 16, KvCacheType::kQ4_0};
  if (type == KvCacheType::kQ4_0 && !attention_pairs_supported(q4_probe)) continue;  // AVX-512 only
  // Row 1 sees n positions: across the 256-position chunks (256 + 1: row 0
  // ends exactly at a chunk's end and row 1 opens the next one alone).
  for (int64_t n : {2, 3, 17, 256, 257, 258, 300, 513, 600}) {
    for (int64_t block_size : {1, 5, 16, 100}) {
      for (auto [n_head, n_head_kv] : {std::pair{9, 3}, {4, 2}, {8, 1}}) {
        AttentionShape shape{n_head, n_head_kv, 64, 0.125f};
        shape.kv_type = type;  // q8_blocks sets it too
        const int64_t stride = int64_t{n_head_kv} * 64;
        const auto q0 = random_floats(n_head * 64, 501 + n), q1 = random_floats(n_head * 64, 502 + n);
        auto k = random_halves(n * stride, 503 + n), v = random_halves(n * stride, 504 + n);
        if (type == KvCacheType::kBF16) k = as_bf16(k), v = as_bf16(v);
        std::vector<uint16_t> ks, vs;
        Q8Store q8_store;
        const auto runs = type == KvCacheType::kQ8_0   ? q8_blocks(k, v, shape, n, block_size, q8_store)
                          : type == KvCacheType::kQ4_0 ? q4_blocks(k, v, shape, n, block_size, q8_store)
                                                       : transposed_blocks(k, v, shape, n, block_size, ks, vs);
        std::vector<float> want0(n_head * 64), want1(n_head * 64), scores(2 * n_head * n);
        // Row 0: the runs cut to its n - 1 positions.
        std::vector<KvRun> runs0(runs.size());
        runs0.resize(slice_runs(runs, 0, n - 1, shape.k_run_step(64), shape.v_run_step(64), runs0.data()));
        attention_row_paged(shape, q0.data(), runs0, 64, scores.data(), want0.data(), 0, n_head);
        attention_row_paged(shape, q1.data(), runs, 64, scores.data(), want1.data(), 0, n_head);
        std::vector<float> got0(n_head * 64, NAN), got1(n_head * 64, NAN);
        const int cut = n_head / 2 + 1;  // heads split across a GQA group
        attention_row_pair_paged(shape, q0.data(), q1.data(), runs, 64, scores.data(), got0.data(), got1.data(), 0,
                                 cut);
        attention_row_pair_paged(shape, q0.data(), q1.data(), runs, 64, scores.data(), got0.data(), got1.data(), cut,
                                 n_head);
        EXPECT_EQ(0, std::memcmp(want0.data(), got0.data(), sizeof(float) * want0.size()))
            << kv_cache_type_name(type) << " row 0, n " << n << " block_size " << block_size << " heads " << n_head
            << "/" << n_head_kv;
        EXPECT_EQ(0, std::memcmp(want1.data(), got1.data(), sizeof(float) * want1.size()))
            << kv_cache_type_name(type) << " row 1, n " << n << " block_size " << block_size << " heads " << n_head
            << "/" << n_head_kv;
      }
    }
  }
  }
}

// Two rows of different sequences sharing a cached prefix (the same K/V
// memory for their first `shared` positions, their own after it):
// attention_rows_shared_prefix against attention_row_paged on each row.
TEST(AttentionPairTest, SharedPrefixRowsAreBitIdenticalToTheirSingleRows) {
  AttentionShape probe{9, 3, 64, 0.125f};
  probe.k_dim_stride = 16;
  if (!attention_pairs_supported(probe)) GTEST_SKIP() << "no pair kernel on this CPU";
  struct Case {
    int64_t n0, n1, shared;
  };
  // Prefixes below, at and across chunk ends; rows ending inside the
  // prefix's last chunk; a row as long as the prefix plus one.
  const Case cases[] = {{300, 280, 0},   {300, 280, 100}, {300, 280, 256}, {300, 280, 270}, {257, 600, 256},
                        {600, 520, 512}, {800, 513, 512}, {700, 900, 600}, {513, 513, 512}, {1100, 1030, 1000}};
  for (const KvCacheType type : {KvCacheType::kF16, KvCacheType::kQ8_0, KvCacheType::kBF16, KvCacheType::kQ4_0}) {
    AttentionShape q4_probe{9, 3, 64, 0.125f, 64 * 16, 16, KvCacheType::kQ4_0};
    if (type == KvCacheType::kQ4_0 && !attention_pairs_supported(q4_probe)) continue;  // AVX-512 only
    for (const Case& cs : cases) {
      for (int64_t block_size : {1, 16, 100}) {
        for (auto [n_head, n_head_kv] : {std::pair{9, 3}, {8, 1}}) {
          AttentionShape shape{n_head, n_head_kv, 64, 0.125f};
          shape.kv_type = type;
          const int64_t stride = int64_t{n_head_kv} * 64;
          const auto seed = static_cast<uint32_t>(900 + cs.n0 + cs.shared);
          const auto q0 = random_floats(n_head * 64, seed), q1 = random_floats(n_head * 64, seed + 1);
          // Sequence 0's cache, and sequence 1's own (only its positions
          // past the prefix are used).
          auto k0 = random_halves(cs.n0 * stride, seed + 2), v0 = random_halves(cs.n0 * stride, seed + 3);
          auto k1 = random_halves(cs.n1 * stride, seed + 4), v1 = random_halves(cs.n1 * stride, seed + 5);
          if (type == KvCacheType::kBF16) k0 = as_bf16(k0), v0 = as_bf16(v0), k1 = as_bf16(k1), v1 = as_bf16(v1);
          std::vector<uint16_t> ks0, vs0, ks1, vs1;
          Q8Store store0, store1;
          auto blocks = [&](const std::vector<uint16_t>& k, const std::vector<uint16_t>& v, int64_t n, Q8Store& q8,
                            std::vector<uint16_t>& ks, std::vector<uint16_t>& vs) {
            return type == KvCacheType::kQ8_0   ? q8_blocks(k, v, shape, n, block_size, q8)
                   : type == KvCacheType::kQ4_0 ? q4_blocks(k, v, shape, n, block_size, q8)
                                                : transposed_blocks(k, v, shape, n, block_size, ks, vs);
          };
          const auto runs0 = blocks(k0, v0, cs.n0, store0, ks0, vs0);
          const auto own1 = blocks(k1, v1, cs.n1, store1, ks1, vs1);
          const int64_t ks = shape.k_run_step(64), vstep = shape.v_run_step(64);
          std::vector<KvRun> runs1(runs0.size() + own1.size());
          size_t n_runs1 = slice_runs(runs0, 0, cs.shared, ks, vstep, runs1.data());
          n_runs1 += slice_runs(own1, cs.shared, cs.n1 - cs.shared, ks, vstep, runs1.data() + n_runs1);
          runs1.resize(n_runs1);
          std::vector<float> want0(n_head * 64), want1(n_head * 64), scores(2 * n_head * std::max(cs.n0, cs.n1));
          attention_row_paged(shape, q0.data(), runs0, 64, scores.data(), want0.data(), 0, n_head);
          attention_row_paged(shape, q1.data(), runs1, 64, scores.data(), want1.data(), 0, n_head);
          std::vector<float> got0(n_head * 64, NAN), got1(n_head * 64, NAN);
          const int cut = n_head / 2 + 1;  // heads split across a GQA group
          attention_rows_shared_prefix(shape, q0.data(), runs0, q1.data(), runs1, cs.shared, 64, scores.data(),
                                       got0.data(), got1.data(), 0, cut);
          attention_rows_shared_prefix(shape, q0.data(), runs0, q1.data(), runs1, cs.shared, 64, scores.data(),
                                       got0.data(), got1.data(), cut, n_head);
          const std::string what = std::string(kv_cache_type_name(type)) + " n0 " + std::to_string(cs.n0) + " n1 " +
                                   std::to_string(cs.n1) + " shared " + std::to_string(cs.shared) + " block_size " +
                                   std::to_string(block_size) + " heads " + std::to_string(n_head);
          EXPECT_EQ(0, std::memcmp(want0.data(), got0.data(), sizeof(float) * want0.size())) << "row 0, " << what;
          EXPECT_EQ(0, std::memcmp(want1.data(), got1.data(), sizeof(float) * want1.size())) << "row 1, " << what;
        }
      }
    }
  }
}

TEST(AttentionPairTest, OnlyWhereThePairKernelApplies) {
  AttentionShape rows{9, 3, 64, 0.125f};  // row-major K
  EXPECT_FALSE(attention_pairs_supported(rows));
  if (!cpu_features().has_avx2_fma()) return;
  AttentionShape q8 = rows;
  q8.k_dim_stride = 16;
  q8.kv_type = KvCacheType::kQ8_0;
  EXPECT_TRUE(attention_pairs_supported(q8));
  q8.head_dim = 16;  // not whole q8_0 groups
  EXPECT_FALSE(attention_pairs_supported(q8));
}

}  // namespace
}  // namespace omnibus

namespace omnibus {
namespace {

// Two consecutive prompt rows at 2,048 positions (SmolLM2's shape, blocks
// of 16, in cache): the pair kernel against the two rows one at a time; a
// measurement, not a check (--gtest_also_run_disabled_tests
// --gtest_filter=*AttentionBench*).
TEST(AttentionBench, DISABLED_PrefillRowPair) {
  const int64_t n = 2048, stride = 3 * 64;
  const auto k = attention_test_util::random_halves(n * stride, 1), v = attention_test_util::random_halves(n * stride, 2);
  const auto k_bf16 = attention_test_util::as_bf16(k), v_bf16 = attention_test_util::as_bf16(v);
  for (const KvCacheType type : {KvCacheType::kF16, KvCacheType::kQ8_0, KvCacheType::kBF16}) {
  AttentionShape shape{9, 3, 64, 0.125f};
  shape.kv_type = type;
  std::vector<uint16_t> ks, vs;
  attention_test_util::Q8Store q8_store;
  const bool bf16 = type == KvCacheType::kBF16;
  const auto runs = type == KvCacheType::kQ8_0
                        ? attention_test_util::q8_blocks(k, v, shape, n, 16, q8_store)
                        : attention_test_util::transposed_blocks(bf16 ? k_bf16 : k, bf16 ? v_bf16 : v, shape, n, 16,
                                                                 ks, vs);
  if (!attention_pairs_supported(shape)) GTEST_SKIP();
  std::vector<KvRun> runs0(runs.size());
  runs0.resize(slice_runs(runs, 0, n - 1, 1, 64, runs0.data()));
  const auto q = attention_test_util::random_floats(2 * 9 * 64, 3);
  std::vector<float> scores(2 * 9 * n), out(2 * 9 * 64);
  for (bool pair : {false, true}) {
    double best = 1e9;
    for (int rep = 0; rep < 200; ++rep) {
      const auto t0 = std::chrono::steady_clock::now();
      if (pair) {
        attention_row_pair_paged(shape, q.data(), q.data() + 576, runs, 64, scores.data(), out.data(),
                                 out.data() + 576, 0, 9);
      } else {
        attention_row_paged(shape, q.data(), runs0, 64, scores.data(), out.data(), 0, 9);
        attention_row_paged(shape, q.data() + 576, runs, 64, scores.data(), out.data() + 576, 0, 9);
      }
      best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::printf("two rows at 2,048 positions, %s cache, %s: %7.1f us\n", kv_cache_type_name(type),
                pair ? "pair kernel" : "one at a time", best * 1e6);
  }
  }
}

}  // namespace
}  // namespace omnibus

namespace omnibus {
namespace {

// What bounds the attention kernels on this CPU: throughput of one 8-lane
// FP32 FMA against widening eight f16 values (vcvtph2ps) or eight int8
// codes (vpmovsxbd + vcvtdq2ps) to f32, each in a loop of independent
// instructions (docs/profiling.md). A measurement, not a check; x86 only
// (the loops are x86 assembly).
#if defined(__x86_64__)
TEST(AttentionBench, DISABLED_WideningAgainstFma) {
  if (!cpu_features().has_avx2_fma()) GTEST_SKIP();
  alignas(64) static uint16_t buf[64] = {};
  const void* p = buf;
  constexpr long kIters = 20000000;
  auto time_it = [](auto&& body) {
    double best = 1e9;
    for (int rep = 0; rep < 5; ++rep) {
      const auto t0 = std::chrono::steady_clock::now();
      body();
      best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return best * 1e9 / kIters / 8;  // ns per instruction (per 8 values)
  };
  const double fma = time_it([] {
    asm volatile(
        "mov %0, %%rcx\n1:\n"
        "vfmadd231ps %%ymm14,%%ymm15,%%ymm0\n vfmadd231ps %%ymm14,%%ymm15,%%ymm1\n"
        "vfmadd231ps %%ymm14,%%ymm15,%%ymm2\n vfmadd231ps %%ymm14,%%ymm15,%%ymm3\n"
        "vfmadd231ps %%ymm14,%%ymm15,%%ymm4\n vfmadd231ps %%ymm14,%%ymm15,%%ymm5\n"
        "vfmadd231ps %%ymm14,%%ymm15,%%ymm6\n vfmadd231ps %%ymm14,%%ymm15,%%ymm7\n"
        "dec %%rcx\n jnz 1b\n"
        :
        : "r"(kIters)
        : "rcx", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7");
  });
  const double f16 = time_it([p] {
    asm volatile(
        "mov %0, %%rcx\n1:\n"
        "vcvtph2ps (%1),%%ymm0\n vcvtph2ps 16(%1),%%ymm1\n vcvtph2ps 32(%1),%%ymm2\n vcvtph2ps 48(%1),%%ymm3\n"
        "vcvtph2ps 64(%1),%%ymm4\n vcvtph2ps 80(%1),%%ymm5\n vcvtph2ps 96(%1),%%ymm6\n vcvtph2ps 112(%1),%%ymm7\n"
        "dec %%rcx\n jnz 1b\n"
        :
        : "r"(kIters), "r"(p)
        : "rcx", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "memory");
  });
  const double i8 = time_it([p] {
    asm volatile(
        "mov %0, %%rcx\n1:\n"
        "vpmovsxbd (%1),%%ymm0\n vpmovsxbd 8(%1),%%ymm1\n vpmovsxbd 16(%1),%%ymm2\n vpmovsxbd 24(%1),%%ymm3\n"
        "vcvtdq2ps %%ymm0,%%ymm0\n vcvtdq2ps %%ymm1,%%ymm1\n vcvtdq2ps %%ymm2,%%ymm2\n vcvtdq2ps %%ymm3,%%ymm3\n"
        "vpmovsxbd 32(%1),%%ymm4\n vpmovsxbd 40(%1),%%ymm5\n vpmovsxbd 48(%1),%%ymm6\n vpmovsxbd 56(%1),%%ymm7\n"
        "vcvtdq2ps %%ymm4,%%ymm4\n vcvtdq2ps %%ymm5,%%ymm5\n vcvtdq2ps %%ymm6,%%ymm6\n vcvtdq2ps %%ymm7,%%ymm7\n"
        "dec %%rcx\n jnz 1b\n"
        :
        : "r"(kIters), "r"(p)
        : "rcx", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "memory");
  });
  std::printf("ns per 8 lanes: FMA %.2f, f16 -> f32 (vcvtph2ps) %.2f, int8 -> f32 (vpmovsxbd + vcvtdq2ps) %.2f\n", fma,
              f16, i8);
}
#endif  // __x86_64__

}  // namespace
}  // namespace omnibus

namespace omnibus {
namespace {

// Two decode rows of different sequences sharing a cached prefix (SmolLM2's
// shape, blocks of 16, in cache): attention_rows_shared_prefix against the
// two rows one at a time; a measurement, not a check.
TEST(AttentionBench, DISABLED_DecodeRowsSharingAPrefix) {
  const int64_t stride = 3 * 64;
  for (const auto& [n, shared] : {std::pair<int64_t, int64_t>{1050, 1000}, {2100, 2000}}) {
    const auto k = attention_test_util::random_halves(n * stride, 1);
    const auto v = attention_test_util::random_halves(n * stride, 2);
    AttentionShape shape{9, 3, 64, 0.125f};
    std::vector<uint16_t> ks, vs;
    const auto runs0 = attention_test_util::transposed_blocks(k, v, shape, n, 16, ks, vs);
    // Row 1: row 0's positions but the last 7. Its tail after the prefix is
    // row 0's memory too, which only changes what is in cache: the call
    // computes just the first `shared` positions' whole chunks together.
    std::vector<KvRun> runs1(runs0.size());
    runs1.resize(slice_runs(runs0, 0, n - 7, 1, 64, runs1.data()));
    const auto q = attention_test_util::random_floats(2 * 9 * 64, 3);
    std::vector<float> scores(2 * 9 * n), out(2 * 9 * 64);
    for (bool together : {false, true, false, true}) {
      double best = 1e9;
      for (int rep = 0; rep < 300; ++rep) {
        const auto t0 = std::chrono::steady_clock::now();
        for (int h = 0; h < 9; h += 3) {
          if (together) {
            attention_rows_shared_prefix(shape, q.data(), runs0, q.data() + 576, runs1, shared, 64, scores.data(),
                                         out.data(), out.data() + 576, h, h + 3);
          } else {
            attention_row_paged(shape, q.data(), runs0, 64, scores.data(), out.data(), h, h + 3);
            attention_row_paged(shape, q.data() + 576, runs1, 64, scores.data(), out.data() + 576, h, h + 3);
          }
        }
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      }
      std::printf("two decode rows at %lld positions sharing %lld, f16 cache, %s: %7.1f us\n",
                  static_cast<long long>(n), static_cast<long long>(shared), together ? "together" : "one at a time",
                  best * 1e6);
    }
  }
}

}  // namespace
}  // namespace omnibus
