#include "tiny_model.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>

#include "backends/cpu/weight_repack.h"
#include "gguf/gguf_writer.h"
#include "kernels/weight_interleave.h"
#include "model/architecture.h"
#include "tensor/quant.h"

namespace omnibus::testing {
namespace {

double f16_round(double x) { return f16_to_f32(f32_to_f16(static_cast<float>(x))); }

class TinyWriter {
 public:
  TinyWriter(const TinyModelSpec& s) : s_(s), rng_(s.seed) {}

  std::vector<uint8_t> build() {
    const std::string a = s_.architecture;
    w_.set_string("general.architecture", a);
    // Not naming the architecture: llama.cpp treats a model named "phi3" as
    // having Phi-3's special tokens.
    w_.set_string("general.name", "tiny random-weight model");
    w_.set_uint32(a + ".block_count", s_.n_layer);
    w_.set_uint32(a + ".embedding_length", s_.n_embd);
    w_.set_uint32(a + ".feed_forward_length", s_.n_ff);
    w_.set_uint32(a + ".attention.head_count", s_.n_head);
    w_.set_uint32(a + ".attention.head_count_kv", s_.n_head_kv);
    w_.set_uint32(a + ".context_length", s_.context_length);
    w_.set_float32(a + ".attention.layer_norm_rms_epsilon", s_.rms_eps);
    w_.set_float32(a + ".rope.freq_base", s_.rope_base);
    const int hd = s_.head_dim > 0 ? s_.head_dim : s_.n_embd / s_.n_head;
    if (s_.head_dim > 0) {
      w_.set_uint32(a + ".attention.key_length", hd);
      w_.set_uint32(a + ".attention.value_length", hd);
    }
    const int rot = s_.rope_dims > 0 ? s_.rope_dims : hd;
    if (s_.rope_dims > 0) w_.set_uint32(a + ".rope.dimension_count", rot);
    if (s_.llama3_rope_freqs) {
      constexpr double kFactor = 8, kLow = 1, kHigh = 4, kOriginal = 8192;
      std::vector<float> factors(rot / 2);
      for (int i = 0; i < rot / 2; ++i) {
        const double wavelen = 2 * M_PI * std::pow(double(s_.rope_base), 2.0 * i / rot);
        if (wavelen < kOriginal / kHigh) {
          factors[i] = 1.0f;
        } else if (wavelen > kOriginal / kLow) {
          factors[i] = static_cast<float>(kFactor);
        } else {
          const double smooth = (kOriginal / wavelen - kLow) / (kHigh - kLow);
          factors[i] = static_cast<float>(1 / ((1 - smooth) / kFactor + smooth));
        }
      }
      add("rope_freqs.weight", 1, rot / 2, DType::kF32, factors);
    }
    if (s_.yarn_factor > 0) {
      w_.set_string(a + ".rope.scaling.type", "yarn");
      w_.set_float32(a + ".rope.scaling.factor", s_.yarn_factor);
      w_.set_uint32(a + ".rope.scaling.original_context_length", s_.context_length / 4);
      if (s_.yarn_beta_fast != 0) w_.set_float32(a + ".rope.scaling.yarn_beta_fast", s_.yarn_beta_fast);
      if (s_.yarn_beta_slow != 0) w_.set_float32(a + ".rope.scaling.yarn_beta_slow", s_.yarn_beta_slow);
    }
    if (s_.longrope) {
      // Short factors near 1, long ones larger (as Phi-3.5's), the attention
      // factor as sqrt(1 + ln(32) / ln(original context)).
      w_.set_float32(a + ".rope.scaling.attn_factor", 1.19f);
      w_.set_uint32(a + ".rope.scaling.original_context_length", s_.context_length / 4);
      std::uniform_real_distribution<float> short_dist(1.0f, 1.2f), long_dist(1.0f, 20.0f);
      std::vector<float> short_factors(rot / 2), long_factors(rot / 2);
      for (auto& f : short_factors) f = short_dist(rng_);
      for (auto& f : long_factors) f = long_dist(rng_);
      add("rope_factors_short.weight", 1, rot / 2, DType::kF32, short_factors);
      add("rope_factors_long.weight", 1, rot / 2, DType::kF32, long_factors);
    }
    // An architecture we do not run (to test the load error) is written
    // with the plain block's tensors.
    static const ArchitectureSpec kPlain{.name = "", .rope_style = RopeStyle::kNormal, .qkv_bias = false};
    const ArchitectureSpec* arch = find_architecture(a);
    if (arch == nullptr) arch = &kPlain;
    if (arch->window_period > 0 && s_.sliding_window > 0)
      w_.set_uint32(a + ".attention.sliding_window", s_.sliding_window);
    if (s_.with_tokenizer) write_tokenizer();
    const int ff_expert = s_.n_ff_expert > 0 ? s_.n_ff_expert : s_.n_ff;
    const int ff_shared = s_.n_ff_shared_expert > 0 ? s_.n_ff_shared_expert : s_.n_ff;
    if (arch->moe) {
      w_.set_uint32(a + ".expert_count", s_.n_expert);
      w_.set_uint32(a + ".expert_used_count", s_.n_expert_used);
      w_.set_uint32(a + ".expert_feed_forward_length", ff_expert);
      if (arch->moe_shared_expert) w_.set_uint32(a + ".expert_shared_feed_forward_length", ff_shared);
    }
    tensor("token_embd.weight", s_.vocab, s_.n_embd, s_.embedding_type, s_.embedding_scale);
    norm("output_norm.weight", s_.n_embd);
    if (!s_.extra_tensor.empty()) norm(s_.extra_tensor, s_.n_embd);
    if (!s_.tied_output) tensor("output.weight", s_.vocab, s_.n_embd, s_.matrix_type, 0.3f);
    for (int i = 0; i < s_.n_layer; ++i) {
      const std::string p = "blk." + std::to_string(i) + ".";
      const float scale = 1.0f / std::sqrt(static_cast<float>(s_.n_embd));
      norm(p + "attn_norm.weight", s_.n_embd);
      if (s_.fused_qkv) {
        // q's rows, then k's, then v's, in one tensor (phi3).
        std::uniform_real_distribution<float> qk(-scale * 2, scale * 2), vd(-scale, scale);
        std::vector<float> values;
        for (int64_t r = 0; r < int64_t{s_.n_head + 2 * s_.n_head_kv} * hd; ++r)
          for (int col = 0; col < s_.n_embd; ++col)
            values.push_back(r < int64_t{s_.n_head + s_.n_head_kv} * hd ? qk(rng_) : vd(rng_));
        add(p + "attn_qkv.weight", int64_t{s_.n_head + 2 * s_.n_head_kv} * hd, s_.n_embd, s_.matrix_type, values);
      } else {
        tensor(p + "attn_q.weight", s_.n_head * hd, s_.n_embd, s_.matrix_type, scale * 2);
        tensor(p + "attn_k.weight", s_.n_head_kv * hd, s_.n_embd, s_.matrix_type, scale * 2);
        tensor(p + "attn_v.weight", s_.n_head_kv * hd, s_.n_embd, s_.matrix_type, scale);
      }
      tensor(p + "attn_output.weight", s_.n_embd, s_.n_head * hd, s_.matrix_type, scale);
      if (arch->attn_output_bias) tensor(p + "attn_output.bias", 1, s_.n_embd, DType::kF32, 0.2f);
      // Sinks of a few units, as trained ones: each head gives a real share
      // of its weight to the sink, some most of it.
      if (arch->attn_sinks) tensor(p + "attn_sinks.weight", 1, s_.n_head, DType::kF32, 3.0f);
      if (arch->qkv_bias) {
        tensor(p + "attn_q.bias", 1, s_.n_head * hd, DType::kF32, 0.2f);
        tensor(p + "attn_k.bias", 1, s_.n_head_kv * hd, DType::kF32, 0.2f);
        tensor(p + "attn_v.bias", 1, s_.n_head_kv * hd, DType::kF32, 0.2f);
      }
      if (arch->qk_norm) {
        norm(p + "attn_q_norm.weight", hd);
        norm(p + "attn_k_norm.weight", hd);
      }
      if (arch->post_norms) {
        norm(p + "post_attention_norm.weight", s_.n_embd);
        norm(p + "post_ffw_norm.weight", s_.n_embd);
      }
      norm(p + std::string(arch->ffn_norm_tensor) + ".weight", s_.n_embd);
      if (arch->moe) {
        // Router logits of about 2 units: the experts' probabilities differ.
        tensor(p + "ffn_gate_inp.weight", s_.n_expert, s_.n_embd, DType::kF32, 2.0f * std::sqrt(3.0f / s_.n_embd));
        const DType expert_type = s_.expert_type.value_or(s_.matrix_type);
        tensor(p + "ffn_gate_exps.weight", ff_expert, s_.n_embd, expert_type, scale, s_.n_expert);
        tensor(p + "ffn_up_exps.weight", ff_expert, s_.n_embd, expert_type, scale, s_.n_expert);
        tensor(p + "ffn_down_exps.weight", s_.n_embd, ff_expert, expert_type, 1.0f / std::sqrt(float(ff_expert)),
               s_.n_expert);
        if (arch->moe_biases) {
          // One row per expert ([n_expert][width], as llama.cpp reads them).
          tensor(p + "ffn_gate_inp.bias", 1, s_.n_expert, DType::kF32, 0.5f);
          tensor(p + "ffn_gate_exps.bias", s_.n_expert, ff_expert, DType::kF32, 0.3f);
          tensor(p + "ffn_up_exps.bias", s_.n_expert, ff_expert, DType::kF32, 0.3f);
          tensor(p + "ffn_down_exps.bias", s_.n_expert, s_.n_embd, DType::kF32, 0.1f);
        }
        if (arch->moe_shared_expert) {
          tensor(p + "ffn_gate_inp_shexp.weight", 1, s_.n_embd, DType::kF32, 2.0f * std::sqrt(3.0f / s_.n_embd));
          tensor(p + "ffn_gate_shexp.weight", ff_shared, s_.n_embd, s_.matrix_type, scale);
          tensor(p + "ffn_up_shexp.weight", ff_shared, s_.n_embd, s_.matrix_type, scale);
          tensor(p + "ffn_down_shexp.weight", s_.n_embd, ff_shared, s_.matrix_type, 1.0f / std::sqrt(float(ff_shared)));
        }
        continue;
      }
      if (arch->fused_gate_up) {
        tensor(p + "ffn_up.weight", 2 * s_.n_ff, s_.n_embd, s_.matrix_type, scale);  // gate's rows, then up's
      } else {
        tensor(p + "ffn_gate.weight", s_.n_ff, s_.n_embd, s_.matrix_type, scale);
        tensor(p + "ffn_up.weight", s_.n_ff, s_.n_embd, s_.matrix_type, scale);
      }
      tensor(p + "ffn_down.weight", s_.n_embd, s_.n_ff, s_.matrix_type, 1.0f / std::sqrt(float(s_.n_ff)));
    }
    return w_.to_bytes();
  }

