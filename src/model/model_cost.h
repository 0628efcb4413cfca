// What one token costs a model: the bytes a decode step reads and the FLOPs
// each token needs. The numerators of the two rooflines:
//   decode tokens/s  <= memory bandwidth / bytes read per step (weights once,
//                        plus each sequence's K/V history)
//   prefill tokens/s <= peak FLOP/s / FLOPs per token
#pragma once

#include <cstdint>

#include "kernels/kv_quant.h"

namespace omnibus {

class Model;

struct TokenCost {
  double weight_bytes = 0;          // every matrix once plus one embedding row: read once per step
  double kv_bytes_per_position = 0; // K and V (f16) of one cached position, all layers
  double matmul_flops = 0;          // per token: 2 x matmul parameters (layers and output head)
  double attention_flops_per_position = 0;  // per token per attended position: QK^T and PV

  // One token decoded alone at `context` cached positions.
  double decode_bytes(int64_t context) const {
    return weight_bytes + kv_bytes_per_position * static_cast<double>(context);
  }
  double flops(int64_t context) const {
    return matmul_flops + attention_flops_per_position * static_cast<double>(context);
  }
};

TokenCost token_cost(const Model& model, KvCacheType kv_type = KvCacheType::kF16);

}  // namespace omnibus
