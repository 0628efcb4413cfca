// One transformer layer as the ordered list of stages it runs: the single
// place where an architecture's differences in a layer (biases, Q/K norms,
// RoPE style and base, sliding windows, the rotated q4_0 cache, post-norms,
// the activation) become steps. Resolved once per layer from the
// ArchitectureSpec, the ModelConfig and the cache; no threads, no ISA.
// Every schedule of a backend iterates it (the CPU backend's per-op and
// one-job decode schedules, src/backends/cpu/), so a new architecture
// changes ArchitectureSpec and, only if it brings a new kind of step, adds
// one stage here and its function in each backend
// (docs/design/backend-seam.md, part C).
#pragma once

#include <cstdint>
#include <vector>

#include "base/profiler.h"
#include "model/architecture.h"
#include "model/model_config.h"

namespace omnibus {

enum class BlockStage : uint8_t {
  kAttnNorm,      // normed rows = RMSNorm(x) with attn_norm
  kQkv,           // q, k, v = normed rows x wq, wk, wv
  kQkvBias,       // q, k, v += bq, bk, bv (ArchitectureSpec::qkv_bias)
  kQkNorm,        // RMSNorm of each q and k head (ArchitectureSpec::qk_norm)
  kRope,          // RoPE of q and k with the layer's parameters
  kRotateQkv,     // Hadamard rotation of q, k and v (a rotated q4_0 cache)
  kKvStore,       // this step's k and v into the cache
  kAttention,     // attn = softmax(q k^T) v over the visible positions
  kRotateOutput,  // the weighted sums rotated back (a rotated q4_0 cache)
  kAttnOutput,    // proj = attn x wo
  kPostAttnNorm,  // proj = RMSNorm(proj) (ArchitectureSpec::post_norms)
  kAttnResidual,  // x += proj
  kFfnNorm,       // normed rows = RMSNorm(x) with ffn_norm
  kGateUp,        // gate, up = normed rows x w_gate, w_up
  kActivation,    // gate = act(gate) * up (ArchitectureSpec::ffn_activation)
  kDown,          // proj = gate x w_down
  kPostFfnNorm,   // proj = RMSNorm(proj) (ArchitectureSpec::post_norms)
  kFfnResidual,   // x += proj
  kMoe,           // proj = the chosen experts' MLPs of the normed rows, weighted (ArchitectureSpec::moe;
                  // in place of kGateUp, kActivation, kDown)
};

// The stages that work on each q/k/v head of each row alone, between kQkv
// and kAttention (bias, Q/K norm, RoPE, rotation, the KV store): a schedule
// may split them by rows or by heads and get the same bits.
bool is_head_stage(BlockStage stage);

// The profile row a stage's time goes to.
ProfileOp profile_op(BlockStage stage);

// "attn_norm", "qkv_bias", ... (tests, docs).
const char* block_stage_name(BlockStage stage);

struct BlockSpec {
  std::vector<BlockStage> stages;  // in order
  const RopeParams* rope;          // the layer's (the window layers' own base where it has one)
  bool window;                     // the layer sees only the last sliding_window positions
  FfnActivation activation;
};

// Layer `layer` of a model with `config`; `rotated_cache`: the KV cache
// stores K and V Hadamard-rotated (the CPU backend's q4_0 cache).
BlockSpec resolve_block(const ModelConfig& config, int layer, bool rotated_cache);

}  // namespace omnibus
