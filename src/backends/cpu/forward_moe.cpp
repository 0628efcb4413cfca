// Mixture-of-experts layers on the CPU (docs/design/mixture-of-experts.md):
// route each row to its experts, then run every chosen expert once over all
// the rows that chose it, and add the results into the rows' outputs.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "backends/cpu/forward.h"
#include "kernels/ops.h"

namespace omnibus {

void ForwardPass::route_rows(int layer, int n) {
  ProfileScope scope(profiler_, ProfileOp::kMoeRouting);
  const ModelConfig& c = model_->config();
  const int n_expert = c.n_expert, k = c.n_expert_used;
  float* logits = router_logits_.data();
  const LayerWeights& l = model_->weights().layers[layer];
  matmul(kernels_, l.router, xn_.data(), n, logits, &pool_);
  std::fill(expert_rows_.begin(), expert_rows_.end(), 0);
  for (int i = 0; i < n; ++i) {
    float* p = logits + int64_t{i} * n_expert;
    if (l.router_bias != nullptr) add_f32(l.router_bias, p, n_expert);
    // Softmax (in double, then float, as the probabilities llama.cpp
    // selects and weights by are floats).
    const float mx = *std::max_element(p, p + n_expert);
    double sum = 0;
    for (int e = 0; e < n_expert; ++e) sum += (router_exp_[e] = std::exp(static_cast<double>(p[e]) - mx));
    for (int e = 0; e < n_expert; ++e) p[e] = static_cast<float>(router_exp_[e] / sum);
    // The k largest, each the first of equals (k is small: 8 of 128).
    int32_t* chosen = chosen_expert_.data() + int64_t{i} * k;
    float* weight = chosen_weight_.data() + int64_t{i} * k;
    double chosen_sum = 0;
    for (int j = 0; j < k; ++j) {
      int best = -1;
      for (int e = 0; e < n_expert; ++e) {
        if (std::find(chosen, chosen + j, e) != chosen + j) continue;
        if (best < 0 || p[e] > p[best]) best = e;
      }
      chosen[j] = best;
      weight[j] = p[best];
      chosen_sum += p[best];
      ++expert_rows_[best];
    }
    if (c.spec->moe_normalize_weights) {
      for (int j = 0; j < k; ++j) weight[j] = static_cast<float>(weight[j] / chosen_sum);
    }
  }
  // Each expert's rows, in row order: slots expert_begin_[e] .. expert_begin_[e + 1].
  expert_begin_[0] = 0;
  for (int e = 0; e < n_expert; ++e) {
    expert_begin_[e + 1] = expert_begin_[e] + expert_rows_[e];
    expert_tokens_[e] += static_cast<uint64_t>(expert_rows_[e]);
    expert_runs_ += expert_rows_[e] > 0;
  }
  std::copy(expert_begin_.begin(), expert_begin_.end() - 1, expert_rows_.begin());  // next free slot per expert
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < k; ++j) {
      const int64_t slot = expert_rows_[chosen_expert_[int64_t{i} * k + j]]++;
      slot_row_[slot] = i;
      slot_weight_[slot] = chosen_weight_[int64_t{i} * k + j];
    }
  }
}

void ForwardPass::run_experts(int layer, int n) {
  const ModelConfig& c = model_->config();
  const LayerWeights& l = model_->weights().layers[layer];
  const int64_t d = c.n_embd, ff = c.n_ff_expert;
  std::memset(proj_.data(), 0, sizeof(float) * static_cast<size_t>(n) * d);
  // Experts in ascending order, so each row's output is the sum of its
  // experts' in ascending expert order whatever the batch: bit-identical
  // logits however rows are batched.
  for (int e = 0; e < c.n_expert; ++e) {
    const int64_t begin = expert_begin_[e], m = expert_begin_[e + 1] - begin;
    if (m == 0) continue;  // never read
    for (int64_t s = 0; s < m; ++s)
      std::memcpy(moe_x_.data() + s * d, xn_.data() + int64_t{slot_row_[begin + s]} * d, sizeof(float) * d);
    {
      ProfileScope scope(profiler_, ProfileOp::kFfnGateUp);
      const MatmulTarget gate_up[] = {{&l.expert_gate[e], gate_.data()}, {&l.expert_up[e], up_.data()}};
      matmul_shared_input(kernels_, gate_up, moe_x_.data(), m, &pool_);
    }
    {
      ProfileScope scope(profiler_, ProfileOp::kFfnActivation);
      if (l.expert_gate_bias != nullptr) {
        add_row_bias(l.expert_gate_bias + e * ff, gate_.data(), m, ff);
        add_row_bias(l.expert_up_bias + e * ff, up_.data(), m, ff);
      }
      if (c.spec->ffn_activation == FfnActivation::kSwigluOai)
        swiglu_oai(gate_.data(), up_.data(), m * ff);
      else
        swiglu(kernels_, gate_.data(), up_.data(), m * ff);
    }
    project(ProfileOp::kFfnDown, l.expert_down[e], gate_.data(), static_cast<int>(m), moe_y_.data());
    if (l.expert_down_bias != nullptr) add_row_bias(l.expert_down_bias + e * d, moe_y_.data(), m, d);
    ProfileScope scope(profiler_, ProfileOp::kResidual);
    for (int64_t s = 0; s < m; ++s)
      axpy_f32(kernels_, slot_weight_[begin + s], moe_y_.data() + s * d,
               proj_.data() + int64_t{slot_row_[begin + s]} * d, d);
  }
  if (l.shared_expert_gate != nullptr) run_shared_expert(layer, n);
}

// The shared expert, after the routed ones: every row, scaled by the
// sigmoid of its gate's dot with the row.
void ForwardPass::run_shared_expert(int layer, int n) {
  const ModelConfig& c = model_->config();
  const LayerWeights& l = model_->weights().layers[layer];
  const int64_t d = c.n_embd;
  {
    ProfileScope scope(profiler_, ProfileOp::kFfnGateUp);
    const MatmulTarget gate_up[] = {{&l.shared_gate, gate_.data()}, {&l.shared_up, up_.data()}};
    matmul_shared_input(kernels_, gate_up, xn_.data(), n, &pool_);
  }
  {
    ProfileScope scope(profiler_, ProfileOp::kFfnActivation);
    swiglu(kernels_, gate_.data(), up_.data(), int64_t{n} * c.n_ff_shared_expert);
  }
  project(ProfileOp::kFfnDown, l.shared_down, gate_.data(), n, moe_y_.data());
  ProfileScope scope(profiler_, ProfileOp::kResidual);
  for (int64_t i = 0; i < n; ++i) {
    const float* x = xn_.data() + i * d;
    double dot = 0;
    for (int64_t k = 0; k < d; ++k) dot += double(l.shared_expert_gate[k]) * x[k];
    const float gate = static_cast<float>(1.0 / (1.0 + std::exp(-dot)));
    axpy_f32(kernels_, gate, moe_y_.data() + i * d, proj_.data() + i * d, d);
  }
}

}  // namespace omnibus
