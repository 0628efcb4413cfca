// Hyper-parameters of a model, read from GGUF metadata and checked for
// consistency before any weight is touched.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "gguf/gguf_file.h"
#include "kernels/rope.h"
#include "model/architecture.h"

namespace omnibus {

struct ModelConfig {
  std::string architecture;
  const ArchitectureSpec* spec = nullptr;
  std::string name;          // general.name, for display
  int n_layer = 0;
  int n_embd = 0;
  int n_head = 0;
  int n_head_kv = 0;
  int head_dim = 0;
  int n_ff = 0;
  int vocab_size = 0;        // from the token embedding's shape
  int n_ctx_train = 0;
  float rms_eps = 1e-5f;
  float attention_scale = 0;  // of the q.k scores: 1/sqrt(head_dim), except Gemma 3 27B's
  RopeParams rope;           // freq_factors filled by the weight loader
  // Longrope (phi3 128k files): rope.freq_factors are the short factors; a
  // run whose context (its runner's positions) exceeds rope_long_context
  // turns by rope_long_factors instead, as llama.cpp chooses by its n_ctx.
  // A run that asks for no context gets rope_long_context, the short
  // factors' reach. 0 and empty: no long factors.
  int64_t rope_long_context = 0;
  std::vector<float> rope_long_factors;
  int64_t rope_original_context = 0;  // rope.scaling.original_context_length (0: n_ctx_train)
  // The context a run gets when it asks for none: the training context, or
  // rope_long_context where that is lower.
  int64_t default_context() const {
    return rope_long_context > 0 && rope_long_context < n_ctx_train ? rope_long_context : n_ctx_train;
  }
  // The full layers' RoPE for a run of `context` positions: `rope`, with
  // the long factors past rope_long_context.
  RopeParams rope_for_context(int64_t context) const {
    RopeParams p = rope;
    if (rope_long_context > 0 && context > rope_long_context) p.freq_factors = rope_long_factors;
    return p;
  }
  // Sliding-window attention (ArchitectureSpec::window_period): a window
  // layer's row at position p sees positions p - sliding_window + 1 .. p,
  // rotated with window_rope. 0: no window layers.
  int sliding_window = 0;
  int window_period = 0;  // the spec's, or <arch>.attention.sliding_window_pattern
  RopeParams window_rope;

  bool layer_has_window(int layer) const {
    return sliding_window > 0 && layer % window_period != window_period - 1;
  }
  int window_layer_count() const {
    int count = 0;
    for (int layer = 0; layer < n_layer; ++layer) count += layer_has_window(layer) ? 1 : 0;
    return count;
  }
  // The first position a row at `pos` attends to in `layer`.
  int64_t first_visible(int layer, int64_t pos) const {
    return layer_has_window(layer) && pos >= sliding_window ? pos - sliding_window + 1 : 0;
  }
  const RopeParams& layer_rope(int layer) const { return layer_has_window(layer) ? window_rope : rope; }

  // Mixture of experts (ArchitectureSpec::moe); 0 for a dense model.
  int n_expert = 0;
  int n_expert_used = 0;
  int n_ff_expert = 0;  // each expert's hidden width
  int n_ff_shared_expert = 0;  // the shared expert's (ArchitectureSpec::moe_shared_expert), else 0
  bool is_moe() const { return n_expert > 0; }

  int q_dim() const { return n_head * head_dim; }
  int kv_dim() const { return n_head_kv * head_dim; }
  // Weight parameters (for FLOP estimates): counted from the tensors.
  int64_t parameter_count = 0;
};

// Reads and validates the config; vocab_size comes from token_embd's shape.
Result<ModelConfig> read_model_config(const GgufFile& file);

}  // namespace omnibus
