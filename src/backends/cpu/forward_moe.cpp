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
  matmul(kernels_, model_->weights().layers[layer].router, xn_.data(), n, router_logits_.data(), &pool_);
  choose_experts(layer, n);
}

void ForwardPass::choose_experts(int layer, int n) {
  const ModelConfig& c = model_->config();
  const int n_expert = c.n_expert, k = c.n_expert_used;
  float* logits = router_logits_.data();
  const LayerWeights& l = model_->weights().layers[layer];
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

// As route_rows and run_experts, each thread computing its share of every
// matrix product (matmul_share: the same values as matmul's) and the
// element-wise work on the columns it computed, so the logits are
// bit-identical to the per-op path's. Barriers: after the router (every
// thread's experts' logits), after the routing (thread 0's), and one an
// expert (its down projection reads every thread's gate rows). Models
// with a shared expert stay on the per-op path (run_decode_step).
void ForwardPass::moe_share(int layer, const float* normed, int n, int t, int count) {
  const ModelConfig& c = model_->config();
  const LayerWeights& l = model_->weights().layers[layer];
  const int64_t d = c.n_embd, ff = c.n_ff_expert;
  Profiler* profiler = t == 0 ? profiler_ : nullptr;
  ThreadScratch& own = thread_scratch_[t];
  {
    ProfileScope scope(profiler, ProfileOp::kMoeRouting);
    const MatmulTarget router{&l.router, router_logits_.data()};
    matmul_share(kernels_, std::span(&router, 1), normed, n, t, count, ShareSplit::kAcrossTargets, &own.matmul);
    pool_.sync(t);
    if (t == 0) choose_experts(layer, n);
    pool_.sync(t);
  }
  // This thread's output columns and gate/up rows (ShareSplit::kEachTarget's split).
  const std::pair<int64_t, int64_t> columns = matmul_share_rows(d, t, count), rows = matmul_share_rows(ff, t, count);
  const int64_t e0 = columns.first, e1 = columns.second, f0 = rows.first, f1 = rows.second;
  for (int i = 0; i < n; ++i) std::fill(proj_.data() + i * d + e0, proj_.data() + i * d + e1, 0.0f);
  bool second_gate = false;
  for (int e = 0; e < c.n_expert; ++e) {
    const int64_t begin = expert_begin_[e], m = expert_begin_[e + 1] - begin;
    if (m == 0) continue;  // never read
    // The expert's rows: all of them, in order, as they are; else gathered.
    const float* x = normed;
    if (m != n) {
      for (int64_t s = 0; s < m; ++s)
        std::memcpy(own.expert_rows.data() + s * d, normed + int64_t{slot_row_[begin + s]} * d, sizeof(float) * d);
      x = own.expert_rows.data();
    }
    float* gate = second_gate ? moe_gate_.data() : gate_.data();
    second_gate = !second_gate;
    {
      ProfileScope scope(profiler, ProfileOp::kFfnGateUp);
      const MatmulTarget gate_up[] = {{&l.expert_gate[e], gate}, {&l.expert_up[e], up_.data()}};
      matmul_share(kernels_, gate_up, x, m, t, count, ShareSplit::kEachTarget, &own.matmul);
    }
    {
      ProfileScope scope(profiler, ProfileOp::kFfnActivation);
      for (int64_t s = 0; s < m; ++s) {
        float* g = gate + s * ff + f0;
        float* u = up_.data() + s * ff + f0;
        if (l.expert_gate_bias != nullptr) {
          add_f32(l.expert_gate_bias + e * ff + f0, g, f1 - f0);
          add_f32(l.expert_up_bias + e * ff + f0, u, f1 - f0);
        }
        if (c.spec->ffn_activation == FfnActivation::kSwigluOai)
          swiglu_oai(g, u, f1 - f0);
        else
          swiglu(kernels_, g, u, f1 - f0);
      }
      pool_.sync(t);  // the down projection reads every thread's gate rows
    }
    {
      ProfileScope scope(profiler, ProfileOp::kFfnDown);
      const MatmulTarget down{&l.expert_down[e], moe_y_.data()};
      matmul_share(kernels_, std::span(&down, 1), gate, m, t, count, ShareSplit::kEachTarget, &own.matmul);
    }
    ProfileScope scope(profiler, ProfileOp::kResidual);
    for (int64_t s = 0; s < m; ++s) {
      float* y = moe_y_.data() + s * d + e0;
      if (l.expert_down_bias != nullptr) add_f32(l.expert_down_bias + e * d + e0, y, e1 - e0);
      axpy_f32(kernels_, slot_weight_[begin + s], y, proj_.data() + int64_t{slot_row_[begin + s]} * d + e0, e1 - e0);
    }
  }
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