 private:
  // GPT-2's byte-level alphabet: printable bytes stand for themselves, the
  // others for code points 256 and up, in byte order.
  static std::string byte_token(int byte) {
    static const std::vector<int> code_points = [] {
      std::vector<int> cp(256, -1);
      int next = 256;
      for (int b = 0; b < 256; ++b) {
        const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
        cp[b] = printable ? b : next++;
      }
      return cp;
    }();
    const int c = code_points[byte];
    std::string utf8;
    if (c < 0x80) {
      utf8 += static_cast<char>(c);
    } else {  // all below 0x800
      utf8 += static_cast<char>(0xC0 | (c >> 6));
      utf8 += static_cast<char>(0x80 | (c & 0x3F));
    }
    return utf8;
  }

  void write_tokenizer() {
    if (s_.vocab < 259) throw std::runtime_error("a tiny model with a tokenizer needs vocab >= 259");
    std::vector<std::string> tokens;
    std::vector<int32_t> types;
    for (int b = 0; b < 256; ++b) tokens.push_back(byte_token(b)), types.push_back(1);
    for (const char* special : {"<|endoftext|>", "<|im_start|>", "<|im_end|>"})
      tokens.push_back(special), types.push_back(3);
    while (static_cast<int>(tokens.size()) < s_.vocab)
      tokens.push_back("<|filler_" + std::to_string(tokens.size()) + "|>"), types.push_back(5);
    w_.set_string("tokenizer.ggml.model", "gpt2");
    w_.set_string("tokenizer.ggml.pre", "qwen2");
    w_.set_string_array("tokenizer.ggml.tokens", tokens);
    w_.set_int32_array("tokenizer.ggml.token_type", types);
    // llama.cpp wants merges; one whose result is not a token is never applied.
    w_.set_string_array("tokenizer.ggml.merges", {byte_token('a') + " " + byte_token('b')});
    w_.set_uint32("tokenizer.ggml.bos_token_id", 256);
    w_.set_uint32("tokenizer.ggml.eos_token_id", 256);
    w_.set_bool("tokenizer.ggml.add_bos_token", false);
  }

