#include "convert/hf_tensor_names.h"

#include <charconv>
#include <utility>

namespace omnibus {
namespace {

// Within model.layers.N.: the Hugging Face suffix and its GGUF name, by
// what the weight is (".weight"/".bias" follow either).
constexpr std::pair<const char*, const char*> kLayerTensors[] = {
    {"input_layernorm", "attn_norm"},    {"post_attention_layernorm", "ffn_norm"},
    {"self_attn.q_proj", "attn_q"},      {"self_attn.k_proj", "attn_k"},
    {"self_attn.v_proj", "attn_v"},      {"self_attn.o_proj", "attn_output"},
    {"self_attn.q_norm", "attn_q_norm"}, {"self_attn.k_norm", "attn_k_norm"},
    {"mlp.gate_proj", "ffn_gate"},       {"mlp.up_proj", "ffn_up"},
    {"mlp.down_proj", "ffn_down"},
};

std::optional<GgufTensorName> global(const char* name) { return GgufTensorName{name}; }

Result<std::optional<GgufTensorName>> unknown(const std::string& hf_name, const HfModelConfig& c) {
  return Status::unsupported("tensor '" + hf_name + "' has no GGUF name in a " + c.model_type + " model");
}

}  // namespace

Result<std::optional<GgufTensorName>> gguf_tensor_name(const std::string& hf_name, const HfModelConfig& c) {
  if (hf_name.ends_with(".rotary_emb.inv_freq")) return std::optional<GgufTensorName>();
  if (hf_name == "model.embed_tokens.weight") return global("token_embd.weight");
  if (hf_name == "model.norm.weight") return global("output_norm.weight");
  if (hf_name == "lm_head.weight") return c.tied_embeddings ? std::optional<GgufTensorName>() : global("output.weight");
  constexpr std::string_view kLayers = "model.layers.";
  if (!hf_name.starts_with(kLayers)) return unknown(hf_name, c);
  const char* digits = hf_name.data() + kLayers.size();
  const char* end = hf_name.data() + hf_name.size();
  int layer = -1;
  const auto [after, ec] = std::from_chars(digits, end, layer);
  if (ec != std::errc() || after == digits || after == end || *after != '.' || layer < 0 || layer >= c.n_layer)
    return unknown(hf_name, c);
  const std::string_view rest(after + 1, end);
  for (const auto& [hf, gguf] : kLayerTensors) {
    const std::string_view hf_view(hf);
    if (!rest.starts_with(hf_view)) continue;
    const std::string_view kind = rest.substr(hf_view.size());
    if (kind != ".weight" && kind != ".bias") continue;
    GgufTensorName out{"blk." + std::to_string(layer) + "." + gguf + std::string(kind), layer, 0};
    if (c.permute_qk && hf_view == "self_attn.q_proj") out.permute_heads = c.n_head;
    if (c.permute_qk && hf_view == "self_attn.k_proj") out.permute_heads = c.n_head_kv;
    return std::optional<GgufTensorName>(std::move(out));
  }
  return unknown(hf_name, c);
}

}  // namespace omnibus
