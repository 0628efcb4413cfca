#include "model/model.h"

#include <unordered_set>
#include <vector>

#include "tensor/quant.h"

namespace omnibus {

// Binds GGUF tensors to the weight struct, checking each one's presence,
// shape and dtype, and collecting every missing name into one error.
class WeightBinder {
 public:
  explicit WeightBinder(Model& m) : m_(m), f_(*m.file_) {}

  Status bind() {
    const ModelConfig& c = m_.config_;
    ModelWeights& w = m_.weights_;
    w.token_embd = matrix("token_embd.weight", c.vocab_size, c.n_embd);
    w.output_norm = vector("output_norm.weight", c.n_embd);
    if (f_.find_tensor("output.weight") != nullptr) {
      w.output = matrix("output.weight", c.vocab_size, c.n_embd);
    } else {
      w.output = w.token_embd;
      w.tied_output = true;
    }
    w.layers.resize(c.n_layer);
    for (int i = 0; i < c.n_layer; ++i) bind_layer(i, w.layers[i]);
    if (f_.find_tensor("rope_factors_short.weight") != nullptr) bind_longrope();
    if (f_.find_tensor("rope_freqs.weight") != nullptr) {
      const float* factors = vector("rope_freqs.weight", c.rope.rot_dims / 2);
      if (factors != nullptr) {
        m_.config_.rope.freq_factors.assign(factors, factors + c.rope.rot_dims / 2);
        // llama.cpp applies a model's rope_freqs on every layer, window layers included.
        if (c.sliding_window > 0) m_.config_.window_rope.freq_factors = m_.config_.rope.freq_factors;
      }
    }
    if (!missing_.empty()) {
      std::string list;
      for (size_t i = 0; i < missing_.size() && i < 12; ++i) list += (i ? ", " : "") + missing_[i];
      if (missing_.size() > 12) list += ", ... (" + std::to_string(missing_.size()) + " in all)";
      return Status::not_found("model '" + c.architecture + "' is missing tensors: " + list);
    }
    if (!errors_.empty()) return Status::corrupt(errors_.front());
    // A tensor the file has and the architecture does not bind would be
    // ignored, and the model run without it (a llama file's biases, found
    // by a probe, changed nothing), so it is refused, as llama.cpp refuses
    // a tensor count it does not expect.
    for (const GgufTensorInfo& t : f_.tensors())
      if (!bound_.contains(t.name))
        return Status::unsupported("tensor '" + t.name + "' is in the file, but omnibus's " + c.architecture +
                                   " does not use it; running without it would give wrong answers");
    return Status::ok();
  }

