#include "convert/hf_config.h"

#include <cmath>
#include <limits>
#include <numbers>

namespace omnibus {
namespace {

struct Convertible {
  const char* model_type;
  const char* gguf_arch;
  bool permute_qk;
  bool attention_bias;
  bool moe = false;
  // What the GGUF architecture does with the chosen experts' weights
  // (llama.cpp, and omnibus, normalise qwen3moe's and not qwen2moe's): a
  // config.json that asks otherwise is refused, not converted into a model
  // that routes differently.
  bool normalized_routing = false;
};

constexpr Convertible kConvertible[] = {
    {"llama", "llama", true, false},
    // Mistral: llama in GGUF; its window (7B v0.1) written, where llama.cpp's
    // converter leaves it out and runs every layer over the whole context.
    {"mistral", "llama", true, false},
    {"qwen2", "qwen2", false, true},
    {"qwen3", "qwen3", false, false},
    {"qwen2_moe", "qwen2moe", false, true, true, false},
    {"qwen3_moe", "qwen3moe", false, false, true, true},
    {"phi3", "phi3", false, false},
    // Gemma 3 270M and 1B (text only), and the language model of the
    // multimodal 4B and up (gemma3_text_config; the vision tower left out).
    {"gemma3_text", "gemma3", false, false},
    {"gemma3", "gemma3", false, false},
    // gpt-oss-20b and -120b: biased attention with sinks, window and full
    // layers alternating, experts with biases (stored fused; MXFP4 in the
    // published checkpoints: gpt_oss_experts.h), a softmax over the chosen
    // experts' logits (the normalised weights).
    {"gpt_oss", "gpt-oss", false, true, true, true},
};

constexpr int kMaxDim = 1 << 20;

Result<int> positive_int(const nlohmann::json& config, const char* key, int max = kMaxDim) {
  const auto it = config.find(key);
  if (it == config.end()) return Status::corrupt(std::string("config.json has no ") + key);
  if (!it->is_number_integer() || it->get<int64_t>() < 1 || it->get<int64_t>() > max)
    return Status::corrupt(std::string("config.json's ") + key + " is not an integer in 1.." + std::to_string(max));
  return static_cast<int>(it->get<int64_t>());
}

Result<double> positive_number(const nlohmann::json& obj, const char* key, double fallback) {
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  // Written as float32 keys: past float32's range it would become inf.
  if (!it->is_number() || !(it->get<double>() > 0) || !(it->get<double>() <= std::numeric_limits<float>::max()))
    return Status::corrupt(std::string("config.json's ") + key + " is not a positive number within float32's range");
  return it->get<double>();
}

Result<bool> optional_bool(const nlohmann::json& config, const char* key) {
  const auto it = config.find(key);
  if (it == config.end() || it->is_null()) return false;
  if (!it->is_boolean()) return Status::corrupt(std::string("config.json's ") + key + " is not true or false");
  return it->get<bool>();
}

// phi3's partial rotation, original context (in rope_parameters or beside
// them) and window.
Status parse_phi3(const nlohmann::json& config, HfModelConfig& c) {
  double rotary = 1.0;
  for (const char* where : {"", "rope_parameters"}) {
    const nlohmann::json& obj = *where ? config.value(where, nlohmann::json::object()) : config;
    if (obj.is_object()) {
      OMNIBUS_ASSIGN_OR_RETURN(rotary, positive_number(obj, "partial_rotary_factor", rotary));
    }
  }
  if (rotary > 1.0) return Status::corrupt("config.json's partial_rotary_factor is above 1");
  c.rope_dims = static_cast<int>(rotary * c.n_embd) / c.n_head;
  if (c.rope_dims < 2 || c.rope_dims % 2 != 0) return Status::corrupt("phi3's rotary dimensions must be even");
  c.rope_original_context = c.context_length;
  for (const char* where : {"", "rope_parameters", "rope_scaling"}) {
    const nlohmann::json& obj = *where ? config.value(where, nlohmann::json::object()) : config;
    if (obj.is_object() && obj.contains("original_max_position_embeddings") &&
        !obj["original_max_position_embeddings"].is_null()) {
      OMNIBUS_ASSIGN_OR_RETURN(c.rope_original_context, positive_int(obj, "original_max_position_embeddings", 1 << 24));
    }
  }
  if (config.contains("sliding_window") && !config["sliding_window"].is_null()) {
    OMNIBUS_ASSIGN_OR_RETURN(c.sliding_window, positive_int(config, "sliding_window", 1 << 24));
  }
  return Status::ok();
}

// config.json's layer_types as the period of window layers and one full
// layer that GGUF's window models repeat: the first full layer's number + 1
// (n_layer + 1 where no layer is full); an error where they do not repeat one.
Result<int> window_period_of_layer_types(const nlohmann::json& config, int n_layer) {
  if (!config["layer_types"].is_array()) return Status::corrupt("config.json's layer_types is not a list");
  const auto& types = config["layer_types"];
  if (types.size() != static_cast<size_t>(n_layer))
    return Status::corrupt("config.json's layer_types lists " + std::to_string(types.size()) +
                           " layers, num_hidden_layers " + std::to_string(n_layer));
  int period = 0;
  for (size_t i = 0; i < types.size() && period == 0; ++i)
    if (types[i] == "full_attention") period = static_cast<int>(i) + 1;
  if (period == 0) period = n_layer + 1;  // no full layer within the model
  for (size_t i = 0; i < types.size(); ++i) {
    const bool full = (i + 1) % period == 0;
    if (types[i] != (full ? "full_attention" : "sliding_attention"))
      return Status::unsupported(
          "config.json's layer_types do not repeat one period of window layers and a "
          "full layer (what a GGUF file can say)");
  }
  return period;
}

// gpt-oss's settings: the window (every other layer, from the first), and
// what omnibus and llama.cpp run fixed refused where config.json says
// otherwise: the SwiGLU's clamp (7) and slope (1.702), attention's biases.
Status parse_gpt_oss(const nlohmann::json& config, HfModelConfig& c) {
  OMNIBUS_ASSIGN_OR_RETURN(c.sliding_window, positive_int(config, "sliding_window", 1 << 24));
  if (config.contains("layer_types") && !config["layer_types"].is_null()) {
    OMNIBUS_ASSIGN_OR_RETURN(const int period, window_period_of_layer_types(config, c.n_layer));
    if (period != 2)
      return Status::unsupported(
          "config.json's layer_types do not alternate a window layer and a full one from the first layer "
          "(what gpt-oss files are run with)");
  }
  for (const auto& [key, value] : {std::pair{"swiglu_limit", 7.0}, std::pair{"swiglu_alpha", 1.702}}) {
    const auto it = config.find(key);
    if (it != config.end() && (!it->is_number() || it->get<double>() != value))
      return Status::unsupported(std::string("config.json's ") + key + " is " + it->dump().substr(0, 32) +
                                 "; gpt-oss files are run with " + nlohmann::json(value).dump());
  }
  const auto bias = config.find("attention_bias");
  if (bias != config.end() && *bias == false)
    return Status::unsupported("gpt-oss without attention biases (attention_bias false)");
  return Status::ok();
}

// Gemma 3's settings GGUF keeps (llama.cpp's Gemma3Model) and what a
// gemma3 file cannot carry refused: its window layers' period (one full
// layer in six unless sliding_window_pattern says otherwise), their own RoPE
// base, the attention scale (1/sqrt(head_dim), or for the 62-layer 27B
// 1/sqrt(hidden / heads)), no soft-capping, GELU (tanh).
Status parse_gemma3(const nlohmann::json& config, HfModelConfig& c) {
  OMNIBUS_ASSIGN_OR_RETURN(c.sliding_window, positive_int(config, "sliding_window", 1 << 24));
  int period = 6;
  if (config.contains("sliding_window_pattern") && !config["sliding_window_pattern"].is_null()) {
    OMNIBUS_ASSIGN_OR_RETURN(period, positive_int(config, "sliding_window_pattern", 4096));
  }
  if (config.contains("layer_types") && !config["layer_types"].is_null()) {
    OMNIBUS_ASSIGN_OR_RETURN(period, window_period_of_layer_types(config, c.n_layer));
  }
  c.window_period = period;
  // The window layers' base: rope_local_base_freq (transformers 4), or
  // rope_parameters.sliding_attention (5), where the full layers' go too.
  OMNIBUS_ASSIGN_OR_RETURN(c.window_rope_theta, positive_number(config, "rope_local_base_freq", 10000.0));
  if (const auto it = config.find("rope_parameters"); it != config.end() && it->is_object()) {
    if (const auto s = it->find("sliding_attention"); s != it->end() && s->is_object()) {
      OMNIBUS_ASSIGN_OR_RETURN(c.window_rope_theta, positive_number(*s, "rope_theta", c.window_rope_theta));
      const auto kind = s->find("rope_type");
      if (kind != s->end() && kind->is_string() && *kind != "default")
        return Status::unsupported("RoPE scaling on gemma3's window layers (GGUF scales the full layers only)");
    }
  }
  const double scalar = config.value("query_pre_attn_scalar", double(c.head_dim));
  const double expected = c.n_layer == 62 ? double(c.n_embd / c.n_head) : double(c.head_dim);
  if (scalar != expected) {
    std::string message = "query_pre_attn_scalar is ";
    message += nlohmann::json(scalar).dump();
    message += ", but a gemma3 file is run with 1/sqrt(";
    message += std::to_string(static_cast<int64_t>(expected));
    message += ") here: the head dimension, or hidden/heads in the 62-layer 27B (GGUF has no key for it)";
    return Status::unsupported(message);
  }
  for (const char* cap : {"final_logit_softcapping", "attn_logit_softcapping"})
    if (config.contains(cap) && !config[cap].is_null())
      return Status::unsupported(std::string("config.json's ") + cap + " (gemma3 files have none)");
  for (const char* act : {"hidden_activation", "hidden_act"})
    if (config.contains(act) && config[act].is_string() && config[act] != "gelu_pytorch_tanh")
      return Status::unsupported(std::string("config.json's ") + act + " " +
                                 config[act].get<std::string>().substr(0, 64) +
                                 " (gemma3 files run GELU with the tanh approximation)");
  OMNIBUS_ASSIGN_OR_RETURN(const bool bidirectional, optional_bool(config, "use_bidirectional_attention"));
  if (bidirectional) return Status::unsupported("bidirectional attention (EmbeddingGemma) does not convert");
  return Status::ok();
}

// `merged` with config.json's values over it; a null value keeps the
// default (as transformers reads a null).
void overlay(nlohmann::json& merged, const nlohmann::json& config) {
  for (const auto& [k, v] : config.items())
    if (!v.is_null() || !merged.contains(k)) merged[k] = v;
}

// Gemma3TextConfig's defaults (transformers), which llama.cpp's converter
// sees through AutoConfig where a config.json leaves a key out (Gemma 3's
// multimodal configs leave most of the language model's out).
const nlohmann::json& gemma3_text_defaults() {
  static const nlohmann::json defaults = {{"vocab_size", 262208},
                                          {"hidden_size", 2304},
                                          {"intermediate_size", 9216},
                                          {"num_hidden_layers", 26},
                                          {"num_attention_heads", 8},
                                          {"num_key_value_heads", 4},
                                          {"head_dim", 256},
                                          {"max_position_embeddings", 131072},
                                          {"rms_norm_eps", 1e-6},
                                          {"rope_theta", 1000000.0},
                                          {"rope_local_base_freq", 10000.0},
                                          {"query_pre_attn_scalar", 256},
                                          {"sliding_window", 4096},
                                          {"sliding_window_pattern", 6},
                                          {"tie_word_embeddings", true},
                                          {"hidden_activation", "gelu_pytorch_tanh"}};
  return defaults;
}

// A gemma3_text config with the defaults filled in; for Gemma 3's
// multimodal configuration (4B and up) the language model's settings are
// its text_config, beside the top level's own keys.
Result<nlohmann::json> gemma3_text_config(const nlohmann::json& config) {
  nlohmann::json merged = gemma3_text_defaults();
  const nlohmann::json* text = &config;
  if (config.value("model_type", "") == "gemma3") {
    const auto it = config.find("text_config");
    if (it == config.end() || !it->is_object())
      return Status::corrupt("a gemma3 config.json without text_config (the language model's settings)");
    for (const auto& [k, v] : config.items())
      if (k != "text_config" && k != "vision_config") merged[k] = v;
    text = &*it;
  }
  overlay(merged, *text);
  merged["model_type"] = "gemma3_text";
  return merged;
}

// GptOssConfig's defaults (transformers), which llama.cpp's converter sees
// through AutoConfig where config.json leaves a key out; rope_parameters'
// default applies where config.json has neither it nor rope_scaling.
const nlohmann::json& gpt_oss_defaults() {
  static const nlohmann::json defaults = {{"vocab_size", 201088},
                                          {"hidden_size", 2880},
                                          {"intermediate_size", 2880},
                                          {"num_hidden_layers", 36},
                                          {"num_attention_heads", 64},
                                          {"num_key_value_heads", 8},
                                          {"head_dim", 64},
                                          {"num_local_experts", 128},
                                          {"num_experts_per_tok", 4},
                                          {"max_position_embeddings", 131072},
                                          {"rms_norm_eps", 1e-5},
                                          {"rope_theta", 150000.0},
                                          {"rope_parameters",
                                           {{"rope_type", "yarn"},
                                            {"factor", 32.0},
                                            {"beta_fast", 32.0},
                                            {"beta_slow", 1.0},
                                            {"truncate", false},
                                            {"original_max_position_embeddings", 4096}}},
                                          {"sliding_window", 128},
                                          {"swiglu_limit", 7.0},
                                          {"attention_bias", true},
                                          {"tie_word_embeddings", false}};
  return defaults;
}

Result<nlohmann::json> gpt_oss_config(const nlohmann::json& config) {
  for (const char* key : {"swiglu_limit", "swiglu_alpha"})  // transformers' GptOssExperts needs numbers
    if (config.contains(key) && config[key].is_null())
      return Status::corrupt(std::string("config.json's ") + key + " is null");
  nlohmann::json merged = gpt_oss_defaults();
  const auto scaling = config.find("rope_scaling");
  if (scaling != config.end() && !scaling->is_null()) merged.erase("rope_parameters");  // transformers 4's form
  overlay(merged, config);
  return merged;
}

// The first of `keys` config.json has, as a positive integer.
Result<int> positive_int_of(const nlohmann::json& config, std::initializer_list<const char*> keys) {
  std::string names;
  for (const char* key : keys) {
    if (config.contains(key) && !config[key].is_null()) return positive_int(config, key);
    names += (names.empty() ? "" : " or ") + std::string(key);
  }
  return Status::corrupt("config.json has no " + names);
}

// The experts' shape, and what omnibus's MoE block cannot run refused.
Status parse_experts(const nlohmann::json& config, const Convertible& arch, HfModelConfig& c) {
  OMNIBUS_ASSIGN_OR_RETURN(c.n_expert, positive_int_of(config, {"num_experts", "num_local_experts"}));
  OMNIBUS_ASSIGN_OR_RETURN(c.n_expert_used, positive_int(config, "num_experts_per_tok"));
  if (c.n_expert_used > c.n_expert)
    return Status::corrupt("num_experts_per_tok (" + std::to_string(c.n_expert_used) +
                           ") is larger than the number of experts (" + std::to_string(c.n_expert) + ")");
  if (c.gguf_arch == "gpt-oss") {
    c.n_ff_expert = c.n_ff;  // its experts are its only feed-forward
  } else {
    OMNIBUS_ASSIGN_OR_RETURN(c.n_ff_expert, positive_int(config, "moe_intermediate_size"));
  }
  if (config.contains("shared_expert_intermediate_size") && !config["shared_expert_intermediate_size"].is_null()) {
    OMNIBUS_ASSIGN_OR_RETURN(c.n_ff_shared_expert, positive_int(config, "shared_expert_intermediate_size"));
  }
  const auto dense_layers = config.find("mlp_only_layers");
  const bool every_layer = config.value("decoder_sparse_step", 1) == 1 &&
                           (dense_layers == config.end() || dense_layers->is_null() || dense_layers->empty());
  if (!every_layer)
    return Status::unsupported(
        "config.json has layers without experts (mlp_only_layers, decoder_sparse_step); "
        "omnibus runs models whose every layer has them");
  OMNIBUS_ASSIGN_OR_RETURN(const bool normalized, optional_bool(config, "norm_topk_prob"));
  if (config.contains("norm_topk_prob") && normalized != arch.normalized_routing)
    return Status::unsupported(std::string("config.json's norm_topk_prob is ") + (normalized ? "true" : "false") +
                               ", but " + arch.gguf_arch + " files are run with it " +
                               (arch.normalized_routing ? "true" : "false") + " (by llama.cpp and omnibus)");
  return Status::ok();
}

// llama.cpp's (and Meta's) llama3 scaling: wavelengths shorter than the
// original context / high_freq_factor keep their frequency, those longer
// than original / low_freq_factor are divided by `factor`, and those between
// are blended. The tensor holds the divisors.
std::vector<float> llama3_rope_freqs(const HfModelConfig& c, double low_freq_factor, double high_freq_factor) {
  // In float32, operation by operation, as llama.cpp's converter does it on
  // torch float32 tensors (Python numbers become float32 beside them).
  const double old_context = c.rope_original_context;
  const double low_wavelen = old_context / low_freq_factor, high_wavelen = old_context / high_freq_factor;
  const float factor = static_cast<float>(c.rope_factor);
  std::vector<float> divisors;
  for (int i = 0; i < c.head_dim; i += 2) {
    const float exponent = static_cast<float>(i) / static_cast<float>(c.head_dim);
    const float freq = 1.0f / std::pow(static_cast<float>(c.rope_theta), exponent);
    const float wavelen = static_cast<float>(2 * std::numbers::pi) / freq;
    if (wavelen < static_cast<float>(high_wavelen)) {
      divisors.push_back(1.0f);
    } else if (wavelen > static_cast<float>(low_wavelen)) {
      divisors.push_back(factor);
    } else {
      const float smooth = (static_cast<float>(old_context) / wavelen - static_cast<float>(low_freq_factor)) /
                           static_cast<float>(high_freq_factor - low_freq_factor);
      divisors.push_back(1.0f / ((1.0f - smooth) / factor + smooth));
    }
  }
  return divisors;
}

Result<std::vector<float>> float_list(const nlohmann::json& rope, const char* key, size_t count) {
  const auto it = rope.find(key);
  if (it == rope.end() || !it->is_array() || it->size() != count)
    return Status::corrupt(std::string("longrope's ") + key + " must list " + std::to_string(count) + " numbers");
  std::vector<float> out;
  for (const auto& v : *it) {
    if (!v.is_number()) return Status::corrupt(std::string("longrope's ") + key + " holds a value that is no number");
    out.push_back(v.get<float>());
  }
  return out;
}

// phi3's longrope (llama.cpp's Phi3MiniModel): the long and short factors
// as tensors, and sqrt(1 + ln(scale) / ln(original)) as the attention
// factor where the context is scaled.
Status parse_longrope(const nlohmann::json& rope, HfModelConfig& c) {
  OMNIBUS_ASSIGN_OR_RETURN(c.rope_factors_long, float_list(rope, "long_factor", c.rope_dims / 2));
  OMNIBUS_ASSIGN_OR_RETURN(c.rope_factors_short, float_list(rope, "short_factor", c.rope_dims / 2));
  c.rope_scaling = "longrope";
  const double scale = double(c.context_length) / c.rope_original_context;
  c.rope_attn_factor = scale > 1.0 ? std::sqrt(1 + std::log(scale) / std::log(double(c.rope_original_context))) : 1.0;
  return Status::ok();
}

// rope_scaling (transformers 4) or rope_parameters (transformers 5, which
// also moves rope_theta into it).
Status parse_rope(const nlohmann::json& config, HfModelConfig& c) {
  const nlohmann::json* rope = nullptr;
  for (const char* key : {"rope_parameters", "rope_scaling"}) {
    const auto it = config.find(key);
    if (it != config.end() && it->is_object()) rope = &*it;
  }
  // Gemma 3 under transformers 5: one set per layer kind; the full layers' is the model's.
  const auto per_kind = config.find("rope_parameters");
  if (per_kind != config.end() && per_kind->is_object() && per_kind->contains("full_attention")) {
    const auto scaling = config.find("rope_scaling");
    if (scaling != config.end() && !scaling->is_null())
      return Status::unsupported(
          "config.json has both rope_scaling and per-layer-kind rope_parameters; "
          "which applies is not clear");
    const nlohmann::json& full = (*per_kind)["full_attention"];
    if (!full.is_object() && !full.is_null())
      return Status::corrupt("config.json's rope_parameters.full_attention is not an object");
    rope = full.is_object() ? &full : nullptr;
  }
  OMNIBUS_ASSIGN_OR_RETURN(c.rope_theta, positive_number(config, "rope_theta", 10000.0));
  if (rope == nullptr) return Status::ok();
  OMNIBUS_ASSIGN_OR_RETURN(c.rope_theta, positive_number(*rope, "rope_theta", c.rope_theta));
  std::string type = "default";
  for (const char* key : {"rope_type", "type"}) {
    const auto it = rope->find(key);
    if (it != rope->end() && it->is_string()) type = it->get<std::string>();
  }
  if (type == "default") return Status::ok();
  if ((type == "longrope" || type == "su") && c.gguf_arch == "phi3") return parse_longrope(*rope, c);
  if (type != "linear" && type != "yarn" && type != "llama3")
    return Status::unsupported("RoPE scaling '" + type +
                               "' does not convert (default, linear, yarn and llama3 do; "
                               "longrope in phi3)");
  c.rope_scaling = type;
  // llama.cpp's defaults where a llama3 config leaves them out.
  const bool llama3 = type == "llama3";
  if (!llama3 && (!rope->contains("factor") || (*rope)["factor"].is_null()))
    return Status::corrupt("RoPE scaling '" + type + "' without its factor (transformers refuses it too)");
  OMNIBUS_ASSIGN_OR_RETURN(c.rope_factor, positive_number(*rope, "factor", llama3 ? 8.0 : 1.0));
  c.rope_original_context = llama3 ? 8192 : c.context_length;
  if (rope->contains("original_max_position_embeddings") && !(*rope)["original_max_position_embeddings"].is_null()) {
    OMNIBUS_ASSIGN_OR_RETURN(c.rope_original_context, positive_int(*rope, "original_max_position_embeddings", 1 << 24));
  }
  if (type == "yarn") {
    // Written as llama.cpp writes them; the rest of YaRN's settings omnibus
    // derives as llama.cpp does, and refuses where config.json sets them.
    OMNIBUS_ASSIGN_OR_RETURN(c.yarn_beta_fast, positive_number(*rope, "beta_fast", 0.0));
    OMNIBUS_ASSIGN_OR_RETURN(c.yarn_beta_slow, positive_number(*rope, "beta_slow", 0.0));
    // transformers' truncate (false in gpt-oss's config) is not among them:
    // GGUF has no key for it and both engines floor and ceil the correction
    // range (ggml_rope_yarn_corr_dims), as transformers does with it true.
    for (const char* key : {"attention_factor", "attn_factor", "extrapolation_factor", "mscale", "mscale_all_dim"})
      if (rope->contains(key) && !(*rope)[key].is_null())
        return Status::unsupported(std::string("YaRN's ") + key + " in config.json (omnibus derives it)");
  }
  if (llama3) {
    OMNIBUS_ASSIGN_OR_RETURN(const double low, positive_number(*rope, "low_freq_factor", 1.0));
    OMNIBUS_ASSIGN_OR_RETURN(const double high, positive_number(*rope, "high_freq_factor", 4.0));
    if (!(high > low)) return Status::corrupt("llama3 RoPE scaling needs high_freq_factor > low_freq_factor");
    c.rope_freqs = llama3_rope_freqs(c, low, high);
  }
  return Status::ok();
}

}  // namespace

std::string convertible_model_types() {
  std::string s;
  for (const Convertible& a : kConvertible) s += (s.empty() ? "" : ", ") + std::string(a.model_type);
  return s;
}

namespace {

Result<HfModelConfig> parse_hf_config_unchecked(const nlohmann::json& raw) {
  if (!raw.is_object()) return Status::corrupt("config.json is not a JSON object");
  HfModelConfig c;
  const auto type = raw.find("model_type");
  if (type == raw.end() || !type->is_string()) return Status::corrupt("config.json has no model_type");
  c.model_type = type->get<std::string>();
  const Convertible* arch = nullptr;
  for (const Convertible& a : kConvertible)
    if (c.model_type == a.model_type) arch = &a;
  if (arch == nullptr)
    return Status::unsupported("model_type '" + c.model_type +
                               "' does not convert yet (these do: " + convertible_model_types() + ")");
  c.gguf_arch = arch->gguf_arch;
  c.permute_qk = arch->permute_qk;
  // Gemma 3: transformers' defaults for what config.json leaves out, and
  // the multimodal model's language model from its text_config.
  // gpt-oss: GptOssConfig's defaults likewise.
  nlohmann::json with_defaults;
  if (c.gguf_arch == "gemma3") {
    OMNIBUS_ASSIGN_OR_RETURN(with_defaults, gemma3_text_config(raw));
  } else if (c.gguf_arch == "gpt-oss") {
    OMNIBUS_ASSIGN_OR_RETURN(with_defaults, gpt_oss_config(raw));
  }
  const nlohmann::json& config = with_defaults.is_null() ? raw : with_defaults;
  c.language_model_of_multimodal = c.model_type == "gemma3";
  OMNIBUS_ASSIGN_OR_RETURN(const bool attention_bias, optional_bool(config, "attention_bias"));
  c.attention_bias = arch->attention_bias;
  // Biases where the architecture omnibus runs has none would be written
  // and then refused at load (omnibus's llama and phi3 have no bias terms).
  OMNIBUS_ASSIGN_OR_RETURN(const bool mlp_bias, optional_bool(config, "mlp_bias"));
  if ((attention_bias && !arch->attention_bias) || mlp_bias)
    return Status::unsupported("config.json gives " + c.model_type + " bias terms (attention_bias, mlp_bias), which " +
                               "omnibus's " + arch->gguf_arch + " does not run");
  OMNIBUS_ASSIGN_OR_RETURN(c.n_layer, positive_int(config, "num_hidden_layers", 4096));
  OMNIBUS_ASSIGN_OR_RETURN(c.n_embd, positive_int(config, "hidden_size"));
  OMNIBUS_ASSIGN_OR_RETURN(c.n_ff, positive_int(config, "intermediate_size"));
  OMNIBUS_ASSIGN_OR_RETURN(c.n_head, positive_int(config, "num_attention_heads", 4096));
  c.n_head_kv = c.n_head;
  if (config.contains("num_key_value_heads") && !config["num_key_value_heads"].is_null()) {
    OMNIBUS_ASSIGN_OR_RETURN(c.n_head_kv, positive_int(config, "num_key_value_heads", 4096));
  }
  if (c.n_head % c.n_head_kv != 0)
    return Status::corrupt("num_attention_heads is not a multiple of num_key_value_heads");
  c.head_dim_given = config.contains("head_dim") && !config["head_dim"].is_null();
  if (c.head_dim_given) {
    OMNIBUS_ASSIGN_OR_RETURN(c.head_dim, positive_int(config, "head_dim", 4096));
  } else {
    if (c.n_embd % c.n_head != 0) return Status::corrupt("hidden_size is not a multiple of num_attention_heads");
    c.head_dim = c.n_embd / c.n_head;
  }
  if (c.head_dim % 2 != 0) return Status::corrupt("the head dimension is odd: RoPE turns pairs");
  OMNIBUS_ASSIGN_OR_RETURN(c.vocab_size, positive_int(config, "vocab_size", 1 << 24));
  OMNIBUS_ASSIGN_OR_RETURN(c.context_length, positive_int(config, "max_position_embeddings", 1 << 24));
  OMNIBUS_ASSIGN_OR_RETURN(c.rms_norm_eps, positive_number(config, "rms_norm_eps", 1e-6));
  OMNIBUS_ASSIGN_OR_RETURN(c.tied_embeddings, optional_bool(config, "tie_word_embeddings"));
  if (c.gguf_arch == "phi3") OMNIBUS_RETURN_IF_ERROR(parse_phi3(config, c));
  if (c.model_type == "mistral" && config.contains("sliding_window") && !config["sliding_window"].is_null()) {
    OMNIBUS_ASSIGN_OR_RETURN(c.sliding_window, positive_int(config, "sliding_window", 1 << 24));
  }
  if (c.gguf_arch == "gemma3") OMNIBUS_RETURN_IF_ERROR(parse_gemma3(config, c));
  if (c.gguf_arch == "gpt-oss") OMNIBUS_RETURN_IF_ERROR(parse_gpt_oss(config, c));
  // A quantized checkpoint converts only as published gpt-oss is (MXFP4
  // experts, kept as they are); others would need dequantizing first.
  if (const auto q = config.find("quantization_config"); q != config.end() && !q->is_null()) {
    const std::string method = q->is_object() && q->contains("quant_method") && (*q)["quant_method"].is_string()
                                   ? (*q)["quant_method"].get<std::string>()
                                   : std::string("not named as a string");
    if (method != "mxfp4" || c.gguf_arch != "gpt-oss")
      return Status::unsupported("a quantized checkpoint (quant_method " + method.substr(0, 32) +
                                 "); of those only gpt-oss's MXFP4 converts");
  }
  OMNIBUS_RETURN_IF_ERROR(parse_rope(config, c));
  if (arch->moe) OMNIBUS_RETURN_IF_ERROR(parse_experts(config, *arch, c));
  // The ranges the loader holds a file to (model_config.cpp), so that what
  // converts also loads.
  const auto eps = static_cast<float>(c.rms_norm_eps);
  if (!(eps > 0.0f && eps < 1.0f)) return Status::corrupt("config.json's rms_norm_eps is not in (0, 1) as a float32");
  if (!(c.rope_theta > 1.0) || !(c.window_rope_theta > 1.0))
    return Status::corrupt("config.json's RoPE base (rope_theta, or the window layers') is not above 1");
  return c;
}

}  // namespace

Result<HfModelConfig> parse_hf_config(const nlohmann::json& config) {
  try {
    return parse_hf_config_unchecked(config);
  } catch (const nlohmann::json::exception& e) {
    return Status::corrupt(std::string("config.json has a value of the wrong type: ") + e.what());
  }
}

void add_model_keys(const HfModelConfig& c, GgufWriter& w) {
  const std::string a = c.gguf_arch;
  w.set_string("general.architecture", a);
  w.set_uint32(a + ".block_count", c.n_layer);
  w.set_uint32(a + ".context_length", c.context_length);
  w.set_uint32(a + ".embedding_length", c.n_embd);
  w.set_uint32(a + ".feed_forward_length", c.n_ff);
  w.set_uint32(a + ".attention.head_count", c.n_head);
  w.set_uint32(a + ".attention.head_count_kv", c.n_head_kv);
  w.set_float32(a + ".rope.freq_base", static_cast<float>(c.rope_theta));
  w.set_float32(a + ".attention.layer_norm_rms_epsilon", static_cast<float>(c.rms_norm_eps));
  if (c.head_dim_given || c.gguf_arch == "gemma3") {
    w.set_uint32(a + ".attention.key_length", c.head_dim);
    w.set_uint32(a + ".attention.value_length", c.head_dim);
  }
  if (c.gguf_arch == "llama") {
    w.set_uint32(a + ".vocab_size", c.vocab_size);
    w.set_uint32(a + ".rope.dimension_count", c.head_dim);
  }
  if (c.gguf_arch == "phi3") {  // the keys llama.cpp's Phi3MiniModel writes
    w.set_uint32(a + ".rope.scaling.original_context_length", c.rope_original_context);
    w.set_uint32(a + ".rope.dimension_count", c.rope_dims);
    w.set_uint32(a + ".attention.sliding_window", c.sliding_window);
    if (!c.rope_factors_long.empty()) w.set_float32(a + ".rope.scaling.attn_factor", float(c.rope_attn_factor));
  }
  if (c.gguf_arch == "gpt-oss" || (c.gguf_arch == "llama" && c.sliding_window > 0))
    w.set_uint32(a + ".attention.sliding_window", c.sliding_window);
  if (c.gguf_arch == "gemma3") {
    w.set_uint32(a + ".attention.sliding_window", c.sliding_window);
    w.set_float32(a + ".rope.freq_base_swa", float(c.window_rope_theta));
    // llama.cpp takes one full layer in six as given for gemma3 files and
    // writes no period; another is written (omnibus and llama.cpp read it).
    if (c.window_period != 6) w.set_uint32(a + ".attention.sliding_window_pattern", c.window_period);
  }
  if (c.n_expert > 0) {
    w.set_uint32(a + ".expert_count", c.n_expert);
    w.set_uint32(a + ".expert_used_count", c.n_expert_used);
    w.set_uint32(a + ".expert_feed_forward_length", c.n_ff_expert);
    if (c.n_ff_shared_expert > 0) w.set_uint32(a + ".expert_shared_feed_forward_length", c.n_ff_shared_expert);
  }
  if (c.rope_scaling == "linear" || c.rope_scaling == "yarn") {
    w.set_string(a + ".rope.scaling.type", c.rope_scaling);
    w.set_float32(a + ".rope.scaling.factor", static_cast<float>(c.rope_factor));
    if (c.rope_scaling == "yarn") w.set_uint32(a + ".rope.scaling.original_context_length", c.rope_original_context);
    if (c.yarn_beta_fast > 0) w.set_float32(a + ".rope.scaling.yarn_beta_fast", float(c.yarn_beta_fast));
    if (c.yarn_beta_slow > 0) w.set_float32(a + ".rope.scaling.yarn_beta_slow", float(c.yarn_beta_slow));
  }
}

}  // namespace omnibus
