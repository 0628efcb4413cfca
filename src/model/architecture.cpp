#include "model/architecture.h"

#include <array>

namespace omnibus {
namespace {

constexpr std::array<ArchitectureSpec, 8> kArchitectures = {{
    // SmolLM2, Llama 2/3.x, TinyLlama, Mistral (no window). The GGUF
    // converter permutes Q/K rows so adjacent-pair RoPE is right.
    {.name = "llama", .rope_style = RopeStyle::kNormal, .qkv_bias = false},
    // Qwen2 and 2.5: biases on q/k/v, NeoX-style RoPE.
    {.name = "qwen2", .rope_style = RopeStyle::kNeox, .qkv_bias = true},
    // Qwen3 (dense, 0.6B-32B): no biases; each q and k head RMS-normed
    // before RoPE, as Gemma 3 but with plain weights and no post-norms.
    {.name = "qwen3", .rope_style = RopeStyle::kNeox, .qkv_bias = false, .qk_norm = true},
    // Qwen3 MoE (30B-A3B, 235B-A22B): Qwen3's attention, experts in place of
    // the MLP, the chosen experts' weights normalised.
    {.name = "qwen3moe",
     .rope_style = RopeStyle::kNeox,
     .qkv_bias = false,
     .qk_norm = true,
     .moe = true,
     .moe_normalize_weights = true},
    // Qwen1.5-MoE and Qwen2-57B-A14B: Qwen2's attention (biases), routed
    // experts with their softmax weights as they are, and a shared expert.
    {.name = "qwen2moe", .rope_style = RopeStyle::kNeox, .qkv_bias = true, .moe = true, .moe_shared_expert = true},
    // Phi-3 and Phi-4-mini: fused q/k/v (attn_qkv) and gate/up (ffn_up)
    // tensors, NeoX RoPE, often partial and with longrope factors
    // (model_config.cpp, model.cpp).
    {.name = "phi3", .rope_style = RopeStyle::kNeox, .qkv_bias = false, .fused_gate_up = true},
    // Gemma 3 (text; ModelConfig::attention_scale has 27B's exception).
    // Its norms' weights in GGUF already carry Gemma's "1 +".
    // docs/plan-gemma3.md.
    {.name = "gemma3",
     .rope_style = RopeStyle::kNeox,
     .qkv_bias = false,
     .ffn_activation = FfnActivation::kGeluTanh,
     .embedding_scaled = true,
     .qk_norm = true,
     .post_norms = true,
     .window_period = 6,
     .window_rope_base = 10000.0f},
    // gpt-oss (20b, 120b): biased q/k/v/o, attention sinks, every other
    // layer a 128-position window with the same (YaRN) RoPE, experts with
    // biases and the clamped SwiGLU, chosen by a softmax over the chosen
    // logits (the same weights as the normalised full softmax).
    {.name = "gpt-oss",
     .rope_style = RopeStyle::kNeox,
     .qkv_bias = true,
     .ffn_activation = FfnActivation::kSwigluOai,
     .window_period = 2,
     .moe = true,
     .moe_normalize_weights = true,
     .attn_output_bias = true,
     .moe_biases = true,
     .attn_sinks = true,
     .ffn_norm_tensor = "post_attention_norm",
     .window_rope_as_full = true},
}};

}  // namespace

const ArchitectureSpec* find_architecture(std::string_view name) {
  for (const auto& a : kArchitectures)
    if (a.name == name) return &a;
  return nullptr;
}

std::string supported_architectures() {
  std::string s;
  for (const auto& a : kArchitectures) {
    if (!s.empty()) s += ", ";
    s += a.name;
  }
  return s;
}

}  // namespace omnibus
