// A Hugging Face config.json as the GGUF hyperparameter keys of the
// architecture it converts to. Converts: llama (and mistral, which GGUF
// calls llama), qwen2, qwen3, qwen2_moe, qwen3_moe, phi3, gemma3_text,
// gemma3 (its language model) and gpt_oss; anything else is refused by name.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "base/status.h"
#include "gguf/gguf_writer.h"

namespace omnibus {

struct HfModelConfig {
  std::string model_type;  // config.json's
  std::string gguf_arch;   // general.architecture of the converted file
  // llama's Q and K rows go from Hugging Face's rotate-half order to the
  // pairwise order ggml's normal RoPE turns (qwen2/qwen3 are NEOX: kept).
  bool permute_qk = false;
  bool attention_bias = false;  // q/k/v carry biases (qwen2; llama's attention_bias)
  int n_layer = 0, n_embd = 0, n_ff = 0, n_head = 0, n_head_kv = 0, head_dim = 0;
  bool head_dim_given = false;  // config.json names head_dim (it may differ from n_embd / n_head)
  int vocab_size = 0, context_length = 0;
  double rope_theta = 10000.0, rms_norm_eps = 1e-6;
  bool tied_embeddings = false;
  // RoPE scaling: "none", "linear", "yarn", or "llama3" (rope_freqs below).
  std::string rope_scaling = "none";
  double rope_factor = 1.0;
  int rope_original_context = 0;
  // YaRN's correction range, written where config.json gives it (0: not given).
  double yarn_beta_fast = 0, yarn_beta_slow = 0;
  std::vector<float> rope_freqs;  // llama3: head_dim / 2 frequency divisors
  // phi3: RoPE turns the first rope_dims of each head (partial_rotary_factor);
  // longrope's per-pair factors, past and within the original context, and
  // the attention factor that goes with them.
  int rope_dims = 0;
  std::vector<float> rope_factors_long, rope_factors_short;
  double rope_attn_factor = 1.0;
  int sliding_window = 0;
  // gemma3: one full layer every window_period layers (the others see the
  // last sliding_window positions), and the window layers' RoPE base.
  int window_period = 0;
  double window_rope_theta = 10000.0;
  // The language model of a multimodal checkpoint (gemma3): its tensors
  // under "language_model.", the vision tower's left out (GGUF keeps those
  // in a separate projector file).
  bool language_model_of_multimodal = false;
  // Mixture of experts (qwen2moe, qwen3moe, gpt-oss); n_expert is 0 in a dense model.
  int n_expert = 0, n_expert_used = 0, n_ff_expert = 0;
  int n_ff_shared_expert = 0;  // qwen2moe's shared expert; 0 when there is none
};

// "llama, mistral, qwen2, qwen3, qwen2_moe, qwen3_moe, phi3, gemma3_text, gemma3, gpt_oss"
std::string convertible_model_types();

Result<HfModelConfig> parse_hf_config(const nlohmann::json& config);

// general.architecture and the <arch>.* keys.
void add_model_keys(const HfModelConfig& c, GgufWriter& w);

}  // namespace omnibus
