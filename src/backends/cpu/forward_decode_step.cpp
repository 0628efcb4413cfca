// A decode step of a few rows as one pool job (docs/plan-decode-scaling.md).
//
// The per-op path runs five pool jobs a layer (q/k/v, attention, attention
// output, gate/up, down) and does the per-row ops between them on thread 0
// while the other threads wait: two RMS norms, RoPE, the KV store, SwiGLU,
// two residual adds, and the int8 quantization of every matrix input. Here
// every thread runs the whole step and the threads meet at barriers
// (ThreadPool::sync) only where one thread needs another's results:
//
//   1. every thread norms the rows and quantizes them itself (the same
//      bytes on each), then computes its share of q/k/v;   barrier
//   2. bias, Q/K norms, RoPE, the q4_0 rotation and the KV store, each
//      thread a range of heads;                            barrier
//   3. attention, the units of attend_chunks;              barrier
//      (rows of several chunks: the merge, by heads;       barrier)
//   4. the attention output's rows and their residual adds
//      (a post-attention norm needs the whole row first:   barrier);
//                                                          barrier
//   5. norm and quantize again, gate/up rows, SwiGLU on those same rows;
//                                                          barrier
//   6. the down projection's rows and their residual adds; barrier
//   and last every thread norms the rows that want logits and computes its
//   share of the vocabulary.
//
// Every value is computed by the same kernels on the same inputs as on the
// per-op path, so the logits are bit-identical (forward_test's batch
// invariance tests compare decode steps with whole-prompt runs at 2, 3 and
// 4 threads; OMNIBUS_DECODE_PER_OP=1 selects the per-op path for A/B runs).
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "backends/cpu/forward.h"
#include "backends/cpu/forward_internal.h"
#include "kernels/attention.h"
#include "kernels/hadamard.h"
#include "kernels/ops.h"
#include "kernels/rope.h"

