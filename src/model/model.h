// A loaded model: config plus weights bound to the memory-mapped GGUF file.
// Immutable after load; share as std::shared_ptr<const Model>. Weight data
// stay in the mapping except small norm/bias vectors stored in another float
// type, converted once at load, and whatever the backend's WeightPreparer
// lays out anew (the CPU backend: matrices in its kernels' interleaved
// layout, whose file pages it then releases so the resident size stays
// about the file's).
#pragma once

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "base/aligned_buffer.h"
#include "base/status.h"
#include "gguf/gguf_file.h"
#include "kernels/matmul.h"
#include "model/model_config.h"

namespace omnibus {

struct LayerWeights {
  const float* attn_norm = nullptr;
  WeightMatrix wq, wk, wv, wo;
  const float* bq = nullptr;  // biases: null unless the architecture has them
  const float* bk = nullptr;
  const float* bv = nullptr;
  const float* ffn_norm = nullptr;
  WeightMatrix w_gate, w_up, w_down;
  // Null unless the architecture has them (ArchitectureSpec::qk_norm,
  // post_norms): head_dim weights for q and k, n_embd for the outputs.
  const float* q_norm = nullptr;
  const float* k_norm = nullptr;
  const float* post_attn_norm = nullptr;
  const float* post_ffn_norm = nullptr;
  // Attention sinks, one logit per head (AttentionShape::sinks): null
  // unless the architecture has them (no supported one binds them yet;
  // gpt-oss will).
  const float* attn_sinks = nullptr;
  const float* bo = nullptr;  // attention output bias (ArchitectureSpec::attn_output_bias)
  // Mixture-of-experts biases (ArchitectureSpec::moe_biases): the router's
  // (n_expert) and each expert's gate, up (n_ff_expert each) and down
  // (n_embd) rows, expert e's at e x its width.
  const float* router_bias = nullptr;
  const float* expert_gate_bias = nullptr;
  const float* expert_up_bias = nullptr;
  const float* expert_down_bias = nullptr;

  // Mixture of experts (ModelConfig::is_moe; w_gate, w_up, w_down then
  // empty): the router (n_expert rows) and each expert's matrices, views
  // into the file's 3-D tensors (expert e's rows follow expert e - 1's).
  WeightMatrix router;
  std::vector<WeightMatrix> expert_gate, expert_up, expert_down;
  // The shared expert (ArchitectureSpec::moe_shared_expert) and its gate's
  // n_embd weights; empty / null otherwise.
  WeightMatrix shared_gate, shared_up, shared_down;
  const float* shared_expert_gate = nullptr;

  // The seven matrices of a dense layer, for code that treats them alike.
  std::array<WeightMatrix*, 7> matrices() { return {&wq, &wk, &wv, &wo, &w_gate, &w_up, &w_down}; }
  std::array<const WeightMatrix*, 7> matrices() const { return {&wq, &wk, &wv, &wo, &w_gate, &w_up, &w_down}; }
  // fn(matrix, times) for every matrix a token goes through: the dense
  // ones and a MoE layer's router and shared expert once, and one expert's
  // matrices n_expert_used times (the experts are alike in size). Empty
  // matrices have no rows. For per-token costs (bytes read, FLOPs).
  template <class Fn>
  void for_each_matrix_a_token_reads(int n_expert_used, Fn&& fn) const {
    for (const WeightMatrix* w : matrices()) fn(*w, 1);
    for (const WeightMatrix* w : {&router, &shared_gate, &shared_up, &shared_down}) fn(*w, 1);
    for (const auto* list : {&expert_gate, &expert_up, &expert_down})
      if (!list->empty()) fn(list->front(), n_expert_used);
  }
  // The router and every expert's matrices (empty for a dense layer).
  std::vector<WeightMatrix*> moe_matrices() {
    std::vector<WeightMatrix*> out;
    for (WeightMatrix* w : {&router, &shared_gate, &shared_up, &shared_down})
      if (w->data != nullptr) out.push_back(w);
    for (auto* list : {&expert_gate, &expert_up, &expert_down})
      for (WeightMatrix& w : *list) out.push_back(&w);
    return out;
  }
};

struct ModelWeights {
  WeightMatrix token_embd;  // rows = vocab, cols = n_embd; read a row per token (gather_row_blocks: either layout)
  const float* output_norm = nullptr;
  WeightMatrix output;      // token_embd again when the embedding is tied
  bool tied_output = false;
  std::vector<LayerWeights> layers;
};

// A backend's part of loading a model (ModelLoadOptions::preparer): after
// the weights are bound and before the model is shared, it may lay
// matrices out anew in memory the model then owns (the CPU backend repacks
// every matrix its kernel table has interleaved kernels for:
// backends/cpu/weight_repack.h). The results must not depend on it.
class WeightPreparer {
 public:
  virtual ~WeightPreparer() = default;
  // `owned` is empty on entry and lives as long as the model; `file` maps
  // the weights, whose pages it may release once copied.
  virtual void prepare(ModelWeights& weights, const GgufFile& file, AlignedBuffer<uint8_t>& owned) const = 0;
};

struct ModelLoadOptions {
  // Null: every matrix stays in the file's row layout, in the mapping.
  const WeightPreparer* preparer = nullptr;
};

class Model {
 public:
  static Result<std::shared_ptr<const Model>> load(const std::string& path, const ModelLoadOptions& options = {});
  // Binds an already-parsed file (tests build models in memory).
  static Result<std::shared_ptr<const Model>> from_gguf(std::unique_ptr<GgufFile> file,
                                                        const ModelLoadOptions& options = {});

  const ModelConfig& config() const { return config_; }
  const ModelWeights& weights() const { return weights_; }
  const GgufFile& gguf() const { return *file_; }
  // Bytes of weights read per decoded token (every matrix once, plus one
  // embedding row; of a MoE layer the router and expert_used_count
  // experts): the numerator of the decode roofline.
  uint64_t weight_bytes_per_token() const;
  // Bytes of weights a preparer laid out anew in owned memory at load.
  uint64_t repacked_bytes() const;

 private:
  Model() = default;
  friend class WeightBinder;
  std::unique_ptr<GgufFile> file_;
  ModelConfig config_;
  ModelWeights weights_;
  std::vector<std::vector<float>> converted_;  // owned f32 copies of non-f32 vectors
  AlignedBuffer<uint8_t> repacked_;            // the preparer's (ModelLoadOptions::preparer)
};

}  // namespace omnibus
