// Helpers the golden tests share: reading float16 logits files and
// comparing rows of logits (KL divergence, argmax, top-2 gap).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tensor/quant.h"

namespace omnibus::testing {

// A file of float16 values (little-endian, as x86 and arm64 store them).
inline std::vector<float> read_f16_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::vector<uint16_t> halves(static_cast<size_t>(in.tellg()) / sizeof(uint16_t));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(halves.data()), static_cast<std::streamsize>(halves.size() * sizeof(uint16_t)));
  std::vector<float> v(halves.size());
  for (size_t i = 0; i < v.size(); ++i) v[i] = f16_to_f32(halves[i]);
  return v;
}

// log-softmax of one row, in double.
inline std::vector<double> log_softmax(const float* row, int n) {
  double mx = row[0];
  for (int i = 1; i < n; ++i) mx = std::max(mx, double(row[i]));
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += std::exp(row[i] - mx);
  const double log_sum = std::log(sum);
  std::vector<double> out(n);
  for (int i = 0; i < n; ++i) out[i] = row[i] - mx - log_sum;
  return out;
}

// KL(p || q) of the softmaxes of two rows of logits.
inline double kl_divergence(const float* p_logits, const float* q_logits, int n) {
  const auto lp = log_softmax(p_logits, n), lq = log_softmax(q_logits, n);
  double kl = 0;
  for (int i = 0; i < n; ++i) kl += std::exp(lp[i]) * (lp[i] - lq[i]);
  return kl;
}

inline int argmax(const float* row, int n) { return static_cast<int>(std::max_element(row, row + n) - row); }

inline double top2_gap(const float* row, int n) {
  float best = -INFINITY, second = -INFINITY;
  for (int i = 0; i < n; ++i) {
    if (row[i] > best)
      second = best, best = row[i];
    else if (row[i] > second)
      second = row[i];
  }
  return double(best) - second;
}

}  // namespace omnibus::testing