  // rows x cols matrix (or a vector when rows == 1; `count` of them, a 3-D
  // tensor, when count > 1) of uniform(-scale, scale).
  void tensor(const std::string& name, int64_t rows, int64_t cols, DType type, float scale, int64_t count = 1) {
    std::uniform_real_distribution<float> dist(-scale, scale);
    std::vector<float> values(rows * cols * count);
    for (auto& v : values) v = dist(rng_);
    add(name, rows, cols, type, values, count);
  }
  void norm(const std::string& name, int64_t n) {
    std::uniform_real_distribution<float> dist(0.7f, 1.3f);
    std::vector<float> values(n);
    for (auto& v : values) v = dist(rng_);
    add(name, 1, n, DType::kF32, values);
  }
  void add(const std::string& name, int64_t rows, int64_t cols, DType type, const std::vector<float>& values,
           int64_t count = 1) {
    if (name == s_.omit_tensor) return;
    auto bytes_per_row = dtype_bytes(type, cols);
    if (!bytes_per_row.is_ok()) throw std::runtime_error(bytes_per_row.status().to_string());
    std::vector<uint8_t> data(*bytes_per_row * rows * count);
    for (int64_t r = 0; r < rows * count; ++r)
      quantize_row_ref(type, values.data() + r * cols, data.data() + r * *bytes_per_row, cols);
    std::vector<int64_t> dims = count > 1   ? std::vector<int64_t>{cols, rows, count}
                                : rows == 1 ? std::vector<int64_t>{cols}
                                            : std::vector<int64_t>{cols, rows};
    Status st = w_.add_tensor(name, dims, type, data);
    if (!st.is_ok()) throw std::runtime_error(st.to_string());
  }

