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
//   (a mixture of experts in place of 5 and 6: forward_moe.cpp's moe_share,
//   the router's rows, the routing, and each chosen expert as 5 and 6)
//   and last every thread norms the rows that want logits and computes its
//   share of the vocabulary.
//
// Both schedules iterate the same stages (model/block_spec.h) and call the
// same stage functions (block_stages.cpp) on their slices: every value is
// computed by the same kernels on the same inputs as on the per-op path
// (forward.cpp, run_block), so the logits are bit-identical (forward_test's batch
// invariance tests compare decode steps with whole-prompt runs at 2, 3 and
// 4 threads; OMNIBUS_DECODE_PER_OP=1 selects the per-op path for A/B runs).
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "backends/cpu/forward.h"
#include "backends/cpu/forward_internal.h"
#include "kernels/attention.h"
#include "kernels/ops.h"

namespace omnibus {

struct ForwardPass::DecodeStep {
  std::span<const BatchRow> rows;
  PagedKvStore& kv;
  float* logits;
  const std::vector<BlockSpec>& blocks;  // for this cache (blocks_for)
};

bool decode_as_one_job_by_default() {
  // OMNIBUS_DECODE_PER_OP=1 keeps decode on the per-op path (for A/B runs).
  static const bool enabled = [] {
    const char* v = std::getenv("OMNIBUS_DECODE_PER_OP");
    return v == nullptr || std::strcmp(v, "1") != 0;
  }();
  return enabled;
}

bool ForwardPass::run_decode_step(std::span<const BatchRow> rows, PagedKvStore& kv, float* logits) {
  const int n = static_cast<int>(rows.size());
  if (n > decode_step_rows_max_ || !decode_as_one_job_) return false;
  // A shared expert (qwen2moe) runs on the per-op path (forward_moe.cpp).
  if (model_->config().spec->moe_shared_expert) return false;
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
  const DecodeStep step{rows, kv, logits, blocks_for(kv)};
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
  const int64_t d = c.n_embd, q_dim = c.q_dim();
  // This thread's heads (step 2, the merge) and output rows.
  const int qh0 = c.n_head * t / count, qh1 = c.n_head * (t + 1) / count;
  const int kh0 = c.n_head_kv * t / count, kh1 = c.n_head_kv * (t + 1) / count;
  // Plain variables, not structured bindings: the lambdas below capture
  // them (Clang before 16 cannot capture a binding).
  const std::pair<int64_t, int64_t> columns = matmul_share_rows(d, t, count), ff = matmul_share_rows(c.n_ff, t, count);
  const int64_t e0 = columns.first, e1 = columns.second, f0 = ff.first, f1 = ff.second;
  const HeadSlice heads{0, n, qh0, qh1, kh0, kh1};

  auto norm_rows_here = [&](const float* weight, const float* from) {
    for (int i = 0; i < n; ++i) rms_norm(kernels_, from + i * d, weight, mine + i * d, d, c.rms_eps);
  };
  auto project_share = [&](const WeightMatrix& w, const float* from, float* to, ShareSplit split) {
    const MatmulTarget target{&w, to};
    matmul_share(kernels_, std::span(&target, 1), from, n, t, count, split, &own.matmul);
  };

  for (int layer = 0; layer < c.n_layer; ++layer) {
    const LayerWeights& l = weights.layers[layer];
    const BlockSpec& spec = step.blocks[layer];
    const float* attn = attn_.data();      // the attention output wo reads
    const float* residual = proj_.data();  // what the residual add reads
    for (const BlockStage stage : spec.stages) {
      // (moe_share times its own parts.)
      ProfileScope scope(stage == BlockStage::kMoe ? nullptr : profiler, profile_op(stage));
      switch (stage) {
        // Every thread norms all rows into its own copy (the same bytes on
        // each) and quantizes them itself inside matmul_share.
        case BlockStage::kAttnNorm: norm_rows_here(l.attn_norm, x_.data()); break;
        case BlockStage::kFfnNorm: norm_rows_here(l.ffn_norm, x_.data()); break;
        case BlockStage::kQkv: {
          const MatmulTarget qkv[] = {{&l.wq, q_.data()}, {&l.wk, k_.data()}, {&l.wv, v_.data()}};
          matmul_share(kernels_, qkv, mine, n, t, count, ShareSplit::kAcrossTargets, &own.matmul);
          pool_.sync(t);  // each thread's heads need every thread's columns
          break;
        }
        case BlockStage::kQkvBias:
        case BlockStage::kQkNorm:
        case BlockStage::kRope:
        case BlockStage::kRotateQkv: head_stage(stage, spec, layer, step.rows, step.kv, heads); break;
        case BlockStage::kKvStore:
          head_stage(stage, spec, layer, step.rows, step.kv, heads);
          pool_.sync(t);  // attention reads every head
          break;
        case BlockStage::kAttention:
          attend_chunk_share(layer, step.rows, step.kv, t, count);
          pool_.sync(t);
          if (chunk_plan(layer).multi_chunk) {
            merge_chunks(layer, step.rows, qh0, qh1);
            pool_.sync(t);
          }
          break;
        case BlockStage::kRotateOutput:
          // Each thread rotates its own copy of the weighted sums back.
          std::memcpy(mine, attn_.data(), static_cast<size_t>(n * q_dim) * sizeof(float));
          rotate_output_back(mine, n);
          attn = mine;
          break;
        case BlockStage::kAttnOutput:
          project_share(l.wo, attn, proj_.data(), ShareSplit::kEachTarget);
          if (l.bo != nullptr)  // this thread's columns, which it projected
            for (int i = 0; i < n; ++i) add_f32(l.bo + e0, proj_.data() + i * d + e0, e1 - e0);
          break;
        case BlockStage::kDown: project_share(l.w_down, gate_.data(), proj_.data(), ShareSplit::kEachTarget); break;
        case BlockStage::kMoe: moe_share(layer, mine, n, t, count); break;
        case BlockStage::kPostAttnNorm:
        case BlockStage::kPostFfnNorm:
          pool_.sync(t);  // the whole proj row
          norm_rows_here(stage == BlockStage::kPostAttnNorm ? l.post_attn_norm : l.post_ffn_norm, proj_.data());
          residual = mine;
          break;
        case BlockStage::kAttnResidual:
        case BlockStage::kFfnResidual:
          // x += proj for this thread's columns [e0, e1), which it projected.
          for (int i = 0; i < n; ++i) add_f32(residual + i * d + e0, x_.data() + i * d + e0, e1 - e0);
          pool_.sync(t);
          residual = proj_.data();
          break;
        case BlockStage::kGateUp: {
          const MatmulTarget gate_up[] = {{&l.w_gate, gate_.data()}, {&l.w_up, up_.data()}};
          matmul_share(kernels_, gate_up, mine, n, t, count, ShareSplit::kEachTarget, &own.matmul);
          break;
        }
        case BlockStage::kActivation:
          // This thread's columns of gate and up, which it computed itself.
          activate(spec, 0, n, f0, f1);
          pool_.sync(t);
          break;
      }
    }
  }
  // The final norm of the rows that want logits, packed, and the vocabulary.
  int out = 0;
  {
    ProfileScope scope(profiler, ProfileOp::kRmsNorm);
    for (int i = 0; i < n; ++i)
      if (step.rows[i].want_logits)
        rms_norm(kernels_, x_.data() + i * d, weights.output_norm, mine + out++ * d, d, c.rms_eps);
  }
  if (out > 0) {
    ProfileScope scope(profiler, ProfileOp::kOutput);
    const MatmulTarget output{&weights.output, step.logits};
    matmul_share(kernels_, std::span(&output, 1), mine, out, t, count, ShareSplit::kAcrossTargets, &own.matmul);
  }
}

}  // namespace omnibus
