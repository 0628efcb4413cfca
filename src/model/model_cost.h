// What one token costs a model: the bytes a decode step reads and the FLOPs
// each token needs. The numerators of the two rooflines:
//   decode tokens/s  <= memory bandwidth / bytes read per step (weights once,
//                        plus each sequence's K/V history)
//   prefill tokens/s <= peak FLOP/s / FLOPs per token
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/kv_quant.h"

namespace omnibus {

class Model;

struct TokenCost {
  double weight_bytes = 0;          // every matrix once plus one embedding row: read once per step
  double kv_bytes_per_position = 0; // K and V (f16) of one cached position, all layers
  double matmul_flops = 0;          // per token: 2 x matmul parameters (layers and output head)
  double int8_matmul_flops = 0;     // the part of it in quantized matrices (int8 dot-product kernels)
  double output_flops = 0;          // the part of it in the output head (a prompt computes it for its last token)
  bool output_quantized = false;
  double attention_flops_per_position = 0;  // per token per attended position: QK^T and PV
  // Sliding-window layers (Gemma 3) read at most `window` positions.
  int n_layer = 1;
  int window_layers = 0;
  int64_t window = 0;

  // The positions a token attends to at `context`, averaged over layers:
  // `context` unless some layers see only a window of it.
  double attended_positions(int64_t context) const {
    const double windowed = static_cast<double>(window_layers) * static_cast<double>(std::min(context, window));
    return (static_cast<double>(n_layer - window_layers) * static_cast<double>(context) + windowed) / n_layer;
  }
  // One token decoded alone at `context` cached positions.
  double decode_bytes(int64_t context) const {
    return weight_bytes + kv_bytes_per_position * attended_positions(context);
  }
  double flops(int64_t context) const {
    return matmul_flops + attention_flops_per_position * attended_positions(context);
  }
};

TokenCost token_cost(const Model& model, KvCacheType kv_type = KvCacheType::kF16);

}  // namespace omnibus
