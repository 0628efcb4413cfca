#include "convert/hf_tensor_names.h"

#include <charconv>
#include <span>
#include <utility>

#include "convert/gpt_oss_experts.h"

namespace omnibus {
namespace {

// Within model.layers.N.: the Hugging Face suffix and its GGUF name, by
// what the weight is (".weight"/".bias" follow either).
struct LayerTensor {
  const char* hf;
  const char* gguf;
  bool f32 = false;
};
constexpr LayerTensor kLayerTensors[] = {
    {"input_layernorm", "attn_norm"},
    {"post_attention_layernorm", "ffn_norm"},
    {"self_attn.q_proj", "attn_q"},
    {"self_attn.k_proj", "attn_k"},
    {"self_attn.v_proj", "attn_v"},
    {"self_attn.o_proj", "attn_output"},
    {"self_attn.q_norm", "attn_q_norm"},
    {"self_attn.k_norm", "attn_k_norm"},
    {"mlp.gate_proj", "ffn_gate"},
    {"mlp.up_proj", "ffn_up"},
    {"mlp.down_proj", "ffn_down"},
    {"self_attn.qkv_proj", "attn_qkv"},  // phi3's fused tensors
    {"mlp.gate_up_proj", "ffn_up"},
    {"mlp.gate", "ffn_gate_inp", true},  // the router
    {"mlp.shared_expert.gate_proj", "ffn_gate_shexp"},
    {"mlp.shared_expert.up_proj", "ffn_up_shexp"},
    {"mlp.shared_expert.down_proj", "ffn_down_shexp"},
    {"mlp.shared_expert_gate", "ffn_gate_inp_shexp", true},
};
// Gemma 3's four norms a layer (it normalises after attention and after
// the feed-forward too), before the table above.
constexpr LayerTensor kGemma3LayerNorms[] = {
    {"post_attention_layernorm", "post_attention_norm"},
    {"pre_feedforward_layernorm", "ffn_norm"},
    {"post_feedforward_layernorm", "post_ffw_norm"},
};
// gpt-oss's: its norm after attention is GGUF's post_attention_norm, its
// router mlp.router (with a bias).
constexpr LayerTensor kGptOssLayerTensors[] = {
    {"post_attention_layernorm", "post_attention_norm"},
    {"mlp.router", "ffn_gate_inp", true},
};
// model.layers.N.mlp.experts.E.<hf>.weight: expert E's slice of blk.N.<gguf>.weight.
constexpr std::pair<const char*, const char*> kExpertTensors[] = {
    {"gate_proj", "ffn_gate_exps"},
    {"up_proj", "ffn_up_exps"},
    {"down_proj", "ffn_down_exps"},
};

// A layer or expert number written as Python writes it ("7", not "07" or
// "+7"), so two names cannot alias one slot; -1 when `text` does not start
// with one. `end` is set past its digits.
int canonical_number(std::string_view text, const char** end) {
  if (text.empty() || text[0] < '0' || text[0] > '9') return -1;
  int n = -1;
  const auto [after, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || n < 0 || (after - text.data() > 1 && text[0] == '0')) return -1;
  *end = after;
  return n;
}

// The expert's slice, or nullopt when `rest` (after "model.layers.N.") is not one.
std::optional<GgufTensorName> expert_tensor(std::string_view rest, int layer, const HfModelConfig& c) {
  constexpr std::string_view kExperts = "mlp.experts.";
  if (c.n_expert == 0 || !rest.starts_with(kExperts)) return std::nullopt;
  rest.remove_prefix(kExperts.size());
  const char* after = nullptr;
  const int expert = canonical_number(rest, &after);
  if (expert < 0 || expert >= c.n_expert) return std::nullopt;
  std::string_view matrix(after, rest.data() + rest.size() - after);  // ".gate_proj.weight"
  constexpr std::string_view kWeight = ".weight";
  if (!matrix.starts_with('.') || !matrix.ends_with(kWeight)) return std::nullopt;
  matrix = matrix.substr(1, matrix.size() - 1 - kWeight.size());
  for (const auto& [hf, gguf] : kExpertTensors)
    if (matrix == hf) return GgufTensorName{"blk." + std::to_string(layer) + "." + gguf + ".weight", layer, 0, expert};
  return std::nullopt;
}

std::optional<GgufTensorName> global(const char* name) { return GgufTensorName{name}; }

Result<std::optional<GgufTensorName>> unknown(const std::string& hf_name, const HfModelConfig& c) {
  return Status::unsupported("tensor '" + hf_name + "' has no GGUF name in a " + c.model_type + " model");
}

Result<std::optional<GgufTensorName>> gguf_tensor_name_unshifted(const std::string& hf_name, const HfModelConfig& c) {
  if (hf_name.ends_with(".rotary_emb.inv_freq")) return std::optional<GgufTensorName>();
  if (hf_name == "model.embed_tokens.weight") return global("token_embd.weight");
  if (hf_name == "model.norm.weight") return global("output_norm.weight");
  if (hf_name == "lm_head.weight") return c.tied_embeddings ? std::optional<GgufTensorName>() : global("output.weight");
  constexpr std::string_view kLayers = "model.layers.";
  if (!hf_name.starts_with(kLayers)) return unknown(hf_name, c);
  const char* end = hf_name.data() + hf_name.size();
  const char* after = nullptr;
  const int layer = canonical_number(std::string_view(hf_name).substr(kLayers.size()), &after);
  if (layer >= c.n_layer)
    return Status::corrupt("tensor '" + hf_name + "' is of layer " + std::to_string(layer) + ", but config.json has " +
                           std::to_string(c.n_layer) + " layers (num_hidden_layers)");
  if (layer < 0 || after == end || *after != '.') return unknown(hf_name, c);
  const std::string_view rest(after + 1, end);
  std::span<const LayerTensor> arch_tensors;  // before the common table
  if (c.gguf_arch == "gpt-oss") {
    constexpr std::string_view kExperts = "mlp.experts.";
    if (rest.starts_with(kExperts) && is_gpt_oss_expert_part(rest.substr(kExperts.size()))) {
      GgufTensorName out{"", layer};
      out.expert_part = std::string(rest.substr(kExperts.size()));
      return std::optional<GgufTensorName>(std::move(out));
    }
    if (rest == "self_attn.sinks")
      return std::optional<GgufTensorName>(
          GgufTensorName{"blk." + std::to_string(layer) + ".attn_sinks.weight", layer});
    arch_tensors = kGptOssLayerTensors;
  } else if (auto expert = expert_tensor(rest, layer, c)) {
    return expert;
  }
  if (c.gguf_arch == "gemma3") arch_tensors = kGemma3LayerNorms;
  for (const std::span<const LayerTensor> table : {arch_tensors, std::span<const LayerTensor>(kLayerTensors)})
    for (const auto& [hf, gguf, f32] : table) {
      const std::string_view hf_view(hf);
      if (!rest.starts_with(hf_view)) continue;
      const std::string_view kind = rest.substr(hf_view.size());
      if (kind != ".weight" && kind != ".bias") continue;
      GgufTensorName out{"blk." + std::to_string(layer) + "." + gguf + std::string(kind), layer, 0};
      out.f32 = f32;
      if (c.permute_qk && hf_view == "self_attn.q_proj") out.permute_heads = c.n_head;
      if (c.permute_qk && hf_view == "self_attn.k_proj") out.permute_heads = c.n_head_kv;
      return std::optional<GgufTensorName>(std::move(out));
    }
  return unknown(hf_name, c);
}

}  // namespace

Result<std::optional<GgufTensorName>> gguf_tensor_name(const std::string& hf_name, const HfModelConfig& c) {
  if (c.language_model_of_multimodal) {
    // The vision tower and projector go into a separate file (llama.cpp's
    // mmproj), not this one; the language model's names lose their
    // "language_model." (transformers 4: language_model.model.layers...,
    // 5: model.language_model.layers...), as llama.cpp's converter drops it.
    for (const char* vision :
         {"vision_tower.", "multi_modal_projector.", "model.vision_tower.", "model.multi_modal_projector."})
      if (hf_name.starts_with(vision)) return std::optional<GgufTensorName>();
  }
  std::string text_name = hf_name;
  if (const size_t at = hf_name.find("language_model."); c.language_model_of_multimodal && at != std::string::npos)
    text_name.erase(at, std::string_view("language_model.").size());
  OMNIBUS_ASSIGN_OR_RETURN(std::optional<GgufTensorName> name, gguf_tensor_name_unshifted(text_name, c));
  // Gemma's norms scale by 1 + weight (Gemma3RMSNorm), GGUF's by the weight.
  if (name && c.gguf_arch == "gemma3" && hf_name.ends_with("norm.weight")) name->shift = 1.0f;
  return name;
}

}  // namespace omnibus