 private:
  void bind_layer(int i, LayerWeights& l) {
    const ModelConfig& c = m_.config_;
    const std::string p = "blk." + std::to_string(i) + ".";
    l.attn_norm = vector(p + "attn_norm.weight", c.n_embd);
    if (f_.find_tensor(p + "attn_qkv.weight") != nullptr && f_.find_tensor(p + "attn_q.weight") == nullptr) {
      // One fused tensor (phi3): q's rows, then k's, then v's.
      auto qkv = split_rows(p + "attn_qkv.weight", {c.q_dim(), c.kv_dim(), c.kv_dim()}, c.n_embd);
      if (qkv.size() == 3) l.wq = qkv[0], l.wk = qkv[1], l.wv = qkv[2];
    } else {
      l.wq = matrix(p + "attn_q.weight", c.q_dim(), c.n_embd);
      l.wk = matrix(p + "attn_k.weight", c.kv_dim(), c.n_embd);
      l.wv = matrix(p + "attn_v.weight", c.kv_dim(), c.n_embd);
    }
    l.wo = matrix(p + "attn_output.weight", c.n_embd, c.q_dim());
    if (c.spec->qkv_bias) {
      l.bq = vector(p + "attn_q.bias", c.q_dim());
      l.bk = vector(p + "attn_k.bias", c.kv_dim());
      l.bv = vector(p + "attn_v.bias", c.kv_dim());
    }
    if (c.spec->attn_output_bias) l.bo = vector(p + "attn_output.bias", c.n_embd);
    if (c.spec->attn_sinks) l.attn_sinks = vector(p + "attn_sinks.weight", c.n_head);
    l.ffn_norm = vector(p + std::string(c.spec->ffn_norm_tensor) + ".weight", c.n_embd);
    if (c.is_moe()) {
      l.router = matrix(p + "ffn_gate_inp.weight", c.n_expert, c.n_embd);
      if (c.spec->moe_biases) {
        l.router_bias = vector(p + "ffn_gate_inp.bias", c.n_expert);
        l.expert_gate_bias = vector(p + "ffn_gate_exps.bias", int64_t{c.n_expert} * c.n_ff_expert);
        l.expert_up_bias = vector(p + "ffn_up_exps.bias", int64_t{c.n_expert} * c.n_ff_expert);
        l.expert_down_bias = vector(p + "ffn_down_exps.bias", int64_t{c.n_expert} * c.n_embd);
      }
      l.expert_gate = experts(p + "ffn_gate_exps.weight", c.n_ff_expert, c.n_embd);
      l.expert_up = experts(p + "ffn_up_exps.weight", c.n_ff_expert, c.n_embd);
      l.expert_down = experts(p + "ffn_down_exps.weight", c.n_embd, c.n_ff_expert);
      if (c.spec->moe_shared_expert) {
        l.shared_gate = matrix(p + "ffn_gate_shexp.weight", c.n_ff_shared_expert, c.n_embd);
        l.shared_up = matrix(p + "ffn_up_shexp.weight", c.n_ff_shared_expert, c.n_embd);
        l.shared_down = matrix(p + "ffn_down_shexp.weight", c.n_embd, c.n_ff_shared_expert);
        l.shared_expert_gate = vector(p + "ffn_gate_inp_shexp.weight", c.n_embd);
      }
    } else if (c.spec->fused_gate_up) {
      auto gate_up = split_rows(p + "ffn_up.weight", {c.n_ff, c.n_ff}, c.n_embd);
      if (gate_up.size() == 2) l.w_gate = gate_up[0], l.w_up = gate_up[1];
      l.w_down = matrix(p + "ffn_down.weight", c.n_embd, c.n_ff);
    } else {
      l.w_gate = matrix(p + "ffn_gate.weight", c.n_ff, c.n_embd);
      l.w_up = matrix(p + "ffn_up.weight", c.n_ff, c.n_embd);
      l.w_down = matrix(p + "ffn_down.weight", c.n_embd, c.n_ff);
    }
    if (c.spec->qk_norm) {
      l.q_norm = vector(p + "attn_q_norm.weight", c.head_dim);
      l.k_norm = vector(p + "attn_k_norm.weight", c.head_dim);
    }
    if (c.spec->post_norms) {
      l.post_attn_norm = vector(p + "post_attention_norm.weight", c.n_embd);
      l.post_ffn_norm = vector(p + "post_ffw_norm.weight", c.n_embd);
    }
  }

  // Longrope (phi3 128k files): the short factors apply up to the original
  // context, the long ones to runs of a longer context
  // (ModelConfig::rope_for_context).
  void bind_longrope() {
    ModelConfig& c = m_.config_;
    const int64_t pairs = c.rope.rot_dims / 2;
    const float* short_factors = vector("rope_factors_short.weight", pairs);
    if (short_factors == nullptr) return;
    c.rope.freq_factors.assign(short_factors, short_factors + pairs);
    if (f_.find_tensor("rope_factors_long.weight") == nullptr) return;
    const float* long_factors = vector("rope_factors_long.weight", pairs);
    if (long_factors == nullptr || std::equal(short_factors, short_factors + pairs, long_factors)) return;
    c.rope_long_factors.assign(long_factors, long_factors + pairs);
    c.rope_long_context = c.rope_original_context > 0 ? c.rope_original_context : c.n_ctx_train;
  }

  const GgufTensorInfo* find(const std::string& name) {
    const GgufTensorInfo* t = f_.find_tensor(name);
    if (t == nullptr) missing_.push_back(name);
    bound_.insert(name);
    return t;
  }

  WeightMatrix matrix(const std::string& name, int64_t rows, int64_t cols) {
    WeightMatrix w;
    const GgufTensorInfo* t = find(name);
    if (t == nullptr) return w;
    if (t->dims.size() != 2 || t->dims[0] != cols || t->dims[1] != rows) {
      errors_.push_back("tensor '" + name + "' has the wrong shape (want [" + std::to_string(cols) + ", " +
                        std::to_string(rows) + "])");
      return w;
    }
    if (!computable(name, *t)) return w;
    w.dtype = t->dtype;
    w.data = t->data.data();
    w.rows = rows;
    w.cols = cols;
    w.row_bytes = t->nbytes / static_cast<uint64_t>(rows);
    m_.config_.parameter_count += rows * cols;
    return w;
  }

  // A matrix's weight type has kernels; otherwise the error says which do.
  bool computable(const std::string& name, const GgufTensorInfo& t) {
    const DTypeInfo* info = dtype_info(t.dtype);
    if (info != nullptr && info->computable) return true;
    errors_.push_back("tensor '" + name + "' has type " + dtype_name(t.dtype) +
                      ", which omnibus cannot compute yet (supported: f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 "
                      "q2_K q3_K q4_K q5_K q6_K iq4_nl iq4_xs)");
    return false;
  }

