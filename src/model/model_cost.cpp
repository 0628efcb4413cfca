#include "model/model_cost.h"

#include "model/kv_cache.h"
#include "model/model.h"

namespace omnibus {

TokenCost token_cost(const Model& model, KvCacheType kv_type) {
  const ModelConfig& c = model.config();
  const ModelWeights& w = model.weights();
  TokenCost cost;
  cost.weight_bytes = static_cast<double>(model.weight_bytes_per_token());
  // Quantized weights are multiplied by int8-quantized activations (the
  // int8 dot-product kernels); float ones (F32, F16, BF16) in float.
  const auto quantized = [](const WeightMatrix& m) {
    return m.dtype != DType::kF32 && m.dtype != DType::kF16 && m.dtype != DType::kBF16;
  };
  double params = 0, int8_params = 0;
  const auto add = [&](const WeightMatrix& m, int times) {
    const double p = static_cast<double>(m.rows * m.cols) * times;
    params += p;
    if (quantized(m)) int8_params += p;
  };
  add(w.output, 1);
  for (const LayerWeights& l : w.layers) l.for_each_matrix_a_token_reads(c.n_expert_used, add);
  cost.matmul_flops = 2 * params;
  cost.int8_matmul_flops = 2 * int8_params;
  cost.output_flops = 2 * static_cast<double>(w.output.rows * w.output.cols);
  cost.output_quantized = quantized(w.output);
  cost.kv_bytes_per_position = static_cast<double>(kv_bytes_per_token(c, kv_type));
  // Per query head and position: a head_dim dot for the score and a
  // head_dim axpy for the value, 2 FLOPs per element each.
  cost.attention_flops_per_position = 4.0 * c.n_layer * c.q_dim();
  cost.n_layer = c.n_layer;
  for (int l = 0; l < c.n_layer; ++l) cost.window_layers += c.layer_has_window(l);
  cost.window = c.sliding_window;
  return cost;
}

}  // namespace omnibus