  const TinyModelSpec& s_;
  std::mt19937 rng_;
  GgufWriter w_;
};

std::vector<double> dequantized(const WeightMatrix& w) {
  std::vector<float> row(w.cols);
  std::vector<double> out(w.rows * w.cols);
  std::vector<uint8_t> blocks(w.row_bytes);
  for (int64_t r = 0; r < w.rows; ++r) {
    gather_row_blocks(w, r, blocks.data());  // any layout, as GGUF rows
    dequantize_row_ref(w.dtype, blocks.data(), row.data(), w.cols);
    for (int64_t c = 0; c < w.cols; ++c) out[r * w.cols + c] = row[c];
  }
  return out;
}

// The matmul contract (kernels/matmul.h): quantized weights multiply
// activations rounded to int8 per block (32 elements, or 256 for K-quants)
// with scale max|x| / 127; float weights multiply x as it is.
std::vector<double> activations_as_multiplied(DType type, const std::vector<double>& x) {
  const DTypeInfo* info = dtype_info(type);
  if (info->block_size == 1) return x;
  std::vector<double> out(x.size());
  const size_t block = static_cast<size_t>(info->block_size);
  for (size_t b = 0; b < x.size(); b += block) {
    float amax = 0;
    for (size_t k = b; k < b + block; ++k) amax = std::max(amax, std::fabs(static_cast<float>(x[k])));
    const float scale = amax / 127.0f;
    for (size_t k = b; k < b + block; ++k)
      out[k] = scale > 0 ? std::nearbyint(static_cast<float>(x[k]) * (1.0f / scale)) * double(scale) : 0.0;
  }
  return out;
}

std::vector<double> matvec(const WeightMatrix& w, const std::vector<double>& x_in) {
  const std::vector<double> x = activations_as_multiplied(w.dtype, x_in);
  std::vector<double> m = dequantized(w), y(w.rows, 0.0);
  for (int64_t r = 0; r < w.rows; ++r)
    for (int64_t c = 0; c < w.cols; ++c) y[r] += m[r * w.cols + c] * x[c];
  return y;
}

std::vector<double> rms_normed(const std::vector<double>& x, const float* weight, double eps) {
  double ss = 0;
  for (double v : x) ss += v * v;
  const double scale = 1.0 / std::sqrt(ss / x.size() + eps);
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * scale * weight[i];
  return y;
}

void rotate(std::vector<double>& v, int heads, int hd, int pos, const RopeParams& rope) {
  const int pairs = rope.rot_dims / 2;
  for (int h = 0; h < heads; ++h)
    for (int i = 0; i < pairs; ++i) {
      const bool neox = rope.style == RopeStyle::kNeox;
      const int a = h * hd + (neox ? i : 2 * i), b = h * hd + (neox ? i + pairs : 2 * i + 1);
      double inv_freq = std::pow(double(rope.freq_base), -2.0 * i / rope.rot_dims);
      if (!rope.freq_factors.empty()) inv_freq /= rope.freq_factors[i];
      const double extrapolated = pos * inv_freq, interpolated = extrapolated * double(rope.freq_scale);
      double theta = interpolated;
      if (rope.yarn) {
        // ggml's rope_yarn: pairs below yarn_low keep the plain angle,
        // above yarn_high the interpolated one, a linear ramp between.
        const double span = std::max(0.001, double(rope.yarn_high) - double(rope.yarn_low));
        const double extrapolate = 1.0 - std::clamp((i - double(rope.yarn_low)) / span, 0.0, 1.0);
        theta = interpolated * (1.0 - extrapolate) + extrapolated * extrapolate;
      }
      const double c = std::cos(theta) * rope.attn_factor, s = std::sin(theta) * rope.attn_factor;
      const double x0 = v[a], x1 = v[b];
      v[a] = x0 * c - x1 * s;
      v[b] = x0 * s + x1 * c;
    }
}

// gpt-oss's clamped SwiGLU (llama.cpp's swiglu_oai): the gate clamped
// above at 7, the up value to [-7, 7], gate * sigmoid(1.702 gate) * (up + 1).
double swiglu_oai(double g, double u) {
  g = std::min(g, 7.0);
  u = std::clamp(u, -7.0, 7.0);
  return g / (1.0 + std::exp(-1.702 * g)) * (u + 1.0);
}

// Adds row `row` of a [rows][width] bias (null: none) to v.
void add_bias_row(std::vector<double>& v, const float* bias, int row) {
  if (bias == nullptr) return;
  for (size_t i = 0; i < v.size(); ++i) v[i] += bias[int64_t(row) * int64_t(v.size()) + int64_t(i)];
}

// A mixture-of-experts layer (docs/design/mixture-of-experts.md): softmax
// over the router's logits (plus its bias, gpt-oss), the n_expert_used most
// probable experts (the first of equals), their weights normalised where
// the architecture says, and the weighted sum of their MLPs (SwiGLU, or
// gpt-oss's clamped one with biases on the gate, up and down rows).
std::vector<double> moe_output(const ModelConfig& c, const LayerWeights& lw, const std::vector<double>& xn) {
  std::vector<double> p = matvec(lw.router, xn);
  add_bias_row(p, lw.router_bias, 0);
  const double mx = *std::max_element(p.begin(), p.end());
  double sum = 0;
  for (double& v : p) sum += (v = std::exp(v - mx));
  for (double& v : p) v /= sum;
  std::vector<int> chosen;
  double chosen_sum = 0;
  for (int j = 0; j < c.n_expert_used; ++j) {
    int best = -1;
    for (int e = 0; e < c.n_expert; ++e)
      if (std::find(chosen.begin(), chosen.end(), e) == chosen.end() && (best < 0 || p[e] > p[best])) best = e;
    chosen.push_back(best);
    chosen_sum += p[best];
  }
  std::vector<double> out(c.n_embd, 0.0);
  const bool oai = c.spec->ffn_activation == FfnActivation::kSwigluOai;
  for (int e : chosen) {
    auto g = matvec(lw.expert_gate[e], xn), u = matvec(lw.expert_up[e], xn);
    add_bias_row(g, lw.expert_gate_bias, e);
    add_bias_row(u, lw.expert_up_bias, e);
    for (size_t i = 0; i < g.size(); ++i) g[i] = oai ? swiglu_oai(g[i], u[i]) : g[i] / (1.0 + std::exp(-g[i])) * u[i];
    auto d = matvec(lw.expert_down[e], g);
    add_bias_row(d, lw.expert_down_bias, e);
    const double w = c.spec->moe_normalize_weights ? p[e] / chosen_sum : p[e];
    for (int i = 0; i < c.n_embd; ++i) out[i] += w * d[i];
  }
  if (lw.shared_expert_gate != nullptr) {
    auto g = matvec(lw.shared_gate, xn), u = matvec(lw.shared_up, xn);
    for (size_t i = 0; i < g.size(); ++i) g[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
    const auto d = matvec(lw.shared_down, g);
    double dot = 0;
    for (int i = 0; i < c.n_embd; ++i) dot += lw.shared_expert_gate[i] * xn[i];
    const double gate = 1.0 / (1.0 + std::exp(-dot));
    for (int i = 0; i < c.n_embd; ++i) out[i] += gate * d[i];
  }
  return out;
}

}  // namespace

std::vector<uint8_t> make_tiny_model_bytes(const TinyModelSpec& spec) { return TinyWriter(spec).build(); }

Result<std::shared_ptr<const Model>> try_load_tiny_model(const std::vector<uint8_t>& bytes,
                                                          const ModelLoadOptions& options) {
  auto file = GgufFile::parse(MappedFile::from_memory(bytes));
  if (!file.is_ok()) return file.status();
  return Model::from_gguf(std::move(file).value(), options);
}

std::shared_ptr<const Model> load_tiny_model(const std::vector<uint8_t>& bytes, const KernelTable* layout_for) {
  auto file = GgufFile::parse(MappedFile::from_memory(bytes));
  if (!file.is_ok()) throw std::runtime_error(file.status().to_string());
  std::optional<WeightRepacker> repacker;
  if (layout_for != nullptr) repacker.emplace(*layout_for);
  auto model = Model::from_gguf(std::move(file).value(), {.preparer = repacker ? &*repacker : nullptr});
  if (!model.is_ok()) throw std::runtime_error(model.status().to_string());
  return *model;
}

std::vector<float> reference_logits(const Model& model, const std::vector<int32_t>& tokens) {
  const ModelConfig& c = model.config();
  const ModelWeights& w = model.weights();
  const int hd = c.head_dim, n = static_cast<int>(tokens.size());
  std::vector<std::vector<std::vector<double>>> keys(c.n_layer), values(c.n_layer);
  std::vector<double> embd = dequantized(w.token_embd);
  std::vector<float> logits;
  for (int t = 0; t < n; ++t) {
    std::vector<double> x(embd.begin() + int64_t(tokens[t]) * c.n_embd, embd.begin() + int64_t(tokens[t] + 1) * c.n_embd);
    if (c.spec->embedding_scaled)
      for (double& e : x) e *= std::sqrt(static_cast<float>(c.n_embd));  // the engine's float factor
    for (int l = 0; l < c.n_layer; ++l) {
      const LayerWeights& lw = w.layers[l];
      auto xn = rms_normed(x, lw.attn_norm, c.rms_eps);
      auto q = matvec(lw.wq, xn), k = matvec(lw.wk, xn), v = matvec(lw.wv, xn);
      if (lw.bq) {
        for (int i = 0; i < c.q_dim(); ++i) q[i] += lw.bq[i];
        for (int i = 0; i < c.kv_dim(); ++i) k[i] += lw.bk[i], v[i] += lw.bv[i];
      }
      if (lw.q_norm) {  // per head, before RoPE
        auto norm_heads = [&](std::vector<double>& v, int heads, const float* weight) {
          for (int h = 0; h < heads; ++h) {
            std::vector<double> head(v.begin() + h * hd, v.begin() + (h + 1) * hd);
            head = rms_normed(head, weight, c.rms_eps);
            std::copy(head.begin(), head.end(), v.begin() + h * hd);
          }
        };
        norm_heads(q, c.n_head, lw.q_norm);
        norm_heads(k, c.n_head_kv, lw.k_norm);
      }
      // Window layers: their own RoPE base, and only the last
      // sliding_window positions (including this one) are seen.
      const bool window = c.layer_has_window(l);
      const RopeParams& rope = window ? c.window_rope : c.rope;
      const int first = window ? std::max(0, t - c.sliding_window + 1) : 0;
      rotate(q, c.n_head, hd, t, rope);
      rotate(k, c.n_head_kv, hd, t, rope);
      // The engine stores K and V as f16 and rounds Q and the softmax
      // numerators to f16 (as llama.cpp does): so does the reference.
      for (int i = 0; i < c.kv_dim(); ++i) {
        k[i] = f16_round(k[i]);
        v[i] = f16_round(v[i]);
      }
      keys[l].push_back(k);
      values[l].push_back(v);
      std::vector<double> attn(c.q_dim(), 0.0);
      for (int h = 0; h < c.n_head; ++h) {
        const int kvh = h / (c.n_head / c.n_head_kv);
        std::vector<double> s(t + 1 - first);
        double mx = -1e300, sum = 0;
        for (int j = first; j <= t; ++j) {
          double d = 0;
          for (int i = 0; i < hd; ++i) d += f16_round(q[h * hd + i]) * keys[l][j][kvh * hd + i];
          s[j - first] = d / std::sqrt(double(hd));
          mx = std::max(mx, s[j - first]);
        }
        for (auto& e : s) sum += (e = f16_round(std::exp(e - mx)));
        // An attention sink (gpt-oss): one more logit in the softmax's sum,
        // with no value.
        if (lw.attn_sinks != nullptr) sum += std::exp(double(lw.attn_sinks[h]) - mx);
        for (int j = first; j <= t; ++j)
          for (int i = 0; i < hd; ++i) attn[h * hd + i] += s[j - first] / sum * values[l][j][kvh * hd + i];
      }
      auto o = matvec(lw.wo, attn);
      add_bias_row(o, lw.bo, 0);
      if (lw.post_attn_norm) o = rms_normed(o, lw.post_attn_norm, c.rms_eps);
      for (int i = 0; i < c.n_embd; ++i) x[i] += o[i];
      xn = rms_normed(x, lw.ffn_norm, c.rms_eps);
      if (c.is_moe()) {
        const std::vector<double> moe = moe_output(c, lw, xn);
        for (int i = 0; i < c.n_embd; ++i) x[i] += moe[i];
        continue;
      }
      auto g = matvec(lw.w_gate, xn), u = matvec(lw.w_up, xn);
      for (int i = 0; i < c.n_ff; ++i) {
        if (c.spec->ffn_activation == FfnActivation::kGeluTanh) {
          g[i] = 0.5 * g[i] * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (g[i] + 0.044715 * g[i] * g[i] * g[i]))) * u[i];
        } else {
          g[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
        }
      }
      auto d = matvec(lw.w_down, g);
      if (lw.post_ffn_norm) d = rms_normed(d, lw.post_ffn_norm, c.rms_eps);
      for (int i = 0; i < c.n_embd; ++i) x[i] += d[i];
    }
    auto out = matvec(w.output, rms_normed(x, w.output_norm, c.rms_eps));
    for (double v : out) logits.push_back(static_cast<float>(v));
  }
  return logits;
}

}  // namespace omnibus::testing
