#include "model/model_cost.h"

#include "model/kv_cache.h"
#include "model/model.h"

namespace omnibus {

TokenCost token_cost(const Model& model, KvCacheType kv_type) {
  const ModelConfig& c = model.config();
  const ModelWeights& w = model.weights();
  TokenCost cost;
  cost.weight_bytes = static_cast<double>(model.weight_bytes_per_token());
  double params = static_cast<double>(w.output.rows * w.output.cols);
  for (const LayerWeights& l : w.layers) {
    for (const WeightMatrix* m : l.matrices()) params += static_cast<double>(m->rows * m->cols);
    // A token goes through the router and expert_used_count experts.
    for (const WeightMatrix* m : {&l.router, &l.shared_gate, &l.shared_up, &l.shared_down})
      params += static_cast<double>(m->rows * m->cols);
    for (const auto* list : {&l.expert_gate, &l.expert_up, &l.expert_down})
      if (!list->empty()) params += static_cast<double>(list->front().rows * list->front().cols) * c.n_expert_used;
  }
  cost.matmul_flops = 2 * params;
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
