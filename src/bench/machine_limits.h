// The ceilings of the roofline, measured on this machine with the given
// threads: read bandwidth from memory (what decode is bound by), the peak
// FP32 FMA rate of the SIMD units (prefill of float weights) and the peak
// int8 dot-product rate (prefill of quantized weights: their kernels
// multiply int8 codes by the int8-quantized activations).
// Each probe runs its threads at once and keeps the best of a few passes.
#pragma once

#include <cstddef>
#include <string>

namespace omnibus::bench {

struct MachineLimits {
  int threads = 1;
  double memory_bandwidth = 0;  // bytes/s, streaming reads of a buffer far larger than the caches
  double peak_flops = 0;        // FP32 FLOP/s (an FMA counts 2)
  std::string flops_path;       // "avx2+fma" or "scalar"
  double peak_int8_ops = 0;     // int8 multiply-adds/s x 2
  std::string int8_path;        // "avx512-vnni", "avx2" or "scalar"
  // FLOP per byte at which the two ceilings meet: work below it is memory-bound.
  double balance() const { return memory_bandwidth > 0 ? peak_flops / memory_bandwidth : 0; }
};

// `seconds` bounds each probe's time roughly (at least a few passes run).
double measure_memory_bandwidth(int threads, size_t buffer_bytes = size_t{256} << 20, double seconds = 0.4);
double measure_peak_flops(int threads, double seconds = 0.3, std::string* path = nullptr);
double measure_peak_int8_ops(int threads, double seconds = 0.3, std::string* path = nullptr);
MachineLimits measure_machine_limits(int threads, double seconds = 0.4);

namespace detail {
// One thread's FMA loop: returns FLOPs done in `iterations` rounds.
double fma_loop_avx2(long iterations);
double fma_loop_scalar(long iterations);
// One thread's int8 dot-product loop: returns operations (a multiply-add
// counts 2) done in `iterations` rounds.
double int8_dot_loop_avx512vnni(long iterations);
double int8_dot_loop_avx2(long iterations);
double int8_dot_loop_scalar(long iterations);
// Sum of `n` floats read as fast as possible (keeps the reads alive).
float read_sum_avx2(const float* data, size_t n);
float read_sum_scalar(const float* data, size_t n);
}  // namespace detail

}  // namespace omnibus::bench
