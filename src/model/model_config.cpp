#include "model/model_config.h"

#include <algorithm>
#include <cmath>

namespace omnibus {
namespace {

// A positive integer hyper-parameter that must fit our int fields.
Result<int> read_positive(const GgufFile& f, const std::string& key, int64_t max_value) {
  OMNIBUS_ASSIGN_OR_RETURN(int64_t v, f.get_int(key));
  if (v <= 0 || v > max_value)
    return Status::corrupt(key + " = " + std::to_string(v) + " is outside [1, " + std::to_string(max_value) + "]");
  return static_cast<int>(v);
}

Result<int> read_optional_positive(const GgufFile& f, const std::string& key, int64_t max_value, int fallback) {
  if (f.find(key) == nullptr) return fallback;
  return read_positive(f, key, max_value);
}

Status read_rope(const GgufFile& f, const std::string& arch, ModelConfig& c) {
  c.rope.style = c.spec->rope_style;
  OMNIBUS_ASSIGN_OR_RETURN(c.rope.rot_dims, read_optional_positive(f, arch + ".rope.dimension_count", c.head_dim, c.head_dim));
  if (c.rope.rot_dims % 2 != 0) return Status::corrupt(arch + ".rope.dimension_count must be even");
  if (f.find(arch + ".rope.freq_base") != nullptr) {
    OMNIBUS_ASSIGN_OR_RETURN(double base, f.get_float(arch + ".rope.freq_base"));
    if (!(base > 1.0) || !std::isfinite(base)) return Status::corrupt(arch + ".rope.freq_base must be > 1");
    c.rope.freq_base = static_cast<float>(base);
  }
  std::string scaling = "none";
  if (f.find(arch + ".rope.scaling.type") != nullptr) {
    OMNIBUS_ASSIGN_OR_RETURN(scaling, f.get_string(arch + ".rope.scaling.type"));
  }
  if (f.find(arch + ".rope.scaling.attn_factor") != nullptr) {
    OMNIBUS_ASSIGN_OR_RETURN(double factor, f.get_float(arch + ".rope.scaling.attn_factor"));
    if (!(factor > 0.0) || !std::isfinite(factor))
      return Status::corrupt(arch + ".rope.scaling.attn_factor must be > 0");
    c.rope.attn_factor = static_cast<float>(factor);
  }
  if (f.find(arch + ".rope.scaling.original_context_length") != nullptr) {
    OMNIBUS_ASSIGN_OR_RETURN(c.rope_original_context,
                             read_positive(f, arch + ".rope.scaling.original_context_length", 1 << 24));
  }
  // Longrope names its scaling in some files; its factors are tensors
  // (rope_factors_short/long, bound with the weights).
  if (scaling == "longrope" || scaling == "su") scaling = "none";
  if (scaling == "linear" || scaling == "yarn") {
    OMNIBUS_ASSIGN_OR_RETURN(double factor, f.get_float(arch + ".rope.scaling.factor"));
    if (!(factor > 0.0) || !std::isfinite(factor)) return Status::corrupt(arch + ".rope.scaling.factor must be > 0");
    c.rope.freq_scale = static_cast<float>(1.0 / factor);
  } else if (scaling != "none") {
    return Status::unsupported("RoPE scaling type '" + scaling +
                               "' (supported: none, linear, yarn, longrope and llama3 rope_freqs)");
  }
  if (scaling == "yarn") {
    // As llama.cpp: the correction range from the original context, and a
    // magnitude of attn_factor x (1 + 0.1 ln factor) for a factor above 1.
    if (f.find(arch + ".rope.scaling.yarn_log_multiplier") != nullptr) {
      OMNIBUS_ASSIGN_OR_RETURN(double log_mul, f.get_float(arch + ".rope.scaling.yarn_log_multiplier"));
      if (log_mul != 0.0) return Status::unsupported("YaRN with a log multiplier (DeepSeek's mscale_all_dim)");
    }
    const double factor = 1.0 / c.rope.freq_scale;
    c.rope.yarn = true;
    double beta[2] = {32.0, 1.0};  // fast, slow: llama.cpp's defaults where the file has none
    const char* beta_keys[2] = {".rope.scaling.yarn_beta_fast", ".rope.scaling.yarn_beta_slow"};
    for (int i = 0; i < 2; ++i) {
      if (f.find(arch + beta_keys[i]) == nullptr) continue;
      OMNIBUS_ASSIGN_OR_RETURN(beta[i], f.get_float(arch + beta_keys[i]));
      if (!(beta[i] > 0.0) || !std::isfinite(beta[i])) return Status::corrupt(arch + beta_keys[i] + " must be > 0");
    }
    set_yarn_correction_range(c.rope, c.rope_original_context > 0 ? c.rope_original_context : c.n_ctx_train, beta[0],
                              beta[1]);
    if (factor > 1.0) c.rope.attn_factor = static_cast<float>(c.rope.attn_factor * (1.0 + 0.1 * std::log(factor)));
  }
  return Status::ok();
}

}  // namespace

Result<ModelConfig> read_model_config(const GgufFile& f) {
  ModelConfig c;
  OMNIBUS_ASSIGN_OR_RETURN(c.architecture, f.get_string("general.architecture"));
  c.spec = find_architecture(c.architecture);
  if (c.spec == nullptr)
    return Status::unsupported("architecture '" + c.architecture + "' is not supported (supported: " +
                               supported_architectures() + ")");
  if (f.find("general.name") != nullptr) {
    auto name = f.get_string("general.name");
    if (name.is_ok()) c.name = *name;
  }
  const std::string& a = c.architecture;
  constexpr int64_t kMaxDim = 1 << 20;
  OMNIBUS_ASSIGN_OR_RETURN(c.n_layer, read_positive(f, a + ".block_count", 4096));
  OMNIBUS_ASSIGN_OR_RETURN(c.n_embd, read_positive(f, a + ".embedding_length", kMaxDim));
  OMNIBUS_ASSIGN_OR_RETURN(c.n_ff, read_positive(f, a + ".feed_forward_length", kMaxDim));
  OMNIBUS_ASSIGN_OR_RETURN(c.n_head, read_positive(f, a + ".attention.head_count", 4096));
  OMNIBUS_ASSIGN_OR_RETURN(c.n_head_kv, read_optional_positive(f, a + ".attention.head_count_kv", 4096, c.n_head));
  OMNIBUS_ASSIGN_OR_RETURN(c.n_ctx_train, read_optional_positive(f, a + ".context_length", 1 << 24, 2048));
  if (c.n_head % c.n_head_kv != 0)
    return Status::corrupt("head_count " + std::to_string(c.n_head) + " is not a multiple of head_count_kv " +
                           std::to_string(c.n_head_kv));
  OMNIBUS_ASSIGN_OR_RETURN(c.head_dim,
                           read_optional_positive(f, a + ".attention.key_length", 4096, c.n_embd / c.n_head));
  if (c.head_dim * c.n_head == 0) return Status::corrupt("head dimension is zero");
  OMNIBUS_ASSIGN_OR_RETURN(double eps, f.get_float(a + ".attention.layer_norm_rms_epsilon"));
  if (!(eps > 0.0 && eps < 1.0)) return Status::corrupt("layer_norm_rms_epsilon must be in (0, 1)");
  c.rms_eps = static_cast<float>(eps);
  OMNIBUS_RETURN_IF_ERROR(read_rope(f, a, c));
  c.attention_scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  // Gemma 3 27B (62 layers) scales by 1/sqrt(n_embd / n_head), its
  // query_pre_attn_scalar, which GGUF does not carry (llama.cpp decides by
  // the layer count too).
  if (c.architecture == "gemma3" && c.n_layer == 62)
    c.attention_scale = 1.0f / std::sqrt(static_cast<float>(c.n_embd / c.n_head));
  if (c.spec->window_period > 0) {
    OMNIBUS_ASSIGN_OR_RETURN(c.sliding_window, read_positive(f, a + ".attention.sliding_window", 1 << 24));
    const std::string pattern_key = a + ".attention.sliding_window_pattern";
    const GgufValue* pattern = f.find(pattern_key);
    if (pattern != nullptr && pattern->type == GgufType::kArray)
      return Status::unsupported(pattern_key + " as a per-layer array (supported: one period)");
    OMNIBUS_ASSIGN_OR_RETURN(c.window_period, read_optional_positive(f, pattern_key, 4096, c.spec->window_period));
    // Window layers rotate with their own base and no scaling (llama.cpp:
    // rope_freq_base_train_swa, default 10,000, rope_freq_scale_train_swa = 1).
    c.window_rope = c.rope;
    // Unless they turn as the full layers do (base, scale and YaRN alike).
    if (!c.spec->window_rope_as_full) {
      c.window_rope.freq_base = c.spec->window_rope_base;
      c.window_rope.freq_scale = 1.0f;
    }
    if (c.rope.yarn && !c.spec->window_rope_as_full) {
      // Unscaled, YaRN's blend is the plain angle and its magnitude 1
      // (llama.cpp's mscale: the attention factor times 1 + 0.1 ln 1).
      c.window_rope.yarn = false;
      c.window_rope.attn_factor = c.rope.attn_factor / (1.0f + 0.1f * std::log(1.0f / c.rope.freq_scale));
    }
    if (f.find(a + ".rope.freq_base_swa") != nullptr) {
      OMNIBUS_ASSIGN_OR_RETURN(double base, f.get_float(a + ".rope.freq_base_swa"));
      if (!(base > 1.0) || !std::isfinite(base)) return Status::corrupt(a + ".rope.freq_base_swa must be > 1");
      c.window_rope.freq_base = static_cast<float>(base);
    }
  }
  // A llama file with a window (Mistral 7B v0.1, converted by omnibus):
  // every layer sees the last sliding_window positions, with the model's
  // RoPE, as transformers runs it. (llama.cpp's converter does not write the
  // key and its llama runs every layer over the whole context: the two
  // agree within the window.)
  if (c.architecture == "llama" && f.find(a + ".attention.sliding_window") != nullptr) {
    OMNIBUS_ASSIGN_OR_RETURN(c.sliding_window, read_positive(f, a + ".attention.sliding_window", 1 << 24));
    c.window_period = c.n_layer + 1;  // no full layer
    c.window_rope = c.rope;
  }
  if (c.spec->moe) {
    OMNIBUS_ASSIGN_OR_RETURN(c.n_expert, read_positive(f, a + ".expert_count", 4096));
    OMNIBUS_ASSIGN_OR_RETURN(c.n_expert_used, read_positive(f, a + ".expert_used_count", c.n_expert));
    // Older files leave it out; llama.cpp then takes n_ff / expert_used_count.
    OMNIBUS_ASSIGN_OR_RETURN(c.n_ff_expert, read_optional_positive(f, a + ".expert_feed_forward_length", kMaxDim,
                                                                   std::max(1, c.n_ff / c.n_expert_used)));
    if (c.spec->moe_shared_expert) {
      OMNIBUS_ASSIGN_OR_RETURN(c.n_ff_shared_expert,
                               read_optional_positive(f, a + ".expert_shared_feed_forward_length", kMaxDim, c.n_ff));
    }
  }
  const GgufTensorInfo* embd = f.find_tensor("token_embd.weight");
  if (embd == nullptr) return Status::not_found("tensor 'token_embd.weight' is missing");
  if (embd->dims.size() != 2 || embd->dims[0] != c.n_embd || embd->dims[1] <= 0 || embd->dims[1] > (1 << 24))
    return Status::corrupt("token_embd.weight must have shape [" + std::to_string(c.n_embd) + ", vocab]");
  c.vocab_size = static_cast<int>(embd->dims[1]);
  return c;
}

}  // namespace omnibus
