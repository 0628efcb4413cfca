// The ceilings of the roofline, measured on this machine with the given
// threads: read bandwidth from memory (what decode is bound by), the peak
// FP32 FMA rate of the SIMD units (prefill of float weights) and the peak
// int8 dot-product rate (prefill of quantized weights: their kernels
// multiply int8 codes by the int8-quantized activations).
// Each probe runs its threads at once and keeps the best of a few passes.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace omnibus::bench {

struct MachineLimits {
  int threads = 1;
  double memory_bandwidth = 0;  // bytes/s, streaming reads of a buffer far larger than the caches
  double peak_flops = 0;        // FP32 FLOP/s (an FMA counts 2)
  std::string flops_path;       // "avx2+fma" or "scalar"
  double peak_int8_ops = 0;     // int8 multiply-adds/s x 2 (measured only when asked for)
  std::string int8_path;        // one of runnable_int8_paths()
  // FLOP per byte at which the bandwidth and the FP32 ceiling meet: float
  // work below it is memory-bound.
  double balance() const { return memory_bandwidth > 0 ? peak_flops / memory_bandwidth : 0; }
  // The same for int8 operations (quantized weights' matmuls).
  double int8_balance() const { return memory_bandwidth > 0 ? peak_int8_ops / memory_bandwidth : 0; }
};

// `seconds` bounds each probe's time roughly (at least a few passes run).
double measure_memory_bandwidth(int threads, size_t buffer_bytes = size_t{256} << 20, double seconds = 0.4);
double measure_peak_flops(int threads, double seconds = 0.3, std::string* path = nullptr);
// The int8 dot-product loops this build has and this CPU runs, fastest
// first: "avx512-vnni" (vpdpbusd on zmm), "avx-vnni" (vpdpbusd on ymm),
// "avx2" (vpmaddubsw into int16 sums, as the kernels without VNNI do),
// always ending with "scalar".
std::vector<std::string> runnable_int8_paths();
// One thread's loop of `path` (one of the above): operations (a multiply-
// add counts 2) done in `iterations` rounds.
double int8_dot_loop(const std::string& path, long iterations);
// The peak of the fastest path; *path names it.
double measure_peak_int8_ops(int threads, double seconds = 0.3, std::string* path = nullptr);
// Bandwidth and the FP32 peak; the int8 peak too when `with_int8` (the
// server's MFU needs only the FP32 one and it costs start-up time).
MachineLimits measure_machine_limits(int threads, double seconds = 0.4, bool with_int8 = false);

namespace detail {
// One thread's FMA loop: returns FLOPs done in `iterations` rounds.
double fma_loop_avx2(long iterations);
double fma_loop_scalar(long iterations);
// The int8 dot-product loops behind int8_dot_loop (call that: these exist
// only in builds that have the file).
double int8_dot_loop_avx512vnni(long iterations);
double int8_dot_loop_avxvnni(long iterations);
double int8_dot_loop_avx2(long iterations);
double int8_dot_loop_scalar(long iterations);
// Sum of `n` floats read as fast as possible (keeps the reads alive).
float read_sum_avx2(const float* data, size_t n);
float read_sum_scalar(const float* data, size_t n);
}  // namespace detail

}  // namespace omnibus::bench
