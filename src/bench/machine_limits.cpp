#include "bench/machine_limits.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <thread>
#include <vector>

#include "base/aligned_buffer.h"
#include "base/cpu_features.h"
#include "base/timer.h"

namespace omnibus::bench {
namespace {

// Whether the AVX2+FMA probes (machine_limits_avx2.cpp) are built and run
// here; CMake builds them for x86-64 only (else OMNIBUS_NO_AVX2_BUILD).
bool has_avx2() {
#if defined(OMNIBUS_NO_AVX2_BUILD)
  return false;
#else
  const CpuFeatures& f = cpu_features();
  return f.avx2 && f.fma;
#endif
}

float read_sum(bool simd, const float* data, size_t n) {
#if !defined(OMNIBUS_NO_AVX2_BUILD)
  if (simd) return detail::read_sum_avx2(data, n);
#endif
  return detail::read_sum_scalar(data, n);
}

double fma_loop(bool simd, long iterations) {
#if !defined(OMNIBUS_NO_AVX2_BUILD)
  if (simd) return detail::fma_loop_avx2(iterations);
#endif
  return detail::fma_loop_scalar(iterations);
}

// Runs fn(t) on `threads` threads at once; returns the wall seconds.
template <class Fn>
double timed_parallel(int threads, Fn fn) {
  std::vector<std::thread> pool;
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  double start = 0;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) {
      }
      fn(t);
    });
  }
  while (ready.load() < threads) {
  }
  start = now_seconds();
  go.store(true, std::memory_order_release);
  for (std::thread& th : pool) th.join();
  return now_seconds() - start;
}

}  // namespace

namespace detail {

double fma_loop_scalar(long iterations) {
  float acc[8] = {0, 1e-3f, 2e-3f, 3e-3f, 4e-3f, 5e-3f, 6e-3f, 7e-3f};
  for (long it = 0; it < iterations; ++it)
    for (float& a : acc) a = a * 0.999999f + 1e-7f;
  volatile float sink = acc[0] + acc[7];
  (void)sink;
  return static_cast<double>(iterations) * 8 * 2;
}

double int8_dot_loop_scalar(long iterations) {
  // Eight lanes, each with its own operands the compiler cannot see
  // through (or it would do one multiply for all of them, or vectorize).
  int32_t acc[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  int32_t u[8] = {3, 4, 5, 6, 7, 8, 9, 10}, s[8] = {-5, -4, -3, -2, 2, 3, 4, 5};
  for (long it = 0; it < iterations; ++it) {
    for (int i = 0; i < 8; ++i) {
      asm volatile("" : "+r"(u[i]), "+r"(s[i]));
      acc[i] += u[i] * s[i];
    }
  }
  volatile int32_t sink = acc[0] + acc[7];
  (void)sink;
  return static_cast<double>(iterations) * 8 * 2;
}

float read_sum_scalar(const float* data, size_t n) {
  float total = 0;
  for (size_t i = 0; i < n; ++i) total += data[i];
  return total;
}

}  // namespace detail

double measure_memory_bandwidth(int threads, size_t buffer_bytes, double seconds) {
  threads = std::max(1, threads);
  const size_t n = buffer_bytes / sizeof(float);
  AlignedBuffer<float> buffer(n);
  float* data = buffer.data();
  for (size_t i = 0; i < n; ++i) data[i] = static_cast<float>(i & 1023) * 1e-3f;  // touch every page
  const size_t per_thread = (n / static_cast<size_t>(threads)) & ~size_t{31};
  const bool simd = has_avx2();
  std::vector<float> sinks(static_cast<size_t>(threads));
  double best = 0;
  Stopwatch total;
  for (int pass = 0; pass < 3 || (total.seconds() < seconds && pass < 20); ++pass) {
    const double s = timed_parallel(threads, [&](int t) {
      const float* slice = data + per_thread * static_cast<size_t>(t);
      sinks[static_cast<size_t>(t)] = read_sum(simd, slice, per_thread);
    });
    best = std::max(best, static_cast<double>(per_thread * sizeof(float)) * threads / s);
  }
  volatile float keep = sinks[0];
  (void)keep;
  return best;
}

namespace {

// The best rate of `loop` (operations done in its iterations) over five
// passes of all threads at once, a pass sized at ~1/5 of `seconds`.
template <class Loop>
double best_parallel_rate(int threads, double seconds, Loop loop) {
  threads = std::max(1, threads);
  long iterations = 1 << 16;
  Stopwatch calibrate;
  loop(iterations);
  const double per_iteration = std::max(1e-12, calibrate.seconds() / static_cast<double>(iterations));
  iterations = std::max(1L << 16, static_cast<long>(seconds / 5 / per_iteration));
  std::vector<double> ops(static_cast<size_t>(threads));
  double best = 0;
  for (int pass = 0; pass < 5; ++pass) {
    const double s = timed_parallel(threads, [&](int t) { ops[static_cast<size_t>(t)] = loop(iterations); });
    double total = 0;
    for (double o : ops) total += o;
    best = std::max(best, total / s);
  }
  return best;
}

}  // namespace

double measure_peak_flops(int threads, double seconds, std::string* path) {
  const bool simd = has_avx2();
  if (path) *path = simd ? "avx2+fma" : "scalar";
  return best_parallel_rate(threads, seconds, [simd](long iterations) { return fma_loop(simd, iterations); });
}

std::vector<std::string> runnable_int8_paths() {
  std::vector<std::string> paths;
#if !defined(OMNIBUS_NO_AVX2_BUILD)
  const CpuFeatures& f = cpu_features();
#if !defined(OMNIBUS_NO_AVX512VNNI_BUILD)
  if (f.avx2 && f.avx512f && f.avx512bw && f.avx512_vnni) paths.push_back("avx512-vnni");
#endif
#if !defined(OMNIBUS_NO_AVXVNNI_BUILD)
  if (f.avx2 && f.avx_vnni) paths.push_back("avx-vnni");
#endif
  if (has_avx2()) paths.push_back("avx2");
#endif
  paths.push_back("scalar");
  return paths;
}

double int8_dot_loop(const std::string& path, long iterations) {
#if !defined(OMNIBUS_NO_AVX2_BUILD)
#if !defined(OMNIBUS_NO_AVX512VNNI_BUILD)
  if (path == "avx512-vnni") return detail::int8_dot_loop_avx512vnni(iterations);
#endif
#if !defined(OMNIBUS_NO_AVXVNNI_BUILD)
  if (path == "avx-vnni") return detail::int8_dot_loop_avxvnni(iterations);
#endif
  if (path == "avx2") return detail::int8_dot_loop_avx2(iterations);
#endif
  return detail::int8_dot_loop_scalar(iterations);
}

double measure_peak_int8_ops(int threads, double seconds, std::string* path) {
  const std::string best = runnable_int8_paths().front();
  if (path) *path = best;
  return best_parallel_rate(threads, seconds, [&best](long iterations) { return int8_dot_loop(best, iterations); });
}

MachineLimits measure_machine_limits(int threads, double seconds, bool with_int8) {
  MachineLimits m;
  m.threads = std::max(1, threads);
  m.memory_bandwidth = measure_memory_bandwidth(m.threads, size_t{256} << 20, seconds);
  m.peak_flops = measure_peak_flops(m.threads, seconds, &m.flops_path);
  if (with_int8) m.peak_int8_ops = measure_peak_int8_ops(m.threads, seconds, &m.int8_path);
  return m;
}

}  // namespace omnibus::bench
