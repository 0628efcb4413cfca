// Throughput of matmul on the SmolLM2-135M shapes; disabled by default (it is
// a measurement, not a check). Run with:
//   build/src/kernels/kernels_test --gtest_also_run_disabled_tests
//     --gtest_filter=*MatmulBench*
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "base/aligned_buffer.h"
#include "base/thread_pool.h"
#include "base/timer.h"
#include "kernels/matmul.h"
#include "kernels/matmul_test_util.h"
#include "kernels/weight_interleave.h"

namespace omnibus {
namespace {

// Best of repeated runs, at least 0.2 s in total.
double best_seconds(const WeightMatrix& w, const float* x, int64_t n_x, float* y, ThreadPool* pool) {
  matmul(w, x, n_x, y, pool);
  double best = 1e9, total = 0;
  for (int i = 0; total < 0.2 || i < 5; ++i) {
    Stopwatch s;
    matmul(w, x, n_x, y, pool);
    const double t = s.seconds();
    best = std::min(best, t);
    total += t;
  }
  return best;
}

TEST(MatmulBench, DISABLED_DecodeAndPrefillThroughput) {
  struct Shape {
    DType type;
    int64_t rows, cols, n_x;
  };
  const Shape shapes[] = {
      {DType::kQ4_1, 576, 576, 1},      {DType::kQ8_0, 576, 576, 1},      {DType::kQ4_0, 576, 576, 1},
      {DType::kQ4_1, 576, 1536, 1},     {DType::kQ4_1, 1536, 576, 1},     {DType::kQ4_1, 49152, 576, 1},
      {DType::kQ8_0, 49152, 576, 1},    {DType::kF16, 576, 1536, 1},      {DType::kF32, 576, 1536, 1},
      {DType::kQ4_1, 1536, 576, 8},     {DType::kQ4_1, 1536, 576, 512},   {DType::kQ4_1, 576, 1536, 512},
      {DType::kQ4_K, 1536, 768, 512},   {DType::kF32, 1536, 576, 512},    {DType::kQ4_0, 1536, 576, 512},
      {DType::kQ8_0, 1536, 576, 512},   {DType::kQ4_1, 49152, 576, 3},    {DType::kQ5_0, 2048, 640, 1},
      {DType::kQ5_0, 2048, 640, 512},   {DType::kQ6_K, 640, 2048, 512},   {DType::kQ4_K, 640, 1024, 512},
      {DType::kQ6_K, 640, 2048, 1},     {DType::kQ4_K, 1536, 768, 1},     {DType::kQ5_K, 1536, 768, 512},
      {DType::kQ5_K, 1536, 768, 1},     {DType::kQ3_K, 1536, 768, 512},   {DType::kQ3_K, 1536, 768, 1},
      {DType::kIQ4_XS, 1536, 768, 512}, {DType::kIQ4_XS, 1536, 768, 1},   {DType::kQ2_K, 1536, 768, 512},
      {DType::kQ2_K, 1536, 768, 1},     {DType::kIQ4_NL, 1536, 768, 512}, {DType::kIQ4_NL, 1536, 768, 1},
  };
  // OMNIBUS_BENCH_TYPE=q3_K: that type's shapes only.
  const char* only = std::getenv("OMNIBUS_BENCH_TYPE");
  std::printf("path: %s\n", matmul_path_name());
  for (int threads : {1, 2}) {
    ThreadPool pool(threads);
    for (const Shape& s : shapes) {
      if (only != nullptr && dtype_name(s.type) != only) continue;
      const auto w = testing_util::random_weights(s.type, s.rows, s.cols, 1);
      const auto x = testing_util::random_floats(s.n_x * s.cols, 2);
      std::vector<float> y(static_cast<size_t>(s.n_x * s.rows));
      AlignedBuffer<uint8_t> copy;
      for (bool interleaved : {false, true}) {
        WeightMatrix view = w.view;
        if (interleaved) {
          if (!can_interleave8(s.type)) continue;
          copy.resize(interleaved8_bytes(w.view));
          view = interleave8(w.view, copy.data());
        }
        const double t = best_seconds(view, x.data(), s.n_x, y.data(), &pool);
        const double bytes = static_cast<double>(s.rows) * static_cast<double>(w.view.row_bytes);
        const double flops = 2.0 * static_cast<double>(s.rows * s.cols * s.n_x);
        std::printf("%-5s %-4s %6lldx%-5lld n_x=%-4lld threads=%d %9.1f us %7.2f GB/s %7.1f GFLOP/s\n",
                    dtype_name(s.type).c_str(), interleaved ? "il8" : "rows", static_cast<long long>(s.rows),
                    static_cast<long long>(s.cols), static_cast<long long>(s.n_x), threads, t * 1e6, bytes / t / 1e9,
                    flops / t / 1e9);
      }
    }
  }
}

// Decode (one x row) at the shapes of an 8B model (Llama 3.1 8B: hidden
// 4096, FFN 14336, vocab 128256), every matrix far larger than the caches,
// in the types a Q4_K_M file mixes (Q4_K, Q6_K) and the legacy ones for
// comparison: GB/s of weight bytes read, the figure to hold against the
// machine's read bandwidth (`omnibus roofline`). Interleaved layout, as
// the forward pass uses it.
TEST(MatmulBench, DISABLED_DecodeAtEightBillionShapes) {
  struct Shape {
    DType type;
    int64_t rows, cols;
  };
  const Shape shapes[] = {
      {DType::kQ4_K, 14336, 4096}, {DType::kQ6_K, 4096, 14336},  {DType::kQ4_K, 4096, 14336},
      {DType::kQ6_K, 14336, 4096}, {DType::kQ4_0, 14336, 4096},  {DType::kQ8_0, 14336, 4096},
      {DType::kQ5_K, 14336, 4096}, {DType::kQ6_K, 128256, 2048}, {DType::kQ4_K, 128256, 2048},
  };
  // OMNIBUS_BENCH_TYPE=q6_K: that type only; OMNIBUS_BENCH_THREADS=1: one
  // pool size; OMNIBUS_BENCH_REPS: timed calls per shape (default 60). With
  // `perf stat -e cycles:u` the cycle difference between REPS=0 and REPS=n
  // is the kernel's, a figure a busy machine does not inflate as it does
  // wall time.
  const char* only = std::getenv("OMNIBUS_BENCH_TYPE");
  const char* threads_env = std::getenv("OMNIBUS_BENCH_THREADS");
  const char* reps_env = std::getenv("OMNIBUS_BENCH_REPS");
  const int reps = reps_env != nullptr ? std::atoi(reps_env) : 60;
  std::vector<int> pool_sizes = {1, 2};
  if (threads_env != nullptr) pool_sizes = {std::atoi(threads_env)};
  std::printf("path: %s\n", matmul_path_name());
  for (int threads : pool_sizes) {
    ThreadPool pool(threads);
    for (const Shape& s : shapes) {
      if (only != nullptr && dtype_name(s.type) != only) continue;
      const auto w = testing_util::random_weights(s.type, s.rows, s.cols, 1);
      const auto x = testing_util::random_floats(s.cols, 2);
      std::vector<float> y(static_cast<size_t>(s.rows));
      AlignedBuffer<uint8_t> copy;
      WeightMatrix view = w.view;
      if (can_interleave8(s.type)) {
        copy.resize(interleaved8_bytes(w.view));
        view = interleave8(w.view, copy.data());
      }
      std::vector<double> times;
      if (reps == 0) continue;
      for (int i = 0; i < reps; ++i) {
        Stopwatch watch;
        matmul(view, x.data(), 1, y.data(), &pool);
        times.push_back(watch.seconds());
      }
      std::sort(times.begin(), times.end());
      const double t = times[times.size() / 2];
      const double bytes = static_cast<double>(s.rows) * static_cast<double>(w.view.row_bytes);
      std::printf("%-5s %6lldx%-6lld threads=%d median %8.1f us %7.2f GB/s\n", dtype_name(s.type).c_str(),
                  static_cast<long long>(s.rows), static_cast<long long>(s.cols), threads, t * 1e6, bytes / t / 1e9);
    }
  }
}

// Decode of a matrix bigger than the L3 (the vocab projection's shape), the
// interleaved copy on 4 KiB pages against the same bytes on 2 MiB pages,
// the two alternating run by run in one process so that both see the same
// machine. Prints the median of the per-round ratios.
TEST(MatmulBench, DISABLED_DecodeFromDramHugePages) {
  ThreadPool pool(2);
  for (DType type : {DType::kQ4_1, DType::kQ8_0}) {
    const auto w = testing_util::random_weights(type, 49152, 576, 1);
    const auto x = testing_util::random_floats(576, 2);
    std::vector<float> y(49152);
    AlignedBuffer<uint8_t> small_pages, huge_pages;
    small_pages.resize(interleaved8_bytes(w.view));
    huge_pages.resize(interleaved8_bytes(w.view), /*huge_pages=*/true);
    const WeightMatrix a = interleave8(w.view, small_pages.data()), b = interleave8(w.view, huge_pages.data());
    std::vector<double> ta, tb, ratio;
    for (int round = 0; round < 40; ++round) {
      const double sa = best_seconds(a, x.data(), 1, y.data(), &pool);
      const double sb = best_seconds(b, x.data(), 1, y.data(), &pool);
      ta.push_back(sa), tb.push_back(sb), ratio.push_back(sa / sb);
    }
    auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    const double bytes = 49152.0 * static_cast<double>(w.view.row_bytes);
    std::printf("%-5s 49152x576 n_x=1 threads=2: 4 KiB pages %7.1f us (%5.2f GB/s), 2 MiB pages %7.1f us "
                "(%5.2f GB/s), speedup median %.3f\n",
                dtype_name(type).c_str(), median(ta) * 1e6, bytes / median(ta) / 1e9, median(tb) * 1e6,
                bytes / median(tb) / 1e9, median(ratio));
  }
}

// Prefill thread scaling of the int8 tile (q4_1, the 1536x576 interleaved
// shape, 512 x rows), three ways alternating in one process so that all see
// the same machine: one thread; the two-thread pool on one matmul; and two
// independent one-thread matmuls on their own copies at once (what the two
// cores give with nothing shared: no split, no hand-off, no shared x). The
// medians of the per-round ratios to one thread show how much of the
// hardware's scaling the pool keeps.
TEST(MatmulBench, DISABLED_PrefillThreadScaling) {
  constexpr int64_t kRows = 1536, kCols = 576, kNx = 512;
  const auto w = testing_util::random_weights(DType::kQ4_1, kRows, kCols, 1);
  AlignedBuffer<uint8_t> copy_a, copy_b;
  copy_a.resize(interleaved8_bytes(w.view));
  copy_b.resize(interleaved8_bytes(w.view));
  const WeightMatrix wa = interleave8(w.view, copy_a.data()), wb = interleave8(w.view, copy_b.data());
  const auto xa = testing_util::random_floats(kNx * kCols, 2), xb = testing_util::random_floats(kNx * kCols, 3);
  std::vector<float> ya(kNx * kRows), yb(kNx * kRows);
  ThreadPool one(1), one_b(1), two(2);
  std::vector<double> pool_ratio, independent_ratio, t1s, t2s, tis;
  for (int round = 0; round < 30; ++round) {
    const double t1 = best_seconds(wa, xa.data(), kNx, ya.data(), &one);
    const double t2 = best_seconds(wa, xa.data(), kNx, ya.data(), &two);
    // Two one-thread matmuls at once: each thread runs its own best-of loop;
    // the pair's throughput is two matmuls over the slower one's time.
    double ta = 0, tb = 0;
    std::thread other([&] { tb = best_seconds(wb, xb.data(), kNx, yb.data(), &one_b); });
    ta = best_seconds(wa, xa.data(), kNx, ya.data(), &one);
    other.join();
    const double ti = std::max(ta, tb) / 2;  // seconds per matmul of the pair
    t1s.push_back(t1), t2s.push_back(t2), tis.push_back(ti);
    pool_ratio.push_back(t1 / t2), independent_ratio.push_back(t1 / ti);
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  const double flops = 2.0 * kRows * kCols * kNx;
  std::printf("q4_1 il8 %lldx%lld n_x=%lld: 1 thread %.1f GFLOP/s, pool of 2 %.1f (x%.3f), two independent %.1f "
              "(x%.3f) (medians of 30 rounds)\n",
              static_cast<long long>(kRows), static_cast<long long>(kCols), static_cast<long long>(kNx),
              flops / median(t1s) / 1e9, flops / median(t2s) / 1e9, median(pool_ratio), flops / median(tis) / 1e9,
              median(independent_ratio));
}

}  // namespace
}  // namespace omnibus
