// The architectures we run and how each differs from the shared llama-style
// block (shared/STYLE.md: blocks are written once; an architecture states
// only its differences).
#pragma once

#include <string>
#include <string_view>

#include "kernels/rope.h"

namespace omnibus {

// The gate's: SwiGLU, GeGLU, or gpt-oss's clamped SwiGLU (gate clamped to
// at most 7, silu with slope 1.702, times the up value clamped to [-7, 7]
// plus one; its experts only).
enum class FfnActivation { kSilu, kGeluTanh, kSwigluOai };

struct ArchitectureSpec {
  std::string_view name;     // general.architecture
  RopeStyle rope_style;      // which pairs RoPE rotates
  bool qkv_bias;             // attn_q/k/v carry a bias tensor
  FfnActivation ffn_activation = FfnActivation::kSilu;
  bool embedding_scaled = false;  // the token's embedding row times sqrt(n_embd)
  bool qk_norm = false;           // RMSNorm of each q and k head (attn_q_norm, attn_k_norm) before RoPE
  bool post_norms = false;        // RMSNorm of the attention and MLP outputs before each residual add
                                  // (post_attention_norm, post_ffw_norm)
  // Sliding-window attention: layers il with il % period != period - 1 see
  // only the last `<arch>.attention.sliding_window` positions, with RoPE
  // base window_rope_base; 0: every layer sees every position.
  int window_period = 0;
  float window_rope_base = 10000.0f;
  // Mixture of experts in place of the MLP: a router (ffn_gate_inp) picks
  // <arch>.expert_used_count of <arch>.expert_count experts per token by
  // softmax, each a SwiGLU MLP (ffn_{gate,up,down}_exps);
  // docs/design/mixture-of-experts.md.
  bool moe = false;
  // ffn_up holds the gate's rows, then the up projection's (2 x n_ff rows):
  // phi3's fused tensor, bound as two views.
  bool fused_gate_up = false;
  bool moe_normalize_weights = false;  // the chosen experts' weights divided by their sum
  // Beside the routed experts, a shared one every token goes through
  // (ffn_{gate,up,down}_shexp), scaled by sigmoid(ffn_gate_inp_shexp . x).
  bool moe_shared_expert = false;
  // gpt-oss: biases on the attention output (attn_output.bias), the router
  // (ffn_gate_inp.bias) and each expert's gate, up and down
  // (ffn_{gate,up,down}_exps.bias, one row per expert).
  bool attn_output_bias = false;
  bool moe_biases = false;
  // Attention sinks (attn_sinks.weight, one logit per head; AttentionShape::sinks).
  bool attn_sinks = false;
  // The MLP's input norm's tensor: ffn_norm, or gpt-oss's post_attention_norm.
  std::string_view ffn_norm_tensor = "ffn_norm";
  // Window layers turn with the full layers' RoPE, scaling included
  // (gpt-oss), instead of their own unscaled one at window_rope_base.
  bool window_rope_as_full = false;
};

// nullptr when the architecture is not supported.
const ArchitectureSpec* find_architecture(std::string_view name);
// "llama, qwen2, qwen3, qwen3moe, qwen2moe, phi3, gemma3"
std::string supported_architectures();

}  // namespace omnibus
