// Helpers shared by forward.cpp (per-op steps) and forward_decode_step.cpp
// (a decode step as one pool job).
#pragma once

#include "backends/cpu/paged_kv_store.h"
#include "kernels/hadamard.h"
#include "kernels/ops.h"
#include "model/model_config.h"

namespace omnibus::forward_internal {

// Whether this cache stores K and V rotated (kernels/hadamard.h): the q4_0
// cache, as llama.cpp's quantized caches, where the head size allows.
// (The q8_0 cache does not: it predates llama.cpp's rotation and meets its
// golden bars without it.)
inline bool rotates_kv(const PagedKvStore& kv) {
  return kv.type() == KvCacheType::kQ4_0 && hadamard_key_block(static_cast<int>(kv.position_stride())) > 0;
}

// gate = act(gate) * up with the architecture's activation.
inline void gated_activation(const ModelConfig& c, float* gate, const float* up, int64_t n) {
  if (c.spec->ffn_activation == FfnActivation::kGeluTanh) return geglu(gate, up, n);
  swiglu(gate, up, n);
}

}  // namespace omnibus::forward_internal