  // A 2-D tensor whose rows are several matrices one after another (fused
  // q/k/v, gate/up): one view per part of part_rows[i] rows.
  std::vector<WeightMatrix> split_rows(const std::string& name, std::initializer_list<int64_t> part_rows,
                                       int64_t cols) {
    int64_t rows = 0;
    for (int64_t r : part_rows) rows += r;
    const WeightMatrix whole = matrix(name, rows, cols);
    if (whole.data == nullptr) return {};
    std::vector<WeightMatrix> out;
    const auto* at = static_cast<const uint8_t*>(whole.data);
    for (int64_t r : part_rows) {
      WeightMatrix part = whole;
      part.data = at;
      part.rows = r;
      out.push_back(part);
      at += static_cast<size_t>(r) * whole.row_bytes;
    }
    return out;
  }

  // A 3-D tensor [cols, rows, n_expert]: one rows x cols view per expert.
  std::vector<WeightMatrix> experts(const std::string& name, int64_t rows, int64_t cols) {
    const ModelConfig& c = m_.config_;
    const GgufTensorInfo* t = find(name);
    if (t == nullptr) return {};
    if (t->dims.size() != 3 || t->dims[0] != cols || t->dims[1] != rows || t->dims[2] != c.n_expert) {
      errors_.push_back("tensor '" + name + "' has the wrong shape (want [" + std::to_string(cols) + ", " +
                        std::to_string(rows) + ", " + std::to_string(c.n_expert) + "])");
      return {};
    }
    if (!computable(name, *t)) return {};
    const uint64_t expert_bytes = t->nbytes / static_cast<uint64_t>(c.n_expert);
    std::vector<WeightMatrix> out(c.n_expert);
    for (int e = 0; e < c.n_expert; ++e) {
      WeightMatrix& w = out[e];
      w.dtype = t->dtype;
      w.data = t->data.data() + e * expert_bytes;
      w.rows = rows;
      w.cols = cols;
      w.row_bytes = expert_bytes / static_cast<uint64_t>(rows);
    }
    m_.config_.parameter_count += rows * cols * c.n_expert;
    return out;
  }

  const float* vector(const std::string& name, int64_t n) {
    const GgufTensorInfo* t = find(name);
    if (t == nullptr) return nullptr;
    if (t->element_count() != n) {
      errors_.push_back("tensor '" + name + "' has " + std::to_string(t->element_count()) + " elements, want " +
                        std::to_string(n));
      return nullptr;
    }
    const DTypeInfo* info = dtype_info(t->dtype);
    if (info == nullptr || !info->computable) {
      errors_.push_back("tensor '" + name + "' has unsupported type " + dtype_name(t->dtype));
      return nullptr;
    }
    if (t->dtype == DType::kF32 && reinterpret_cast<uintptr_t>(t->data.data()) % alignof(float) == 0)
      return reinterpret_cast<const float*>(t->data.data());
    auto& copy = m_.converted_.emplace_back(n);
    dequantize_row_ref(t->dtype, t->data.data(), copy.data(), n);
    return copy.data();
  }

  Model& m_;
  const GgufFile& f_;
  std::vector<std::string> missing_;
  std::vector<std::string> errors_;
  std::unordered_set<std::string> bound_;  // every name asked for
};

Result<std::shared_ptr<const Model>> Model::load(const std::string& path, const ModelLoadOptions& options) {
  OMNIBUS_ASSIGN_OR_RETURN(auto file, GgufFile::open(path));
  auto model = from_gguf(std::move(file), options);
  if (!model.is_ok()) return model.status().with_context(path);
  return model;
}

Result<std::shared_ptr<const Model>> Model::from_gguf(std::unique_ptr<GgufFile> file, const ModelLoadOptions& options) {
  std::shared_ptr<Model> m(new Model());
  m->file_ = std::move(file);
  OMNIBUS_ASSIGN_OR_RETURN(m->config_, read_model_config(*m->file_));
  WeightBinder binder(*m);
  OMNIBUS_RETURN_IF_ERROR(binder.bind());
  if (options.preparer != nullptr) options.preparer->prepare(m->weights_, *m->file_, m->repacked_);
  return std::shared_ptr<const Model>(std::move(m));
}

uint64_t Model::repacked_bytes() const { return repacked_.size(); }

uint64_t Model::weight_bytes_per_token() const {
  uint64_t bytes = weights_.token_embd.row_bytes + weights_.output.row_bytes * weights_.output.rows;
  for (const auto& l : weights_.layers)
    l.for_each_matrix_a_token_reads(config_.n_expert_used, [&bytes](const WeightMatrix& w, int times) {
      bytes += w.row_bytes * static_cast<uint64_t>(w.rows) * static_cast<uint64_t>(times);
    });
  return bytes;
}

}  // namespace omnibus