namespace omnibus {

using forward_internal::gated_activation;
using forward_internal::rotates_kv;

struct ForwardPass::DecodeStep {
  std::span<const BatchRow> rows;
  PagedKvStore& kv;
  float* logits;
  bool rotates;  // a rotated q4_0 cache (kernels/hadamard.h)
};

namespace {

bool decode_step_as_one_job_enabled() {
  // OMNIBUS_DECODE_PER_OP=1 keeps decode on the per-op path (for A/B runs).
  static const bool enabled = [] {
    const char* v = std::getenv("OMNIBUS_DECODE_PER_OP");
    return v == nullptr || std::strcmp(v, "1") != 0;
  }();
  return enabled;
}

}  // namespace

bool ForwardPass::run_decode_step(std::span<const BatchRow> rows, PagedKvStore& kv, float* logits) {
  const int n = static_cast<int>(rows.size());
  if (n > decode_step_rows_max_ || !decode_step_as_one_job_enabled()) return false;
  // Attention must take attend_chunks in every layer: plan each kind of
  // layer (global, window) once.
  const ModelConfig& c = model_->config();
  bool planned[2] = {false, false};
  for (int layer = 0; layer < c.n_layer; ++layer) {
    const int kind = c.layer_has_window(layer) ? 1 : 0;
    if (planned[kind]) continue;
    if (!plan_chunks(layer, rows, kv)) return false;
    planned[kind] = true;
  }
  for (int layer = 0; layer < c.n_layer; ++layer)
    shared_prefix_units_ += static_cast<uint64_t>(chunk_plan(layer).pairs);
  start_rows(rows);
  const DecodeStep step{rows, kv, logits, rotates_kv(kv)};
  // Two captures: no heap allocation per step (tests/decode_alloc_test.cpp).
  pool_.run([this, &step](int t, int count) { decode_step_share(step, t, count); });
  return true;
}

void ForwardPass::decode_step_share(const DecodeStep& step, int t, int count) {
  const ModelConfig& c = model_->config();
  const ModelWeights& weights = model_->weights();
  // Ops are timed on thread 0 only; its waits at the barriers count as
  // thread wait inside the op before the barrier.
  Profiler* profiler = t == 0 ? profiler_ : nullptr;
  ThreadScratch& own = thread_scratch_[t];
  float* mine = own.rows.data();  // this thread's copy of the normed rows
  const int n = static_cast<int>(step.rows.size());
  const int64_t d = c.n_embd, q_dim = c.q_dim(), kv_dim = c.kv_dim(), hd = c.head_dim;
  // This thread's heads (step 2, the merge) and output rows.
  const int qh0 = c.n_head * t / count, qh1 = c.n_head * (t + 1) / count;
  const int kh0 = c.n_head_kv * t / count, kh1 = c.n_head_kv * (t + 1) / count;
  // Plain variables, not structured bindings: the lambdas below capture
  // them (Clang before 16 cannot capture a binding).
  const std::pair<int64_t, int64_t> columns = matmul_share_rows(d, t, count), ff = matmul_share_rows(c.n_ff, t, count);
  const int64_t e0 = columns.first, e1 = columns.second, f0 = ff.first, f1 = ff.second;
  const int half = c.rope.rot_dims / 2 + 1;

  auto norm_rows_here = [&](const float* weight) {
    ProfileScope scope(profiler, ProfileOp::kRmsNorm);
    for (int i = 0; i < n; ++i) rms_norm(x_.data() + i * d, weight, mine + i * d, d, c.rms_eps);
  };
  // x += proj (after a post-norm of the whole proj row, where the model has
  // one) for this thread's columns [e0, e1), which it projected itself.
  auto add_residual_here = [&](const float* post_norm) {
    ProfileScope scope(profiler, ProfileOp::kResidual);
    const float* from = proj_.data();
    if (post_norm != nullptr) {
      pool_.sync(t);  // the whole proj row
      for (int i = 0; i < n; ++i) rms_norm(proj_.data() + i * d, post_norm, mine + i * d, d, c.rms_eps);
      from = mine;
    }
    for (int i = 0; i < n; ++i) add_f32(from + i * d + e0, x_.data() + i * d + e0, e1 - e0);
    pool_.sync(t);
  };

  for (int layer = 0; layer < c.n_layer; ++layer) {
    const LayerWeights& l = weights.layers[layer];
    // 1. q/k/v.
    norm_rows_here(l.attn_norm);
    {
      ProfileScope scope(profiler, ProfileOp::kAttnQkv);
      const MatmulTarget qkv[] = {{&l.wq, q_.data()}, {&l.wk, k_.data()}, {&l.wv, v_.data()}};
      matmul_share(qkv, mine, n, t, count, ShareSplit::kAcrossTargets, &own.matmul);
      pool_.sync(t);
    }
    // 2. Per head: bias, Q/K norms, RoPE, rotation, store.
    if (l.bq != nullptr) {
      ProfileScope scope(profiler, ProfileOp::kBias);
      for (int i = 0; i < n; ++i) {
        add_f32(l.bq + qh0 * hd, q_.data() + i * q_dim + qh0 * hd, (qh1 - qh0) * hd);
        add_f32(l.bk + kh0 * hd, k_.data() + i * kv_dim + kh0 * hd, (kh1 - kh0) * hd);
        add_f32(l.bv + kh0 * hd, v_.data() + i * kv_dim + kh0 * hd, (kh1 - kh0) * hd);
      }
    }
    if (l.q_norm != nullptr) {
      ProfileScope scope(profiler, ProfileOp::kRmsNorm);
      for (int i = 0; i < n; ++i) {
        for (int h = qh0; h < qh1; ++h) {
          float* head = q_.data() + i * q_dim + h * hd;
          rms_norm(head, l.q_norm, head, hd, c.rms_eps);
        }
        for (int h = kh0; h < kh1; ++h) {
          float* head = k_.data() + i * kv_dim + h * hd;
          rms_norm(head, l.k_norm, head, hd, c.rms_eps);
        }
      }
    }
    {
      ProfileScope scope(profiler, ProfileOp::kRope);
      const RopeParams& rope = c.layer_rope(layer);
      const int64_t set = rope_set_offset(c.layer_has_window(layer));
      for (int i = 0; i < n; ++i) {
        const float* cos = rope_cos_.data() + set + i * half;
        const float* sin = rope_sin_.data() + set + i * half;
        apply_rope(rope, cos, sin, q_.data() + i * q_dim + qh0 * hd, qh1 - qh0, c.head_dim);
        apply_rope(rope, cos, sin, k_.data() + i * kv_dim + kh0 * hd, kh1 - kh0, c.head_dim);
      }
      if (step.rotates) {
        // Blocks never cross a head (hadamard.h), so a head range rotates alike.
        const int nk = hadamard_key_block(c.head_dim), nv = hadamard_value_block(c.head_dim);
        for (int i = 0; i < n; ++i) {
          hadamard_blocks(q_.data() + i * q_dim + qh0 * hd, (qh1 - qh0) * hd / nk, nk);
          hadamard_blocks(k_.data() + i * kv_dim + kh0 * hd, (kh1 - kh0) * hd / nk, nk);
          hadamard_blocks(v_.data() + i * kv_dim + kh0 * hd, (kh1 - kh0) * hd / nv, nv);
        }
      }
    }
    {
      ProfileScope scope(profiler, ProfileOp::kKvStore);
      store_kv_rows(layer, step.rows, step.kv, 0, n, kh0, kh1);
      pool_.sync(t);
    }
    // 3. Attention.
    {
      ProfileScope scope(profiler, ProfileOp::kAttention);
      attend_chunk_share(layer, step.rows, step.kv, t, count);
      pool_.sync(t);
      if (chunk_plan(layer).multi_chunk) {
        merge_chunks(layer, step.rows, qh0, qh1);
        pool_.sync(t);
      }
    }
    // 4. Attention output and residual.
    const float* attn = attn_.data();
    if (step.rotates) {
      // The values were stored rotated: each thread rotates its own copy of
      // the weighted sums back.
      ProfileScope scope(profiler, ProfileOp::kAttention);
      std::memcpy(mine, attn_.data(), static_cast<size_t>(n * q_dim) * sizeof(float));
      const int nv = hadamard_value_block(c.head_dim);
      hadamard_blocks(mine, n * q_dim / nv, nv);
      attn = mine;
    }
    {
      ProfileScope scope(profiler, ProfileOp::kAttnOutput);
      const MatmulTarget wo{&l.wo, proj_.data()};
      matmul_share(std::span(&wo, 1), attn, n, t, count, ShareSplit::kEachTarget, &own.matmul);
    }
    add_residual_here(l.post_attn_norm);
    // 5. Gate/up and the activation on this thread's rows of both.
    norm_rows_here(l.ffn_norm);
    {
      ProfileScope scope(profiler, ProfileOp::kFfnGateUp);
      const MatmulTarget gate_up[] = {{&l.w_gate, gate_.data()}, {&l.w_up, up_.data()}};
      matmul_share(gate_up, mine, n, t, count, ShareSplit::kEachTarget, &own.matmul);
    }
    {
      ProfileScope scope(profiler, ProfileOp::kFfnActivation);
      for (int i = 0; i < n; ++i)
        gated_activation(c, gate_.data() + i * c.n_ff + f0, up_.data() + i * c.n_ff + f0, f1 - f0);
      pool_.sync(t);
    }
    // 6. Down and residual.
    {
      ProfileScope scope(profiler, ProfileOp::kFfnDown);
      const MatmulTarget down{&l.w_down, proj_.data()};
      matmul_share(std::span(&down, 1), gate_.data(), n, t, count, ShareSplit::kEachTarget, &own.matmul);
    }
    add_residual_here(l.post_ffn_norm);
  }
  // The final norm of the rows that want logits, packed, and the vocabulary.
  int out = 0;
  {
    ProfileScope scope(profiler, ProfileOp::kRmsNorm);
    for (int i = 0; i < n; ++i)
      if (step.rows[i].want_logits) rms_norm(x_.data() + i * d, weights.output_norm, mine + out++ * d, d, c.rms_eps);
  }
  if (out > 0) {
    ProfileScope scope(profiler, ProfileOp::kOutput);
    const MatmulTarget output{&weights.output, step.logits};
    matmul_share(std::span(&output, 1), mine, out, t, count, ShareSplit::kAcrossTargets, &own.matmul);
  }
}

}  // namespace omnibus
